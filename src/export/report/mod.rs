//! `ragdbeval report FILES… --out DIR/`: the publishable report of any set of result files.
//!
//! Writes, per dataset (grouped by dataset SHA-256), notes said once (warnings every run
//! carries, what the sizes are and the raw vectors' size as their floor, what each engine's
//! own index figure holds), a comparison table of every engine and setting (sizes as totals:
//! see [`TABLE_METRICS`]), the throughput each engine reaches at recall ≥ 0.90 / 0.95 / 0.99
//! (interpolated on its Pareto frontier, "not reached" otherwise), and the plots
//! (`plots/*.svg` and the same as `plots/*.png`); then `index.html` (one self-contained page:
//! inline SVG, no script, no network request), `results.csv` (see
//! [`crate::export::results_csv`]) and `report.md`.

mod axis;
mod chart;
pub mod cost;
mod fusion_plots;
pub mod history;
mod page;
pub mod plots;
pub mod ranking;
mod series;
mod table;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::ExportError;
use crate::export::registry::{MetricDef, Row, find, format_value, rows};
use crate::export::sizes::{self, MemoryAfterBuild};
use crate::metrics::pareto::{CurvePoint, RECALL_TARGETS, frontier, qps_at_recall};
use crate::params::{ParamMap, ParamMapExt};
use crate::results::warnings::Warning;
use crate::results::{RunResult, SearchStep};
use crate::types::ElementType;
pub use table::{at_recall_cell, table_header, table_rows};

/// The comparison table's figures, by registry key. Sizes are the totals (everything the
/// collection costs), the one size that compares across engines: what an engine calls its
/// index holds the vectors for some and not for others (see [`IndexHolds`]), so the index
/// figure stays in the CSV and JSON, labelled there.
///
/// [`IndexHolds`]: crate::engine::IndexHolds
pub const TABLE_METRICS: &[&str] = &[
    "recall",
    "qps",
    "latency_p50_ms",
    "latency_p99_ms",
    "build_s",
    "total_mb",
    "total_bytes_per_vector",
    "client_peak_rss_mb",
    "client_cpu_percent",
    "engine_peak_rss_mb",
    "engine_cpu_percent",
];

/// The retrieval-task columns the table adds when some run of the group has relevance
/// judgments: the setting's figures beside those of the exact top-K.
pub const TASK_METRICS: &[&str] = &[
    "task_ndcg_at_10",
    "task_ndcg_at_10_exact",
    "task_recall_at_k",
    "task_recall_at_k_exact",
];

/// What a report holds beyond what every report has.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--history`: each figure across the runs of one engine, dataset and setting.
    pub history: bool,
    /// The prices of the cost figures, when any was given.
    pub prices: Option<cost::Prices>,
}

/// One search step of one run, as the report uses it.
pub struct SearchPoint<'a> {
    /// The result file's stem.
    pub run: String,
    /// Its run's place in [`Group::runs`].
    pub run_index: usize,
    pub engine: String,
    /// Build and search parameters.
    pub setting: String,
    pub runbook_step: usize,
    pub after: String,
    /// Right after a build (the points of recall/QPS curves).
    pub after_build: bool,
    pub recall: f64,
    pub qps: f64,
    pub p99_ms: f64,
    pub build_s: Option<f64>,
    /// Total footprint ÷ live points.
    pub total_bytes_per_vector: Option<f64>,
    /// The total footprint itself, bytes.
    pub total_bytes: Option<u64>,
    /// What the engine's index figure holds, if it said (`graph only`, ...).
    pub index_holds: Option<&'static str>,
    /// The engine reported an index figure.
    pub has_index: bool,
    /// The engine's memory once built (searches right after the build only).
    pub memory: Option<MemoryAfterBuild>,
    pub build_params: &'a ParamMap,
    /// The run carries a possible-full-scan warning: its figures do not describe the index.
    pub invalid: bool,
    /// The table's cells, in [`TABLE_METRICS`] order.
    pub cells: Vec<String>,
    /// The retrieval-task cells, in [`TASK_METRICS`] order.
    pub task_cells: Vec<String>,
    pub search: &'a SearchStep,
    /// Index of its configuration in the run (the sidecar's `config`).
    pub config: usize,
    /// The run's per-query sidecar, if it has one.
    pub sidecar: Option<PathBuf>,
}

/// The runs of one dataset.
pub struct Group<'a> {
    pub dataset: &'a str,
    pub sha256: &'a str,
    /// Engines in colour order (sorted by name).
    pub engines: Vec<String>,
    pub runs: Vec<(&'a Path, &'a RunResult)>,
    pub points: Vec<SearchPoint<'a>>,
    /// The open-loop objective, when a run set one.
    pub slo_ms: Option<f64>,
    /// The dataset's raw vectors (the most points any run used), when their type is known.
    pub raw: Option<RawVectors>,
}

/// A dataset's vectors as they are: the floor any engine's total is compared against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawVectors {
    pub points: usize,
    pub dim: usize,
    pub element: ElementType,
}

impl RawVectors {
    /// Dimensions × bytes per element.
    pub fn bytes_per_vector(&self) -> f64 {
        (self.dim * self.element.bytes()) as f64
    }

    /// "3000 × 16 × 4 B (float32) = 0.2 MB, 64 B per vector".
    pub fn describe(&self) -> String {
        format!(
            "{} × {} × {} B ({}) = {:.1} MB, {:.0} B per vector",
            self.points,
            self.dim,
            self.element.bytes(),
            self.element.name(),
            self.points as f64 * self.bytes_per_vector() / (1024.0 * 1024.0),
            self.bytes_per_vector()
        )
    }
}

/// Per engine, QPS at each recall target (`None`: never reached), and the best recall.
pub struct EngineAtRecall {
    pub engine: String,
    pub qps: Vec<(f64, Option<f64>)>,
    pub max_recall: f64,
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn metric(key: &str) -> Option<&'static MetricDef> {
    find(key)
}

/// The row's figures of `keys`, formatted as the registry formats them.
fn cells(keys: &[&str], row: &Row<'_>) -> Vec<String> {
    keys.iter()
        .map(|k| match metric(k) {
            Some(m) => format_value(m, (m.value)(row)),
            None => "-".into(),
        })
        .collect()
}

fn point<'a>(path: &Path, run: &'a RunResult, row: &Row<'a>, run_index: usize) -> SearchPoint<'a> {
    let value = |key: &str| metric(key).and_then(|m| (m.value)(row));
    let invalid = run
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::PossibleFullScan { .. }));
    SearchPoint {
        run: stem(path),
        run_index,
        engine: run.series_name(),
        setting: match &row.search.filter {
            Some(f) => format!(
                "{} {} [{}]",
                row.config.build_params.label(),
                row.search.search_params.label(),
                f.name
            ),
            None => format!(
                "{} {}",
                row.config.build_params.label(),
                row.search.search_params.label()
            ),
        },
        runbook_step: row.search.runbook_step,
        after: row.search.after.clone(),
        after_build: row.build.is_some(),
        recall: row.search.quality.recall,
        qps: row.search.qps,
        p99_ms: row.search.latency.p99_ms,
        build_s: value("build_s"),
        total_bytes_per_vector: value("total_bytes_per_vector"),
        total_bytes: row.footprint().total.map(|t| t.bytes),
        index_holds: sizes::index_holds(row),
        has_index: row.footprint().index.is_some(),
        memory: sizes::memory_after_build(run, row),
        build_params: &row.config.build_params,
        invalid,
        cells: cells(TABLE_METRICS, row),
        task_cells: cells(TASK_METRICS, row),
        search: row.search,
        config: run
            .configs
            .iter()
            .position(|c| std::ptr::eq(c, row.config))
            .unwrap_or(0),
        sidecar: run.sidecar.as_ref().map(|name| {
            path.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .join(name)
        }),
    }
}

/// Per-query latencies (ms, sorted) of each after-build search of the group, read from the
/// runs' sidecars: (point index, latencies). Runs without a sidecar, batch-mode steps and
/// unreadable lines are left out.
pub fn latencies(group: &Group<'_>) -> Vec<(usize, Vec<f64>)> {
    #[derive(serde::Deserialize)]
    struct Line {
        config: usize,
        step: usize,
        latency_us: Option<f64>,
    }
    let mut out = Vec::new();
    let mut cache: Vec<(PathBuf, Vec<Line>)> = Vec::new();
    for (i, p) in group.points.iter().enumerate() {
        let Some(path) = &p.sidecar else { continue };
        if !p.after_build || p.search.mode == "batch" {
            continue;
        }
        if !cache.iter().any(|(c, _)| c == path) {
            let lines = std::fs::read_to_string(path)
                .map(|text| {
                    text.lines()
                        .filter_map(|l| serde_json::from_str::<Line>(l).ok())
                        .collect()
                })
                .unwrap_or_default();
            cache.push((path.clone(), lines));
        }
        let Some((_, lines)) = cache.iter().find(|(c, _)| c == path) else {
            continue;
        };
        let mut ms: Vec<f64> = lines
            .iter()
            .filter(|l| l.config == p.config && l.step == p.search.sidecar_step)
            .filter_map(|l| l.latency_us.map(|us| us / 1000.0))
            .collect();
        if ms.is_empty() {
            continue;
        }
        ms.sort_by(f64::total_cmp);
        out.push((i, ms));
    }
    out
}

/// Groups the runs by dataset, in the order datasets first appear.
pub fn groups<'a>(runs: &'a [(PathBuf, RunResult)]) -> Vec<Group<'a>> {
    let mut out: Vec<Group<'a>> = Vec::new();
    for (path, run) in runs {
        let i = match out.iter().position(|g| g.sha256 == run.dataset.sha256) {
            Some(i) => i,
            None => {
                out.push(Group {
                    dataset: &run.dataset.name,
                    sha256: &run.dataset.sha256,
                    engines: Vec::new(),
                    runs: Vec::new(),
                    points: Vec::new(),
                    slo_ms: None,
                    raw: None,
                });
                out.len() - 1
            }
        };
        let g = &mut out[i];
        if let Some(element) = sizes::element_type(run) {
            let raw = RawVectors {
                points: run.dataset.train,
                dim: run.dataset.dim,
                element,
            };
            if g.raw.is_none_or(|r| r.points < raw.points) {
                g.raw = Some(raw);
            }
        }
        g.runs.push((path.as_path(), run));
        let series = run.series_name();
        if !g.engines.contains(&series) {
            g.engines.push(series);
        }
        let has_open_loop = run
            .configs
            .iter()
            .flat_map(|c| c.searches())
            .any(|s| s.load.iter().any(|l| l.kind == "open"));
        if has_open_loop {
            g.slo_ms = g.slo_ms.or(run.manifest.settings.slo_ms);
        }
        let run_index = g.runs.len() - 1;
        for row in rows(&run.configs) {
            g.points.push(point(path, run, &row, run_index));
        }
    }
    for g in &mut out {
        g.engines.sort();
    }
    out
}

impl Group<'_> {
    /// QPS at the recall targets, per engine, from the frontier of its after-build points;
    /// when the searches ran under several filter levels, of its unfiltered ones (as the
    /// recall-vs-QPS plot draws them: a filtered search answers another question).
    pub fn at_recall(&self) -> Vec<EngineAtRecall> {
        let mixed_filters = plots::mixed_filter_levels(self);
        self.engines
            .iter()
            .map(|engine| {
                let points: Vec<CurvePoint> = self
                    .points
                    .iter()
                    .filter(|p| &p.engine == engine && p.after_build)
                    .filter(|p| !mixed_filters || p.search.filter.is_none())
                    .map(|p| CurvePoint {
                        recall: p.recall,
                        qps: p.qps,
                        p99_ms: p.p99_ms,
                        label: p.setting.clone(),
                    })
                    .collect();
                let front = frontier(&points);
                EngineAtRecall {
                    engine: engine.clone(),
                    qps: RECALL_TARGETS
                        .iter()
                        .map(|t| (*t, qps_at_recall(&front, *t)))
                        .collect(),
                    max_recall: points.iter().map(|p| p.recall).fold(0.0, f64::max),
                }
            })
            .collect()
    }

    /// Warnings of each run, as text.
    pub fn warnings(&self) -> Vec<(String, String, Vec<String>)> {
        self.runs
            .iter()
            .map(|(path, run)| {
                (
                    stem(path),
                    run.series_name(),
                    run.warnings.iter().map(ToString::to_string).collect(),
                )
            })
            .collect()
    }
}

fn markdown(groups: &[Group<'_>], plots: &[Vec<plots::Plot>], options: &Options) -> String {
    let mut out = String::from("# ragdbeval report\n");
    for (g, plots) in groups.iter().zip(plots) {
        let _ = writeln!(
            out,
            "\n## {} (SHA-256 {})\n",
            g.dataset,
            &g.sha256[..g.sha256.len().min(12)]
        );
        for note in g.notes() {
            let _ = writeln!(out, "{note}\n");
        }
        let header = table_header(g);
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
        for r in table_rows(g) {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
        let _ = writeln!(
            out,
            "\nQPS at recall ≥ target (interpolated on each engine's Pareto frontier):\n"
        );
        let _ = writeln!(
            out,
            "| engine | ≥ 0.90 | ≥ 0.95 | ≥ 0.99 |\n|---|---|---|---|"
        );
        for e in g.at_recall() {
            let cells: Vec<String> = e
                .qps
                .iter()
                .map(|(_, q)| at_recall_cell(*q, e.max_recall))
                .collect();
            let _ = writeln!(out, "| {} | {} |", e.engine, cells.join(" | "));
        }
        let _ = write!(out, "\n{}", ranking::markdown(g));
        if let Some(prices) = &options.prices {
            let _ = write!(out, "\n{}", cost::markdown(g, prices));
        }
        if options.history {
            let _ = write!(out, "\n{}", history_markdown(g));
        }
        out.push('\n');
        for p in plots {
            let _ = writeln!(
                out,
                "![{}](plots/{}-{}.svg)",
                p.title,
                slug(g.dataset),
                p.name
            );
        }
    }
    out
}

/// The runs of a group in history order, as a Markdown table.
fn history_markdown(group: &Group<'_>) -> String {
    let mut out = format!(
        "History: the runs in the order of the history plots' x axis:\n\n| {} |\n|{}\n",
        history::HEADER.join(" | "),
        "---|".repeat(history::HEADER.len())
    );
    for r in history::cells(&history::runs(group)) {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out
}

/// A file-name-safe form of a dataset name.
pub fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What `write_dir` wrote.
pub struct Written {
    pub files: Vec<PathBuf>,
    pub plots: usize,
    /// Problems with the runs' sidecars (unreadable lines, a missing file), one line each:
    /// the plots drawn from them leave those lines out.
    pub warnings: Vec<String>,
}

/// Writes the whole report into `dir` (created if needed). Every file is written into a
/// temporary directory first and moved into `dir` only once all of them are: a write error (a
/// full disk) leaves `dir` as it was, without a partial set of plots.
pub fn write_dir(
    runs: &[(PathBuf, RunResult)],
    dir: &Path,
    options: &Options,
) -> Result<Written, ExportError> {
    let fail = |what: &Path, e: std::io::Error| ExportError {
        format: "report",
        message: format!("writing {}: {e}", what.display()),
    };
    let staging = crate::atomic::AtomicDir::create(dir).map_err(|e| fail(dir, e))?;
    let plots_dir = staging.path().join("plots");
    std::fs::create_dir_all(&plots_dir).map_err(|e| fail(&dir.join("plots"), e))?;
    let groups = groups(runs);
    let plots: Vec<Vec<plots::Plot>> = groups
        .iter()
        .map(|g| {
            let mut ps = plots::plots(g)?;
            if options.history {
                history::plots(&mut ps, g)?;
            }
            Ok(ps)
        })
        .collect::<Result<_, ExportError>>()?;
    let mut files = Vec::new();
    let mut write = |rel: PathBuf, bytes: &[u8]| -> Result<(), ExportError> {
        std::fs::write(staging.path().join(&rel), bytes).map_err(|e| fail(&dir.join(&rel), e))?;
        files.push(dir.join(rel));
        Ok(())
    };
    let mut count = 0;
    for (g, ps) in groups.iter().zip(&plots) {
        for p in ps {
            let stem = format!("{}-{}", slug(g.dataset), p.name);
            write(
                Path::new("plots").join(format!("{stem}.svg")),
                p.svg.as_bytes(),
            )?;
            write(Path::new("plots").join(format!("{stem}.png")), &p.png)?;
            count += 1;
        }
    }
    let refs: Vec<(&Path, &RunResult)> = runs.iter().map(|(p, r)| (p.as_path(), r)).collect();
    write(
        "results.csv".into(),
        super::results_csv::render(&refs)?.as_bytes(),
    )?;
    if let Some(streams) = super::streams_csv::render(&refs)? {
        write("streams.csv".into(), streams.as_bytes())?;
    }
    write("ranking.csv".into(), ranking::csv(&groups)?.as_bytes())?;
    if let Some(prices) = &options.prices {
        write("cost.csv".into(), cost::csv(&groups, prices)?.as_bytes())?;
    }
    write(
        "report.md".into(),
        markdown(&groups, &plots, options).as_bytes(),
    )?;
    write(
        "index.html".into(),
        page::render(&groups, &plots, options).as_bytes(),
    )?;
    sync_all(staging.path()).map_err(|e| fail(dir, e))?;
    staging.commit().map_err(|e| fail(dir, e))?;
    Ok(Written {
        files,
        plots: count,
        warnings: sidecar_warnings(&groups),
    })
}

/// Syncs every file under `dir`, and the directories, before they are moved into place.
fn sync_all(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            sync_all(&entry.path())?;
        } else {
            std::fs::File::open(entry.path())?.sync_all()?;
        }
    }
    crate::atomic::sync_dir(dir)
}

/// One line per sidecar of the groups' runs that has unreadable lines or cannot be read.
fn sidecar_warnings(groups: &[Group<'_>]) -> Vec<String> {
    let mut seen: Vec<&Path> = Vec::new();
    let mut out = Vec::new();
    for p in groups.iter().flat_map(|g| &g.points) {
        let Some(path) = p.sidecar.as_deref() else {
            continue;
        };
        if seen.contains(&path) {
            continue;
        }
        seen.push(path);
        match crate::results::sidecar::survey(path) {
            Ok(s) if s.unreadable > 0 => out.push(format!(
                "{}: {} unreadable line(s), left out of the latency plots",
                path.display(),
                s.unreadable
            )),
            Ok(_) => {}
            Err(e) => out.push(format!("{e}; the latency plots leave its run out")),
        }
    }
    out
}
