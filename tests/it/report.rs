//! `ragdbeval report FILES --out DIR/`: on result files made here — two engines, a
//! parameter sweep, a concurrency sweep, a rate sweep and the default mutation runbook — every
//! artefact is written, the CSV and JSON agree field by field with the result files, and the
//! page opens in a real headless browser (Debian's chromium, which scripts/test.sh installs)
//! with every plot present and no request outside the file.

use std::path::{Path, PathBuf};
use std::process::Command;

use ragdbeval::export::registry::{Row, rows};
use ragdbeval::results::RunResult;

use crate::common::{ragdbeval, stderr, stdout, succeeds};

const DATA: &str = "gen:clustered:n=3000,dim=16,queries=200,seed=31";

fn bench(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec![
        "bench",
        "-q",
        "--warmup",
        "0",
        "--dataset",
        DATA,
        "--name",
        name,
    ];
    args.extend_from_slice(extra);
    let out = ragdbeval(dir, &args);
    assert!(out.status.success(), "{name}: {}", stderr(&out));
    dir.join(format!("results/{name}.json"))
}

fn csv_rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header = reader.headers().unwrap().iter().map(String::from).collect();
    let rows = reader
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

#[test]
fn the_report_has_every_artefact_and_agrees_with_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let files = [
        bench(
            d,
            "edge-sweep",
            &argv!["--db qdrant-edge --runbook build-search --search-param hnsw_ef=4,16,64"],
        ),
        bench(d, "exact", &["--db", "exact", "--runbook", "build-search"]),
        bench(
            d,
            "closed",
            &argv!["--db exact --runbook build-search --concurrency 1,2 --duration 1s"],
        ),
        bench(
            d,
            "open",
            &argv![
                "--db qdrant-edge --runbook build-search --rate 200,400 --duration 1s --slo 5ms"
            ],
        ),
        bench(
            d,
            "mutations",
            &["--db", "qdrant-edge", "--runbook", "default"],
        ),
    ];
    let mut args: Vec<String> = vec!["report".into()];
    args.extend(files.iter().map(|f| f.to_string_lossy().into_owned()));
    args.extend(["--out".into(), "rep/".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ragdbeval(d, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("12 plots"), "{}", stdout(&out));
    let rep = d.join("rep");
    for plot in [
        "recall-qps",
        "recall-p99",
        "recall-build",
        "recall-total-size",
        "recall-memory",
        "concurrency-qps",
        "concurrency-p99",
        "rate-p99",
        "timeline",
        "timeline-p99",
        "timeline-stale",
        "latency-cdf",
    ] {
        let path = rep.join(format!("plots/clustered-3000x16-euclidean-s31-{plot}.svg"));
        let svg = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{plot}: {e}"));
        assert!(svg.starts_with("<svg") && svg.contains("</svg>"), "{plot}");
        // The same plot as PNG: signature, IHDR size 760 × 460, more than a blank image.
        let png =
            std::fs::read(path.with_extension("png")).unwrap_or_else(|e| panic!("{plot}.png: {e}"));
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{plot}.png");
        assert_eq!(
            u32::from_be_bytes([png[16], png[17], png[18], png[19]]),
            760
        );
        assert_eq!(
            u32::from_be_bytes([png[20], png[21], png[22], png[23]]),
            460
        );
        assert!(png.len() > 5_000, "{plot}.png has {} bytes", png.len());
    }
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    assert!(md.contains("QPS at recall ≥ target"), "{md}");

    // results.csv: one row per (run, step, setting), each figure equal to the result's.
    let runs: Vec<RunResult> = files.iter().map(|f| RunResult::load(f).unwrap()).collect();
    let (header, csv) = csv_rows(&rep.join("results.csv"));
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("column {name}"))
    };
    assert_eq!(
        &header[..5],
        ["dataset", "mode", "algorithm", "parameters", "count"]
    );
    let expected: usize = runs.iter().map(|r| rows(&r.configs).len()).sum();
    assert_eq!(csv.len(), expected);
    let mut line = 0;
    for (file, run) in files.iter().zip(&runs) {
        for row in rows(&run.configs) {
            let cells = &csv[line];
            line += 1;
            let num = |name: &str| cells[col(name)].parse::<f64>().unwrap();
            let stem = file.file_stem().unwrap().to_string_lossy();
            assert_eq!(cells[col("run")], stem);
            assert_eq!(cells[col("algorithm")], run.engine.name);
            assert_eq!(cells[col("dataset")], run.dataset.name);
            assert_eq!(num("count") as usize, row.search.quality.k);
            assert_eq!(num("k-nn"), row.search.quality.recall_distance);
            let q = &row.search.quality;
            assert_eq!(Some(num("epsilon")), q.recall_epsilon);
            assert_eq!(Some(num("largeepsilon")), q.recall_large_epsilon);
            match q.relative_distance_error {
                Some(rel) if rel.is_infinite() => assert_eq!(cells[col("rel")], "inf"),
                rel => assert_eq!(Some(num("rel")), rel),
            }
            assert_eq!(num("recall"), row.search.quality.recall);
            assert_eq!(num("ndcg"), row.search.quality.ndcg);
            assert_eq!(num("qps"), row.search.qps);
            assert_eq!(num("p50"), row.search.latency.p50_ms);
            assert_eq!(num("p99"), row.search.latency.p99_ms);
            assert_eq!(num("p999"), row.search.latency.p999_ms);
            assert_eq!(num("runbook_step") as usize, row.search.runbook_step);
            match row.build {
                Some(b) => assert_eq!(num("build"), b.total_s),
                None => assert!(cells[col("build")].is_empty()),
            }
        }
    }

    // The JSON format is the result documents themselves.
    let json = ragdbeval(
        d,
        &["report", &files[4].to_string_lossy(), "--format", "json"],
    );
    assert!(json.status.success());
    let rendered: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&files[4]).unwrap()).unwrap();
    let rendered = rendered.as_array().map_or(&rendered, |a| &a[0]);
    assert_eq!(rendered, &stored);

    // The page: self-contained, then opened in a real browser.
    let page = std::fs::read_to_string(rep.join("index.html")).unwrap();
    assert!(!page.contains("<script"), "no script");
    for attr in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!page.contains(attr), "the page requests {attr}");
    }
    assert_eq!(page.matches("<svg").count(), 12);
    assert!(page.contains("data-plots=\"12\""));
    let dom = browser_check(&rep.join("index.html"), 12);
    check_ranking(&dom, &rep.join("ranking.csv"));
    // The same ranking on the terminal.
    let mut args: Vec<String> = vec!["report".into(), "--format".into(), "ranking".into()];
    args.extend(files.iter().map(|f| f.to_string_lossy().into_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let printed = stdout(&ragdbeval(d, &args));
    assert!(
        printed.contains("| recall ≥ | rank | engine |"),
        "{printed}"
    );
    assert_eq!(printed.matches("\n| 0.9").count(), 6, "{printed}");
    // Recall axes, as the browser has the page: never below 0 nor above 1.
    for (plot, axis) in [
        ("recall-qps", "x"),
        ("recall-p99", "x"),
        ("recall-total-size", "x"),
        ("recall-memory", "x"),
        ("timeline", "y"),
    ] {
        let (lo, hi) = axis_range(&dom, plot, axis);
        assert!(
            0.0 <= lo && lo < hi && hi <= 1.0,
            "{plot}: {axis} axis {lo}..{hi}"
        );
    }
    // QPS is on a log axis; every setting is a point: exact's two runs, and qdrant-edge's
    // sweep of three, open-loop run and mutation run, plus one legend marker each.
    let qps_svg =
        std::fs::read_to_string(rep.join("plots/clustered-3000x16-euclidean-s31-recall-qps.svg"))
            .unwrap();
    assert!(qps_svg.contains("queries per second (log scale)"));
    assert_eq!(markers(&qps_svg, "#1F77B4"), 2 + 1);
    assert_eq!(markers(&qps_svg, "#D62728"), 5 + 1);
    assert!(
        svg_texts(&qps_svg)
            .iter()
            .any(|t| t.starts_with("hnsw_ef=")),
        "no point labelled with its hnsw_ef"
    );

    // A report where every point has recall 1.0 (the exact engine): the recall axis ends at
    // 1.0, not at 1.5 as a symmetric padding would draw it.
    let exact_only = ragdbeval(
        d,
        &[
            "report",
            &files[1].to_string_lossy(),
            &files[2].to_string_lossy(),
            "--out",
            "exact-rep/",
        ],
    );
    assert!(exact_only.status.success(), "{}", stderr(&exact_only));
    let exact_rep = d.join("exact-rep");
    let plots = std::fs::read_to_string(exact_rep.join("index.html"))
        .unwrap()
        .matches("<svg")
        .count();
    let dom = browser_check(&exact_rep.join("index.html"), plots);
    let (lo, hi) = axis_range(&dom, "recall-qps", "x");
    assert_eq!(hi, 1.0, "the recall axis ends at 1.0");
    assert!((0.0..1.0).contains(&lo), "the recall axis starts at {lo}");
    let svg = std::fs::read_to_string(
        exact_rep.join("plots/clustered-3000x16-euclidean-s31-recall-qps.svg"),
    )
    .unwrap();
    let ticks = svg_numbers(&svg);
    assert!(ticks.contains(&1.0), "a tick at recall 1: {ticks:?}");
    assert!(
        !ticks.iter().any(|t| *t > 1.0 && *t < 2.0),
        "a recall tick past 1: {ticks:?}"
    );
}

/// The value range of a plot's axis (`x` or `y`), as the page states it on the plot's figure
/// (`data-x-range="0.9 1"`).
fn axis_range(page: &str, plot: &str, axis: &str) -> (f64, f64) {
    let figure = page
        .split("<figure ")
        .find(|f| f.starts_with(&format!("data-plot=\"{plot}\"")))
        .unwrap_or_else(|| panic!("no figure of plot {plot}"));
    let key = format!("data-{axis}-range=\"");
    let start = figure
        .find(&key)
        .unwrap_or_else(|| panic!("{plot}: no {key}"))
        + key.len();
    let text = &figure[start..start + figure[start..].find('"').unwrap()];
    let values: Vec<f64> = text
        .split(' ')
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{plot}: range {text}")))
        .collect();
    assert_eq!(values.len(), 2, "{plot}: range {text}");
    (values[0], values[1])
}

/// The circles (point markers, filled or hollow, and legend marks) of one colour in an SVG.
fn markers(svg: &str, colour: &str) -> usize {
    let quoted = format!("\"{colour}\"");
    svg.split("<circle")
        .skip(1)
        .filter(|c| c[..c.find("/>").unwrap_or(c.len())].contains(&quoted))
        .count()
}

/// The text of every text element of an SVG, trimmed.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim().to_string()))
        .collect()
}

/// Every text element of an SVG that is a number (the axes' tick labels, among others).
fn svg_numbers(svg: &str) -> Vec<f64> {
    svg_texts(svg)
        .iter()
        .filter_map(|t| t.parse().ok())
        .collect()
}

/// Opens the page in headless Chromium from disk: its DOM must hold the plots the page
/// claims, the console must stay quiet, and a screenshot is written. Returns the DOM.
fn browser_check(page: &Path, plots: usize) -> String {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("a headless browser: scripts/test.sh installs Debian's chromium");
    let shots = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let common = argv![
        "--headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking --enable-logging=stderr --v=0"
    ];
    let dom = Command::new(chromium)
        .args(&common)
        .args(["--dump-dom", &url])
        .output()
        .unwrap();
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let html = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(
        html.matches("<svg").count(),
        plots,
        "plots in the rendered DOM"
    );
    let log = String::from_utf8_lossy(&dom.stderr);
    for line in log.lines() {
        assert!(
            !line.contains("CONSOLE") && !line.contains("Uncaught") && !line.contains("net::ERR"),
            "browser console: {line}"
        );
    }
    let shot = shots.path().join("report.png");
    let out = Command::new(chromium)
        .args(&common)
        .args([
            "--window-size=1400,2000",
            &format!("--screenshot={}", shot.display()),
            &url,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 20_000, "screenshot of {size} bytes");
    html.into_owned()
}

/// `--repeat N`: every search measurement is timed N times; the result holds the trials and,
/// per figure, the median (between the extremes), its bootstrap interval (around the
/// median) and the coefficient of variation; the median QPS reaches the table and the CSV.
#[test]
fn repeated_trials_are_summarised() {
    let dir = tempfile::tempdir().unwrap();
    let path = bench(
        dir.path(),
        "repeat",
        &argv!["--db exact --runbook build-search --repeat 4"],
    );
    let run = RunResult::load(&path).unwrap();
    let step = run.configs[0].searches().next().unwrap();
    let repeats = step.repeats.as_ref().expect("trials recorded");
    assert_eq!(repeats.trials.len(), 4);
    assert_eq!(
        repeats.trials[0].qps, step.qps,
        "the first trial is the step's own"
    );
    assert_eq!(repeats.summary.len(), 6);
    for f in &repeats.summary {
        let values: Vec<f64> = repeats
            .trials
            .iter()
            .map(|t| t.figures().iter().find(|(n, _)| *n == f.figure).unwrap().1)
            .collect();
        let (min, max) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(*v), b.max(*v))
            });
        assert!(f.median >= min && f.median <= max, "{f:?}");
        let (lo, hi) = f.ci95.expect("an interval");
        assert!(
            lo >= min && hi <= max && lo <= f.median && f.median <= hi,
            "{f:?}"
        );
        assert!(f.cv.expect("a cv") >= 0.0);
    }
    let table = ragdbeval(dir.path(), &["report", &path.to_string_lossy()]);
    assert!(stdout(&table).contains("QPS med"), "{}", stdout(&table));
    succeeds(
        dir.path(),
        &["report", &path.to_string_lossy(), "--out", "rep/"],
    );
    let html = std::fs::read_to_string(dir.path().join("rep/index.html")).unwrap();
    assert!(
        html.contains("QPS median [95% CI], CV"),
        "the comparison table shows the median"
    );
    let csv = ragdbeval(
        dir.path(),
        &["report", &path.to_string_lossy(), "--format", "csv"],
    );
    let text = stdout(&csv);
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("qps_median,qps_median_ci_low")
    );
    // One trial: no summary, no column.
    let single = bench(
        dir.path(),
        "single",
        &["--db", "exact", "--runbook", "build-search"],
    );
    let run = RunResult::load(&single).unwrap();
    assert!(run.configs[0].searches().all(|s| s.repeats.is_none()));
    let table = ragdbeval(dir.path(), &["report", &single.to_string_lossy()]);
    assert!(!stdout(&table).contains("QPS med"));
}

/// `--repeat 3 --repeat-build`: the whole configuration runs three times; the recorded run
/// keeps its steps (one build, one record per search as without trials), each search carries
/// three trials and each build three build times; only the recorded run reaches the sidecar.
#[test]
fn rebuilt_trials_are_summarised() {
    let dir = tempfile::tempdir().unwrap();
    let path = bench(
        dir.path(),
        "rebuild",
        &argv![
            "--db qdrant-edge --runbook default --repeat 3 --repeat-build --search-param hnsw_ef=16,64"
        ],
    );
    let run = RunResult::load(&path).unwrap();
    assert_eq!(run.configs.len(), 1);
    let config = &run.configs[0];
    assert_eq!(
        config.steps.len(),
        1 + 3 + 4 * 2,
        "build, three writes, 4 × 2 searches"
    );
    for s in config.searches() {
        let r = s.repeats.as_ref().expect("trials");
        assert_eq!(r.trials.len(), 3);
        assert_eq!(r.trials[0].qps, s.qps);
    }
    let build = config
        .steps
        .iter()
        .find_map(|s| match s {
            ragdbeval::results::Step::Build(b) => Some(b),
            _ => None,
        })
        .unwrap();
    assert_eq!(build.rebuild_s.len(), 3);
    assert_eq!(build.rebuild_s[0], build.total_s);
    assert!(build.rebuild_s.iter().all(|s| *s > 0.0));
    let sidecar =
        std::fs::read_to_string(dir.path().join("results/rebuild.queries.jsonl")).unwrap();
    assert_eq!(
        sidecar.lines().count(),
        8 * 200,
        "one line per query per recorded search"
    );

    let refused = ragdbeval(
        dir.path(),
        &argv!["bench --db exact --dataset", DATA, "--repeat-build"],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("--repeat N with N ≥ 2"),
        "{}",
        stderr(&refused)
    );
}

/// The result of a real pgvector run on [`DATA`], kept for machines without a pgvector
/// server. Made with `scripts/servers/pgvector.sh start`, then `ragdbeval bench --db pgvector
/// --url URL --recreate --runbook build-search --search-param ef_search=16,64 --search-param
/// seqscan=false --warmup 0 --dataset DATA --name pgvector` (its sidecar is not kept).
fn recorded_pgvector_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/report/pgvector.json")
}

/// A qdrant-edge sweep and the exact engine, run here.
fn in_process_runs(d: &Path) -> Vec<PathBuf> {
    vec![
        bench(
            d,
            "edge",
            &argv!["--db qdrant-edge --runbook build-search --search-param hnsw_ef=16,64"],
        ),
        bench(d, "exact", &["--db", "exact", "--runbook", "build-search"]),
    ]
}

/// Qdrant's index figure is its HNSW graph alone, pgvector's holds the vectors too: the
/// report's size columns are the totals, which compare, not the index figures, which do not.
#[test]
fn the_size_columns_are_totals_with_a_recorded_pgvector_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut files = in_process_runs(d);
    let pgvector = d.join("results/pgvector.json");
    std::fs::copy(recorded_pgvector_run(), &pgvector).unwrap();
    files.push(pgvector);
    check_total_sizes(d, &files);
}

/// The same with pgvector run here, against the server of `PGVECTOR_URL`.
#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn the_size_columns_are_totals_with_pgvector_run_here() {
    let url = crate::common::server_url("PGVECTOR_URL", "scripts/servers/pgvector.sh start");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut files = in_process_runs(d);
    files.push(bench(
        d,
        "pgvector",
        &argv!["--db pgvector --url", &url, "--recreate --runbook build-search --search-param ef_search=16,64 --search-param seqscan=false"],
    ));
    check_total_sizes(d, &files);
}

/// Reports `files` (qdrant-edge, exact and pgvector on [`DATA`]) and checks the size figures
/// of the table, the notes above it, the CSV and the plots against the result files.
fn check_total_sizes(d: &Path, files: &[PathBuf]) {
    let mut args: Vec<String> = vec!["report".into()];
    args.extend(files.iter().map(|f| f.to_string_lossy().into_owned()));
    args.extend(["--out".into(), "sizes/".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ragdbeval(d, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let rep = d.join("sizes");
    let runs: Vec<RunResult> = files.iter().map(|f| RunResult::load(f).unwrap()).collect();
    let engines: Vec<&str> = runs.iter().map(|r| r.engine.name.as_str()).collect();
    assert_eq!(engines, ["qdrant-edge", "exact", "pgvector"]);
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    assert_eq!(md.matches("\n## ").count(), 1, "one dataset: {md}");

    // The table's size heading is the totals; its cells are each row's total.
    let table: Vec<Vec<String>> = md
        .lines()
        .skip_while(|l| !l.starts_with("| engine | setting"))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("|---"))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect();
    let header = &table[0];
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("column {name} in {header:?}"))
    };
    assert!(
        !header.iter().any(|h| h.starts_with("index")),
        "no engine-specific index figure under the size heading: {header:?}"
    );
    let rows: Vec<(&RunResult, Row<'_>)> = runs
        .iter()
        .flat_map(|r| rows(&r.configs).into_iter().map(move |row| (r, row)))
        .collect();
    assert_eq!(table.len() - 1, rows.len());
    let mb = 1024.0 * 1024.0;
    for (cells, (run, row)) in table[1..].iter().zip(&rows) {
        let engine = run.engine.name.as_str();
        assert_eq!(cells[0], engine);
        let footprint = row.footprint();
        let total = footprint.total.as_ref().expect("a measured total").bytes as f64;
        let per_vector = total / row.search.live_points as f64;
        assert_eq!(
            cells[col("total MB")],
            format!("{:.1}", total / mb),
            "{engine}"
        );
        assert_eq!(
            cells[col("total B/vec")],
            format!("{per_vector:.1}"),
            "{engine}"
        );
        // At least the raw vectors (16 × 4 B), and for qdrant-edge far from its graph alone.
        assert!(per_vector >= 64.0, "{engine}: {per_vector} B per vector");
        match (engine, &footprint.index) {
            ("qdrant-edge", Some(index)) => {
                let graph = index.bytes as f64 / row.search.live_points as f64;
                assert!(
                    per_vector > graph + 64.0,
                    "qdrant-edge: total {per_vector} B/vec vs graph {graph}"
                );
            }
            ("exact", None) => {}
            ("pgvector", Some(index)) => assert!(total >= index.bytes as f64),
            (e, i) => panic!("{e}: index figure {i:?}"),
        }
        // Every run carries few_queries (200 queries): said once above, not on the row.
        assert!(!cells[col("warnings")].contains("few_queries"), "{cells:?}");
    }
    assert!(runs.iter().all(|r| {
        r.warnings
            .iter()
            .any(|w| matches!(w, ragdbeval::results::warnings::Warning::FewQueries { .. }))
    }));
    assert_eq!(
        md.matches("Every run carries few_queries").count(),
        1,
        "{md}"
    );
    for note in [
        "Raw vectors: 3000 × 16 × 4 B (float32) = 0.2 MB, 64 B per vector",
        "exact: no index figure",
        "pgvector: graph + vectors",
        "qdrant-edge: graph only",
    ] {
        assert!(md.contains(note), "report.md: {note}");
    }
    let page = std::fs::read_to_string(rep.join("index.html")).unwrap();
    assert!(page.contains("<th>total MB</th><th>total B/vec</th>"));
    assert!(page.contains("Every run carries few_queries"));

    // results.csv: what each index figure holds, the floor, the total as `indexsize`, and
    // the memory after the build.
    let (header, csv) = csv_rows(&rep.join("results.csv"));
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    for (cells, (run, row)) in csv.iter().zip(&rows) {
        let holds = match run.engine.name.as_str() {
            "qdrant-edge" => "graph only",
            "pgvector" => "graph + vectors",
            _ => "",
        };
        assert_eq!(cells[at("index_holds")], holds);
        assert_eq!(cells[at("raw_bytes_per_vector")], "64");
        let total_kb = row.footprint().total.unwrap().bytes as f64 / 1024.0;
        let indexsize: f64 = cells[at("indexsize")].parse().unwrap();
        assert!((indexsize - total_kb).abs() < 1e-6 * total_kb);
        if run.engine.in_process {
            let rss = row.search.resources.client.peak_rss_bytes as f64 / mb;
            let memory: f64 = cells[at("memory_after_build_mb")].parse().unwrap();
            assert!((memory - rss).abs() < 1e-9, "{memory} vs {rss}");
            assert!(cells[at("memory_after_build_of")].contains("ragdbeval process"));
        }
    }

    // The size plot: totals per vector, over the raw vectors' floor; memory beside it.
    let totals: Vec<f64> = rows
        .iter()
        .filter(|(_, row)| row.build.is_some())
        .map(|(_, row)| row.footprint().total.unwrap().bytes as f64 / row.search.live_points as f64)
        .collect();
    let (lo, hi) = axis_range(&page, "recall-total-size", "y");
    assert!(
        totals.iter().all(|t| lo < *t && *t < hi) && lo < 64.0,
        "{lo}..{hi} vs {totals:?}"
    );
    let svg = std::fs::read_to_string(
        rep.join("plots/clustered-3000x16-euclidean-s31-recall-total-size.svg"),
    )
    .unwrap();
    assert!(svg.contains("raw vectors: 64 B"));
    assert!(svg.contains("total bytes per live vector"));
    // Every setting is a point, dominated ones too (pgvector's two settings reach the same
    // recall: its frontier may be one point), labelled with the parameter that varies.
    let qps =
        std::fs::read_to_string(rep.join("plots/clustered-3000x16-euclidean-s31-recall-qps.svg"))
            .unwrap();
    // Engines in colour order: exact, pgvector, qdrant-edge; the legend adds one marker each.
    for (colour, settings) in [("#1F77B4", 1), ("#D62728", 2), ("#2CA02C", 2)] {
        assert_eq!(markers(&qps, colour), settings + 1, "{colour}");
    }
    let texts = svg_texts(&qps);
    for prefix in ["ef_search=", "hnsw_ef="] {
        assert!(
            texts.iter().any(|t| t.starts_with(prefix)),
            "no point labelled {prefix}…"
        );
    }
    assert!(
        rep.join("plots/clustered-3000x16-euclidean-s31-recall-memory.svg")
            .is_file()
    );
}

#[test]
fn runs_of_different_collection_sizes_after_the_build_are_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The default runbook loads part of the base before its build; build-search loads all.
    let partial = bench(d, "partial", &["--db", "exact"]);
    let whole = bench(d, "whole", &["--db", "exact", "--runbook", "build-search"]);
    let also_whole = bench(
        d,
        "also-whole",
        &["--db", "exact", "--runbook", "build-search"],
    );
    let report = |files: &[&PathBuf], out: &str| -> String {
        let mut args = vec!["report"];
        args.extend(files.iter().map(|f| f.to_str().unwrap()));
        args.extend(["--out", out]);
        succeeds(d, &args);
        std::fs::read_to_string(d.join(out).join("report.md")).unwrap()
    };
    let mixed = report(&[&partial, &whole], "mixed");
    assert!(mixed.contains("collections of different sizes"), "{mixed}");
    assert!(
        mixed.contains("partial 2700") && mixed.contains("whole 3000"),
        "{mixed}"
    );
    let same = report(&[&whole, &also_whole], "same");
    assert!(!same.contains("collections of different sizes"), "{same}");
}

/// The ranking table as the browser rendered it: three levels of two engines each, ranked by
/// QPS within a level, every row the same as `ranking.csv`'s.
fn check_ranking(dom: &str, csv: &Path) {
    let rows = dom_table(dom, "ranking-clustered-3000x16-euclidean-s31");
    assert_eq!(rows.len(), 6, "{rows:?}");
    let (header, lines) = csv_rows(csv);
    assert_eq!(header[..4], ["dataset", "recall_level", "rank", "engine"]);
    assert_eq!(lines.len(), 6);
    for (level, pair) in ["0.90", "0.95", "0.99"].iter().zip(rows.chunks(2)) {
        let engines: Vec<&str> = pair.iter().map(|r| r[2].as_str()).collect();
        assert!(
            engines.contains(&"exact") && engines.contains(&"qdrant-edge"),
            "{pair:?}"
        );
        for r in pair {
            assert_eq!(&r[0], level, "{r:?}");
        }
        // The exact engine reaches every level with recall 1.
        let exact = pair.iter().find(|r| r[2] == "exact").unwrap();
        assert_eq!(exact[4], "1.0000", "{exact:?}");
        // Ranked by QPS within the level.
        if pair[1][1] != "-" {
            let qps = |r: &Vec<String>| r[3].parse::<f64>().unwrap();
            assert!(qps(&pair[0]) >= qps(&pair[1]), "{pair:?}");
            assert_eq!((pair[0][1].as_str(), pair[1][1].as_str()), ("1", "2"));
        }
    }
    for (page, line) in rows.iter().zip(&lines) {
        assert_eq!(page[2], line[3], "engine order");
        if line[4] == "true" {
            let qps: f64 = line[5].parse().unwrap();
            assert_eq!(page[3], format!("{qps:.0}"));
        }
    }
}

/// The body rows of the table in the element with `id`, as the browser rendered them.
fn dom_table(dom: &str, id: &str) -> Vec<Vec<String>> {
    let start = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the page"));
    let table = &dom[start..start + dom[start..].find("</table>").unwrap()];
    table
        .split("<tr>")
        .skip(2)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|c| {
                    let text = &c[c.find('>').unwrap() + 1..];
                    text[..text.find("</td>").unwrap()].to_string()
                })
                .collect()
        })
        .collect()
}

/// Two runs of the same qdrant-edge settings and one exact run, reported from their
/// directory with `--history` and prices: the page headless Chromium renders holds the
/// history plots, the runs in start order with their engine versions, and the ranking; every
/// cost figure equals the one recomputed here from the result files.
#[test]
fn history_and_cost_of_repeated_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sweep = argv!["--db qdrant-edge --runbook build-search --search-param hnsw_ef=8,64"];
    let names = ["first", "second", "exact"];
    bench(d, names[0], &sweep);
    bench(d, names[1], &sweep);
    bench(d, names[2], &argv!["--db exact --runbook build-search"]);
    std::fs::write(d.join("results/notes.json"), "{}").unwrap();
    let out = ragdbeval(
        d,
        &argv![
            "report results/ --history --price-per-hour 0.5 --ram-price 3 --storage-price 0.1 --out rep/"
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("passed over results/notes.json"),
        "{}",
        stderr(&out)
    );
    let rep = d.join("rep");
    let html = std::fs::read_to_string(rep.join("index.html")).unwrap();
    let claimed: usize = html
        .split("data-plots=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    let dom = browser_check(&rep.join("index.html"), claimed);
    for plot in [
        "history-recall",
        "history-qps",
        "history-p50",
        "history-p99",
        "history-build",
        "history-total-size",
    ] {
        assert!(dom.contains(&format!("data-plot=\"{plot}\"")), "{plot}");
        assert!(
            rep.join(format!("plots/clustered-3000x16-euclidean-s31-{plot}.png"))
                .exists()
        );
    }
    // The runs table: in the order they were started, each with its engine version.
    let runs = dom_table(&dom, "history-clustered-3000x16-euclidean-s31");
    assert_eq!(runs.len(), 3, "{runs:?}");
    for (i, (row, name)) in runs.iter().zip(names).enumerate() {
        let result = RunResult::load(&d.join(format!("results/{name}.json"))).unwrap();
        assert_eq!(row[0], (i + 1).to_string());
        assert_eq!(row[1], name);
        assert_eq!(row[2], result.manifest.started_at);
        assert_eq!(row[4], result.engine.version);
    }
    // The qdrant-edge settings are drawn as two lines of two runs each.
    let qps_svg =
        std::fs::read_to_string(rep.join("plots/clustered-3000x16-euclidean-s31-history-qps.svg"))
            .unwrap();
    assert!(svg_texts(&qps_svg).iter().any(|t| t.contains("hnsw_ef=64")));
    check_ranking(&dom, &rep.join("ranking.csv"));
    check_costs(d, &rep, &dom);
}

/// Each `cost.csv` row recomputed from its result file: USD per million queries from the
/// step's QPS, memory from the search's peak client memory (in-process engines), storage from
/// the build's total footprint; and the page's cost ranking shows those figures, cheapest
/// first within each recall level.
fn check_costs(d: &Path, rep: &Path, dom: &str) {
    let (header, lines) = csv_rows(&rep.join("cost.csv"));
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1e-300);
    assert_eq!(lines.len(), 5, "two settings in two runs, one exact");
    let gib = (1u64 << 30) as f64;
    for line in &lines {
        let run: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(d.join(format!("results/{}.json", line[col("run")]))).unwrap(),
        )
        .unwrap();
        let qps: f64 = line[col("qps")].parse().unwrap();
        let steps = run["configs"][0]["steps"].as_array().unwrap();
        let search = steps
            .iter()
            .find(|s| s["phase"] == "search" && s["qps"].as_f64() == Some(qps))
            .expect("the row's search step");
        let build = steps.iter().find(|s| s["phase"] == "build").unwrap();
        let memory = search["resources"]["client"]["peak_rss_bytes"]
            .as_f64()
            .unwrap();
        let total = build["footprint"]["total"]["bytes"].as_f64().unwrap();
        let figure = |name: &str| line[col(name)].parse::<f64>().unwrap();
        assert!(
            close(
                figure("usd_per_million_queries"),
                0.5 / (qps * 3600.0) * 1e6
            ),
            "{line:?}"
        );
        assert!(
            close(figure("memory_usd_per_month"), memory / gib * 3.0),
            "{line:?}"
        );
        assert!(
            close(figure("storage_usd_per_month"), total / gib * 0.1),
            "{line:?}"
        );
    }
    let ranked = dom_table(dom, "cost-clustered-3000x16-euclidean-s31");
    assert_eq!(ranked.len(), 6, "{ranked:?}");
    for level in ranked.chunks(2) {
        let cost = |r: &Vec<String>| r[3].parse::<f64>().unwrap();
        assert!(cost(&level[0]) <= cost(&level[1]), "{level:?}");
        for r in level {
            let level: f64 = r[0].parse().unwrap();
            let cheapest = lines
                .iter()
                .filter(|l| l[col("engine")] == r[2] && l[col("setting")] == r[6])
                .filter(|l| l[col("recall")].parse::<f64>().unwrap() >= level)
                .map(|l| l[col("usd_per_million_queries")].parse::<f64>().unwrap())
                .fold(f64::INFINITY, f64::min);
            let shown = cost(r);
            assert!(
                (shown - cheapest).abs() <= 5e-4 * cheapest,
                "{r:?}: {cheapest}"
            );
        }
    }
}
