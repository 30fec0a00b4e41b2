//! Filtered search through the adapter contract, the same cases for every engine: the label,
//! range and tenant predicates at 1 %, 10 % and 50 % selectivity, plus a conjunction, on a
//! small random set. Each answer must satisfy its predicate (0 violations), and recall is
//! measured against the exact top-k of the passing points. Then an update and a delete: a
//! point keeps its attributes when its vector changes, and a deleted point is never returned.
//!
//! Each engine's test module calls [`check_filtered_search`] with a freshly opened engine and
//! its own collection spec (the engine's server URL and build parameters).

use crate::common::{run_in_temp, succeeds};
use std::sync::Arc;

use ragdbeval::distance::Distance;
use ragdbeval::engine::{Batch, CollectionSpec, Neighbor, PointId, Query, VectorEngine};
use ragdbeval::filter::generate::{Correlation, FilterRequest, generate};
use ragdbeval::filter::{Attributes, Predicate};
use ragdbeval::groundtruth::naive_knn;
use ragdbeval::results::run_files::RunFiles;
use ragdbeval::rng::SplitMix64;
use ragdbeval::vectors::Vectors;

/// Points and queries of the filtered cases.
pub const POINTS: usize = 2000;
const QUERIES: usize = 40;
const DIM: usize = 16;
const K: usize = 10;

/// One case's outcome.
#[derive(Debug)]
pub struct FilteredOutcome {
    pub case: String,
    pub recall: f64,
    pub violations: usize,
    /// Queries answered with fewer than K results although at least K points pass.
    pub short: usize,
}

fn data(seed: u64, n: usize) -> Vectors {
    let mut rng = SplitMix64::new(seed);
    Vectors::new((0..n * DIM).map(|_| rng.next_gaussian()).collect(), DIM).unwrap()
}

/// The cases: generated filters over the same points, by name.
fn cases(train: &Vectors, queries: &Vectors) -> (Arc<Attributes>, Vec<(String, Vec<Predicate>)>) {
    let mut attributes = Attributes::new(train.len());
    let mut out = Vec::new();
    // One generation per case would give each its own attribute table; the engine holds one,
    // so every case's field is generated into the same table under its own name.
    let specs: [(&str, &[&str]); 5] = [
        ("label 1%", &["label:0.01"]),
        ("int-range 10%", &["int-range:0.1"]),
        ("tenant 1/2 (50%)", &["tenant:2"]),
        (
            "label 1% AND int-range 50%",
            &["label:0.01", "int-range:0.5"],
        ),
        ("tenant 1/10 (10%)", &["tenant:10"]),
    ];
    for (i, (name, args)) in specs.iter().enumerate() {
        let setup = generate(
            train,
            queries,
            &FilterRequest {
                args: args.iter().map(|a| a.parse().unwrap()).collect(),
                sweep: false,
                levels: Vec::new(),
                correlation: Correlation::None,
                seed: 100 + i as u64,
            },
            Attributes::new(train.len()),
        )
        .unwrap();
        // Rename the generated fields so the cases do not collide: `label` → `label_c0`.
        let mut predicates = setup.levels[0].predicates.clone();
        for field in setup.attributes.fields() {
            let renamed = format!("{}_c{i}", field.name);
            let f = setup.attributes.field_index(&field.name).unwrap();
            attributes
                .push(&renamed, setup.attributes.column(f).clone())
                .unwrap();
            for p in &mut predicates {
                for c in &mut p.all {
                    match c {
                        ragdbeval::filter::Condition::Equals { field: name, .. }
                        | ragdbeval::filter::Condition::Range { field: name, .. }
                            if *name == field.name =>
                        {
                            *name = renamed.clone();
                        }
                        _ => {}
                    }
                }
            }
        }
        out.push((name.to_string(), predicates));
    }
    // Selectivities of the 50 % and 1 % cases as the Done-when names them are covered:
    // 1 % (label), 10 % (range, tenant 1/10), 50 % (tenant 1/2, range in the conjunction).
    (Arc::new(attributes), out)
}

/// What a filtered search is scored against: the base, the queries and their attributes.
struct Scene<'a> {
    base: &'a Vectors,
    queries: &'a Vectors,
    distance: Distance,
    attributes: &'a Attributes,
}

/// Scores `answers` (one list per query) against the exact filtered truth over the points
/// `live` (id → row of `scene.base`).
fn score(
    case: &str,
    scene: &Scene,
    live: &[(PointId, usize)],
    predicates: &[Predicate],
    answers: &[Vec<Neighbor>],
) -> FilteredOutcome {
    let Scene {
        base,
        queries,
        distance,
        attributes,
    } = *scene;
    let (mut hits, mut relevant, mut violations, mut short) = (0, 0, 0, 0);
    for (q, (predicate, answer)) in predicates.iter().zip(answers).enumerate() {
        let c = predicate.compile(attributes).unwrap();
        let passing: Vec<&(PointId, usize)> = live.iter().filter(|(id, _)| c.passes(*id)).collect();
        let vectors: Vec<f32> = passing
            .iter()
            .flat_map(|(_, row)| base.row(*row).iter().copied())
            .collect();
        let ids: Vec<PointId> = passing.iter().map(|(id, _)| *id).collect();
        let truth = naive_knn(&vectors, &ids, DIM, queries.row(q), distance, K);
        violations += answer.iter().filter(|n| !c.passes(n.id)).count();
        if answer.len() < K.min(passing.len()) {
            short += 1;
        }
        let Some(kth) = truth.last().map(|(_, d)| *d) else {
            continue;
        };
        let limit = kth + 1e-4 * kth.abs().max(1.0);
        relevant += truth.len();
        let row_of = |id: PointId| live.iter().find(|(i, _)| *i == id).map(|(_, r)| *r);
        hits += answer
            .iter()
            .take(K)
            .filter(|n| c.passes(n.id))
            .filter_map(|n| row_of(n.id))
            .filter(|r| distance.between(queries.row(q), base.row(*r)) <= limit)
            .count()
            .min(truth.len());
    }
    FilteredOutcome {
        case: case.to_string(),
        recall: hits as f64 / relevant.max(1) as f64,
        violations,
        short,
    }
}

/// Builds a collection of [`POINTS`] random points with the cases' attributes in `engine`
/// (with `spec`'s name, distance, build parameters and directory), searches every case with
/// the engine's current search parameters (one call per query and one batch), updates and
/// deletes some points and searches again. Returns every outcome; panics on any violation,
/// on an engine error, or on a recall below `min_recall`.
pub fn check_filtered_search(
    engine: &mut dyn VectorEngine,
    spec: CollectionSpec,
    min_recall: f64,
) -> Vec<FilteredOutcome> {
    let distance = spec.distance;
    let base = data(1, POINTS);
    let queries = data(2, QUERIES);
    let (attributes, cases) = cases(&base, &queries);
    let spec = CollectionSpec {
        dim: DIM,
        expected_points: POINTS,
        attributes: Some(attributes.clone()),
        element_type: Default::default(),
        ..spec
    };
    for (_, predicates) in &cases {
        engine
            .check_filter(&attributes, &predicates[0])
            .unwrap_or_else(|e| panic!("{}: check_filter: {e}", engine.name()));
    }
    engine.create(&spec).expect("create");
    let ids: Vec<PointId> = (0..POINTS as PointId).collect();
    for (chunk, rows) in ids.chunks(500).zip(base.as_flat().chunks(500 * DIM)) {
        engine.insert_batch(chunk, rows).expect("insert");
    }
    engine.wait_until_ready().expect("ready");
    let mut live: Vec<(PointId, usize)> = (0..POINTS).map(|i| (i as PointId, i)).collect();
    let mut outcomes = Vec::new();
    let mut run = |engine: &dyn VectorEngine, live: &[(PointId, usize)], when: &str| {
        for (name, predicates) in &cases {
            let batch = engine
                .batch_search(Batch::new(queries.as_flat(), DIM, K).filtered(Some(predicates)))
                .unwrap_or_else(|e| panic!("{} {name}: {e}", engine.name()));
            let single: Vec<Vec<Neighbor>> = predicates
                .iter()
                .enumerate()
                .map(|(q, p)| {
                    let mut out = Vec::new();
                    engine
                        .search(Query::new(queries.row(q), K).filtered(Some(p)), &mut out)
                        .unwrap_or_else(|e| panic!("{} {name}: {e}", engine.name()));
                    out
                })
                .collect();
            for (how, answers) in [("batch", &batch), ("single", &single)] {
                let scene = Scene {
                    base: &base,
                    queries: &queries,
                    distance,
                    attributes: &attributes,
                };
                let o = score(
                    &format!("{name} ({how}, {when})"),
                    &scene,
                    live,
                    predicates,
                    answers,
                );
                println!(
                    "{}: {}: recall {:.3}, violations {}, short {}",
                    engine.name(),
                    o.case,
                    o.recall,
                    o.violations,
                    o.short
                );
                outcomes.push(o);
            }
        }
    };
    run(&*engine, &live, "after build");
    // Points 0..100 get the vectors of points 1000..1100 (their attributes stay theirs), and
    // points 1900..2000 are deleted.
    let updated: Vec<PointId> = (0..100).collect();
    engine
        .upsert_batch(&updated, base.rows(1000, 1100))
        .expect("update");
    let deleted: Vec<PointId> = (1900..2000).collect();
    engine.delete_batch(&deleted).expect("delete");
    engine.wait_until_ready().expect("ready after writes");
    for (id, row) in &mut live {
        if *id < 100 {
            *row += 1000;
        }
    }
    live.retain(|(id, _)| *id < 1900);
    run(&*engine, &live, "after update and delete");
    engine.close().expect("close");
    for o in &outcomes {
        assert_eq!(o.violations, 0, "{}: filter violations", o.case);
        assert!(
            o.recall >= min_recall,
            "{}: recall {:.3} < {min_recall}",
            o.case,
            o.recall
        );
    }
    outcomes
}

/// The reference: recall 1.000 on every case, before and after writes.
#[test]
fn exact_is_exact_under_every_filter() {
    let entry = ragdbeval::adapters::find("exact").unwrap();
    let mut engine = (entry.open)(&Default::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let outcomes = check_filtered_search(
        engine.as_mut(),
        CollectionSpec {
            name: "filtered".into(),
            dim: DIM,
            distance: Distance::Euclidean,
            expected_points: POINTS,
            build_params: Default::default(),
            work_dir: dir.path().to_path_buf(),
            attributes: None,
            element_type: Default::default(),
        },
        1.0,
    );
    assert!(outcomes.iter().all(|o| o.short == 0), "{outcomes:?}");
}

/// Runs `bench` on `exact` with `filter_args` over the default runbook (build, insert,
/// update, delete, a search after each) and checks every search: recall 1.000, answers equal
/// to the filtered truth id for id and bit for bit, 0 violations, 0 short results; and
/// `verify` recomputes every figure (the `ragdbeval` helper runs it).
fn exact_bench(filter_args: &[&str]) -> ragdbeval::results::RunResult {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "bench",
        "--db",
        "exact",
        "--dataset",
        "gen:clustered:n=3000,dim=16,queries=60,seed=5",
        "-q",
        "--name",
        "f",
        "--warmup",
        "0",
    ];
    args.extend_from_slice(filter_args);
    succeeds(dir.path(), &args);
    let r = ragdbeval::results::RunResult::load(&dir.path().join("results/f.json")).unwrap();
    assert!(r.status.invalid.is_empty(), "{:?}", r.status.invalid);
    for s in r.configs[0].searches() {
        let f = s.filter.as_ref().expect("a filtered search");
        let at = format!("{filter_args:?} {} step {}", f.name, s.runbook_step);
        assert_eq!(s.quality.recall, 1.0, "{at}");
        assert_eq!(s.truth_mismatches, Some(0), "{at}");
        assert_eq!(f.violations, 0, "{at}");
        assert_eq!(f.short_results, 0, "{at}");
    }
    r
}

#[test]
fn exact_scores_one_at_every_selectivity_correlation_and_runbook_step() {
    for correlation in ["none", "positive", "negative"] {
        for kind in ["label", "int-range", "tenant"] {
            let r = exact_bench(&[
                "--filter",
                kind,
                "--filter-sweep",
                "--filter-correlation",
                correlation,
            ]);
            // Ten levels after each of the four search steps.
            assert_eq!(r.configs[0].searches().count(), 40, "{kind} {correlation}");
            let first = r.configs[0].searches().next().unwrap();
            let f = first.filter.as_ref().unwrap();
            // The build step holds 90 % of the points: 0.1 % of 3000 is 3 points of 2700.
            assert!(f.selectivity < 0.01, "{kind}: {}", f.selectivity);
        }
    }
    // The report of a sweep plots recall and QPS against selectivity.
    let (dir, out) = run_in_temp(&argv![
        "bench --db exact --dataset gen:clustered:n=2000,dim=8,queries=20 -q --name s --runbook build-search --filter label --filter-sweep"
    ]);
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
    let out = crate::common::ragdbeval(
        dir.path(),
        &["report", "results/s.json", "--out", "report/"],
    );
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
    let plots = crate::common::files_in(&dir.path().join("report/plots"));
    for plot in ["-selectivity-recall.svg", "-selectivity-qps.svg"] {
        let path = plots
            .iter()
            .find(|p| p.to_string_lossy().ends_with(plot))
            .unwrap_or_else(|| panic!("no {plot} in {plots:?}"));
        let svg = std::fs::read_to_string(path).unwrap();
        assert!(svg.contains("selectivity"), "{plot}");
    }
    // A conjunction, and a literal predicate on attributes from a file.
    exact_bench(&["--filter", "label:0.1", "--filter", "int-range:0.5"]);
    let dir = tempfile::tempdir().unwrap();
    let attrs = dir.path().join("attrs.jsonl");
    let lines: Vec<String> = (0..3000)
        .map(|i| {
            format!(
                "{{\"id\": {i}, \"color\": \"c{}\", \"price\": {}}}",
                i % 7,
                i * 3
            )
        })
        .collect();
    std::fs::write(&attrs, lines.join("\n")).unwrap();
    let path = attrs.to_string_lossy().into_owned();
    let r = exact_bench(&argv![
        "--attributes",
        &path,
        "--filter color=c3 --filter price=100..5000"
    ]);
    let f = r.configs[0]
        .searches()
        .next()
        .unwrap()
        .filter
        .clone()
        .unwrap();
    assert_eq!(f.name, "color = \"c3\" AND 100 <= price < 5000");
    assert_eq!(f.target_selectivity, None);
}

/// A test engine that answers filtered searches unfiltered is caught: violations counted,
/// the run marked invalid, the warning given, and its recall not inflated by the points it
/// should not have returned.
#[test]
fn an_engine_that_drops_the_filter_is_caught() {
    use ragdbeval::dataset::{self, LoadOptions};
    use ragdbeval::engine::{ConnectOptions, EngineEntry, EngineResult};
    use ragdbeval::filter::FilterSpec;
    use ragdbeval::runbook::Runbook;
    use ragdbeval::runner::{self, FilterPlan, filtered_truth::filtered_truths, ground_truth};

    fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
        Ok(Box::new(
            crate::runbooks::exact_as("drops-filters", opts)?.dropping_filters(),
        ))
    }
    static DROPS: EngineEntry = EngineEntry {
        name: "drops-filters",
        // test double: exact that ignores filters: it wraps exact, so it declares what exact declares.
        meta: &ragdbeval::adapters::meta::exact::ENGINE,
        config_toml: "",
        open,
        left_out: None,
    };
    let ds = dataset::load(
        "gen:clustered:n=2000,dim=8,queries=50,seed=1",
        &LoadOptions {
            gt_k: 10,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let steps = Runbook::build_and_search().resolve(ds.train.len()).unwrap();
    let truths =
        ground_truth::step_truths(&ds, &steps, 10, None, &ragdbeval::types::Silent).unwrap();
    let setup = FilterSpec {
        filters: vec!["label:0.1".into()],
        sweep: false,
        levels: Vec::new(),
        correlation: "none".into(),
        seed: 1,
        attributes: None,
    }
    .setup(&ds.train, &ds.test, ds.attributes.as_ref())
    .unwrap();
    let filtered =
        filtered_truths(&ds, &steps, &setup, 10, None, &ragdbeval::types::Silent).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut plan = crate::runbooks::plan_for(&DROPS, steps, truths, dir.path());
    plan.filters = Some(FilterPlan {
        setup,
        truths: filtered.truths,
        selectivity: filtered.selectivity,
    });
    let mut result = crate::common::empty_result();
    runner::run(
        &plan,
        &ds,
        &mut result,
        &RunFiles::new(&dir.path().join("r.json"), None, None),
    )
    .unwrap();
    let search = result.configs[0].searches().next().unwrap();
    let f = search.filter.as_ref().unwrap();
    assert!(f.violations > 0, "{f:?}");
    assert!(f.violating_queries > 40, "{f:?}");
    assert!(search.quality.recall < 0.5, "{:?}", search.quality);
    assert!(!result.status.invalid.is_empty());
    assert!(
        result
            .warnings
            .iter()
            .any(|w| w.to_string().contains("FILTER VIOLATIONS"))
    );
}

/// Every registered engine through `bench --filter` against its real engine: the label,
/// range and tenant predicates at 1 %, 10 % and 50 % selectivity, 0 violations, and a result
/// that `verify` recomputes. Run per engine by `conformance` (server engines when their
/// server is up; under CI a missing server fails, Qdrant excepted).
pub mod every_engine {
    use crate::common::{engine_url, succeeds};
    use ragdbeval::results::{RunResult, RunState};

    pub fn run_case(engine: &str) {
        let case = &crate::common::entry(engine).meta.conformance;
        let url = engine_url(engine);
        // Not conformance.rs's seed: the collection is named after the dataset, and the two
        // tests run at the same time against one server.
        let dataset = format!(
            "gen:clustered:n=4000,dim=32,queries=100,distance={},seed=12",
            case.distance
        );
        // The highest effort of the engine's conformance sweep: filtered search needs it most.
        let effort = case
            .effort_sweep
            .split_once('=')
            .and_then(|(name, values)| Some(format!("{name}={}", values.split(',').next_back()?)));
        for kind in ["label", "int-range", "tenant"] {
            let dir = tempfile::tempdir().unwrap();
            let mut args = vec![
                "bench",
                "--db",
                engine,
                "--dataset",
                &dataset,
                "-q",
                "--name",
                "f",
                "--recreate",
                "--warmup",
                "10",
                "--runbook",
                "build-search",
                "--filter",
                kind,
                "--filter-sweep=0.01,0.1,0.5",
            ];
            if let Some(u) = &url {
                args.extend(["--url", u.as_str()]);
            }
            if let Some(e) = &effort {
                args.extend(["--search-param", e.as_str()]);
            }
            for param in case.search_params {
                args.extend(["--search-param", param]);
            }
            succeeds(dir.path(), &args);
            let r = RunResult::load(&dir.path().join("results/f.json")).unwrap();
            assert_eq!(r.status.state, RunState::Completed, "{engine} {kind}");
            assert!(
                r.status.invalid.is_empty(),
                "{engine} {kind}: {:?}",
                r.status.invalid
            );
            let searches: Vec<_> = r.configs[0].searches().collect();
            assert_eq!(searches.len(), 3, "{engine} {kind}: one search per level");
            for s in searches {
                let f = s.filter.as_ref().unwrap();
                println!(
                    "{engine} {}: recall {:.4}, {:.0} QPS, pass {:.2} %, violations {}, short {}",
                    f.name,
                    s.quality.recall,
                    s.qps,
                    f.selectivity * 100.0,
                    f.violations,
                    f.short_results
                );
                assert_eq!(f.violations, 0, "{engine} {}", f.name);
                assert!(
                    s.quality.recall > 0.0,
                    "{engine} {}: nothing relevant found",
                    f.name
                );
            }
        }
    }
}

/// Attributes carried by an ann-benchmarks HDF5 file (group `attributes`, one 1-D dataset
/// per attribute, strings and integers) are used by literal predicates, with `--limit`.
#[test]
fn hdf5_attributes_serve_literal_predicates() {
    use crate::common::{ragdbeval, stderr};
    use hdf5::types::VarLenUnicode;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.hdf5");
    let path = file.to_string_lossy().into_owned();
    succeeds(
        dir.path(),
        &argv![
            "dataset make --kind clustered -n 1000 --dim 8 --queries 20 -k 10 --out",
            &path
        ],
    );
    {
        let f = crate::common::hdf5_open_rw(&file);
        let g = f.create_group("attributes").unwrap();
        let colors: Vec<VarLenUnicode> = (0..1000)
            .map(|i| format!("c{}", i % 5).parse().unwrap())
            .collect();
        g.new_dataset_builder()
            .with_data(&colors)
            .create("color")
            .unwrap();
        let prices: Vec<i64> = (0..1000).collect();
        g.new_dataset_builder()
            .with_data(&prices)
            .create("price")
            .unwrap();
    }
    succeeds(
        dir.path(),
        &argv![
            "bench --db exact --dataset",
            &path,
            "--limit 800 -q --name h --runbook build-search --filter color=c1 --filter price=0..400"
        ],
    );
    let r = ragdbeval::results::RunResult::load(&dir.path().join("results/h.json")).unwrap();
    let s = r.configs[0].searches().next().unwrap();
    let f = s.filter.as_ref().unwrap();
    // 80 of the 800 kept points are c1 with a price below 400.
    assert!((f.selectivity - 0.1).abs() < 1e-9, "{f:?}");
    assert_eq!((s.quality.recall, f.violations), (1.0, 0));
    // A float attribute is refused with the reason.
    {
        let f = crate::common::hdf5_open_rw(&file);
        f.group("attributes")
            .unwrap()
            .new_dataset_builder()
            .with_data(&vec![0.5f32; 1000])
            .create("score")
            .unwrap();
    }
    let out = ragdbeval(
        dir.path(),
        &argv!["bench --db exact --dataset", &path, "-q --filter color=c1"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("floats are not attributes"),
        "{}",
        stderr(&out)
    );
}
