//! The metric registry: every reported figure has one entry (key, header, description, unit,
//! direction, how to read it from a result). The terminal table, CSV, Markdown and plots all
//! iterate this list, so a new metric appears everywhere at once.

use crate::engine::Footprint;
use crate::results::{BuildStep, ConfigRun, MutationStep, SearchStep, Step};

/// Whether larger or smaller values are better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// One row of a report: a search step with the write step it directly follows.
///
/// Build figures (build time, index size, build RSS) belong to the row of the search right
/// after the build; a search after an insert, update or delete gets `build: None` and the
/// mutation in `mutation`, so that the build's figures are never shown again as if they
/// described the changed collection.
pub struct Row<'a> {
    pub config: &'a ConfigRun,
    pub build: Option<&'a BuildStep>,
    /// The insert/update/delete step this search follows, if any.
    pub mutation: Option<&'a MutationStep>,
    pub search: &'a SearchStep,
}

impl Row<'_> {
    /// The sizes measured after the write step this search follows (build or mutation):
    /// sizes change with every write, so each row shows its own.
    pub fn footprint(&self) -> Footprint {
        match (self.build, self.mutation) {
            (Some(b), _) => b.footprint.clone(),
            (None, Some(m)) => m.footprint.clone(),
            (None, None) => Footprint::default(),
        }
    }
}

/// A reported figure.
pub struct MetricDef {
    /// Stable machine name (CSV column, JSON paths in reports).
    pub key: &'static str,
    /// Short column header.
    pub header: &'static str,
    pub description: &'static str,
    pub unit: &'static str,
    pub better: Better,
    pub decimals: usize,
    /// Shown in the terminal summary table (the rest go to CSV/Markdown only).
    pub in_table: bool,
    pub value: fn(&Row<'_>) -> Option<f64>,
}

const MB: f64 = 1024.0 * 1024.0;

macro_rules! metric {
    ($key:literal, $header:literal, $unit:literal, $better:ident, $dec:literal, $table:literal, $desc:literal, $f:expr) => {
        MetricDef {
            key: $key,
            header: $header,
            description: $desc,
            unit: $unit,
            better: Better::$better,
            decimals: $dec,
            in_table: $table,
            value: $f,
        }
    };
}

/// A figure read from the build step: present only on the row of the search right after the
/// build, `None` on rows after a mutation (see [`Row`]).
macro_rules! build_metric {
    ($key:literal, $header:literal, $unit:literal, $better:ident, $dec:literal, $table:literal, $desc:literal, $field:ident) => {
        metric!($key, $header, $unit, $better, $dec, $table, $desc, |r| {
            r.build.map(|b| b.$field)
        })
    };
}

/// A duration of the build, in seconds: lower is better, shown to 1/100 s.
macro_rules! build_seconds {
    ($key:literal, $header:literal, $table:literal, $desc:literal, $field:ident) => {
        build_metric!($key, $header, "s", Lower, 2, $table, $desc, $field)
    };
}

/// All metrics, in report order.
pub const METRICS: &[MetricDef] = &[
    metric!(
        "recall",
        "recall",
        "",
        Higher,
        4,
        true,
        "recall@K: share of the true top-r neighbours (ties included) found in the first K results",
        |r| Some(r.search.quality.recall)
    ),
    metric!(
        "recall_distance",
        "recall(dist)",
        "",
        Higher,
        4,
        false,
        "ann-benchmarks knn recall: results within the K-th true distance + 1e-3, / K",
        |r| Some(r.search.quality.recall_distance)
    ),
    metric!(
        "precision",
        "precision",
        "",
        Higher,
        4,
        false,
        "precision@K: relevant results / K",
        |r| Some(r.search.quality.precision)
    ),
    metric!(
        "f1",
        "F1",
        "",
        Higher,
        4,
        false,
        "F1@K: harmonic mean of precision@K and recall@K, averaged over queries",
        |r| Some(r.search.quality.f1)
    ),
    metric!(
        "mrr",
        "MRR",
        "",
        Higher,
        4,
        false,
        "mean reciprocal rank of the first relevant result",
        |r| Some(r.search.quality.mrr)
    ),
    metric!(
        "ndcg",
        "NDCG",
        "",
        Higher,
        4,
        true,
        "NDCG@K with binary relevance",
        |r| Some(r.search.quality.ndcg)
    ),
    metric!(
        "map",
        "MAP",
        "",
        Higher,
        4,
        false,
        "mean average precision at K (AP divided by r, as trec_eval's map_cut)",
        |r| Some(r.search.quality.map)
    ),
    metric!(
        "hit_rate",
        "hit rate",
        "",
        Higher,
        4,
        false,
        "share of queries with at least one relevant result in the top K",
        |r| Some(r.search.quality.hit_rate)
    ),
    metric!(
        "qps",
        "QPS",
        "1/s",
        Higher,
        1,
        true,
        "timed queries / wall time of the query loop",
        |r| Some(r.search.qps)
    ),
    metric!(
        "qps_mean_latency",
        "QPS(1/mean)",
        "1/s",
        Higher,
        1,
        false,
        "1000 / mean latency in ms",
        |r| Some(r.search.qps_from_mean_latency)
    ),
    metric!(
        "latency_mean_ms",
        "mean ms",
        "ms",
        Lower,
        3,
        false,
        "mean query latency",
        |r| Some(r.search.latency.mean_ms)
    ),
    metric!(
        "latency_p50_ms",
        "p50 ms",
        "ms",
        Lower,
        3,
        true,
        "median query latency",
        |r| Some(r.search.latency.p50_ms)
    ),
    metric!(
        "latency_p90_ms",
        "p90 ms",
        "ms",
        Lower,
        3,
        false,
        "90th percentile query latency",
        |r| Some(r.search.latency.p90_ms)
    ),
    metric!(
        "latency_p95_ms",
        "p95 ms",
        "ms",
        Lower,
        3,
        false,
        "95th percentile query latency",
        |r| Some(r.search.latency.p95_ms)
    ),
    metric!(
        "latency_p99_ms",
        "p99 ms",
        "ms",
        Lower,
        3,
        true,
        "99th percentile query latency",
        |r| Some(r.search.latency.p99_ms)
    ),
    metric!(
        "latency_p999_ms",
        "p99.9 ms",
        "ms",
        Lower,
        3,
        false,
        "99.9th percentile query latency",
        |r| Some(r.search.latency.p999_ms)
    ),
    metric!(
        "latency_max_ms",
        "max ms",
        "ms",
        Lower,
        3,
        false,
        "slowest query",
        |r| Some(r.search.latency.max_ms)
    ),
    metric!(
        "stale_hits",
        "stale",
        "",
        Lower,
        0,
        true,
        "deleted or never-inserted ids returned (must be 0)",
        |r| Some(r.search.stale_hits as f64)
    ),
    metric!(
        "ghost_hits",
        "ghost",
        "",
        Lower,
        0,
        false,
        "updated ids returned where only their old vector ranks (must be 0)",
        |r| Some(r.search.ghost_hits as f64)
    ),
    metric!(
        "qps_median",
        "QPS med",
        "1/s",
        Higher,
        1,
        true,
        "--repeat: median QPS over the trials (absent with one trial)",
        |r| repeat_figure(r, "qps").map(|f| f.median)
    ),
    metric!(
        "qps_median_ci_low",
        "QPS CI lo",
        "1/s",
        Higher,
        1,
        false,
        "--repeat: lower end of the 95 % bootstrap interval of the median QPS",
        |r| repeat_figure(r, "qps").and_then(|f| f.ci95).map(|c| c.0)
    ),
    metric!(
        "qps_median_ci_high",
        "QPS CI hi",
        "1/s",
        Higher,
        1,
        false,
        "--repeat: upper end of the 95 % bootstrap interval of the median QPS",
        |r| repeat_figure(r, "qps").and_then(|f| f.ci95).map(|c| c.1)
    ),
    metric!(
        "qps_cv",
        "QPS CV",
        "",
        Lower,
        3,
        false,
        "--repeat: coefficient of variation of QPS over the trials",
        |r| repeat_figure(r, "qps").and_then(|f| f.cv)
    ),
    metric!(
        "latency_p99_median_ms",
        "p99 med ms",
        "ms",
        Lower,
        3,
        false,
        "--repeat: median p99 latency over the trials",
        |r| repeat_figure(r, "p99_ms").map(|f| f.median)
    ),
    metric!(
        "latency_p99_cv",
        "p99 CV",
        "",
        Lower,
        3,
        false,
        "--repeat: coefficient of variation of the p99 latency over the trials",
        |r| repeat_figure(r, "p99_ms").and_then(|f| f.cv)
    ),
    build_seconds!(
        "build_s",
        "build s",
        true,
        "bulk load plus index-ready wait",
        total_s
    ),
    metric!(
        "build_s_median",
        "build s med",
        "s",
        Lower,
        2,
        false,
        "--repeat-build: median build time over the trials",
        |r| {
            r.build
                .filter(|b| !b.rebuild_s.is_empty())
                .map(|b| crate::metrics::stats::median(&mut b.rebuild_s.clone()))
        }
    ),
    build_seconds!("insert_s", "load s", false, "bulk load time", insert_s),
    build_seconds!(
        "ready_wait_s",
        "index wait s",
        false,
        "time from end of load until the index was ready",
        ready_wait_s
    ),
    build_metric!(
        "build_vectors_per_s",
        "load vec/s",
        "1/s",
        Higher,
        0,
        false,
        "points / build time",
        vectors_per_s
    ),
    metric!(
        "index_mb",
        "index MB",
        "MB",
        Lower,
        1,
        true,
        "the index structure alone after the step the search follows (source in the result file)",
        |r| r.footprint().index.as_ref().map(|s| s.bytes as f64 / MB)
    ),
    metric!(
        "total_mb",
        "total MB",
        "MB",
        Lower,
        1,
        true,
        "the collection's whole footprint after the step the search follows: vectors, index, WAL/log, metadata",
        |r| r.footprint().total.as_ref().map(|s| s.bytes as f64 / MB)
    ),
    metric!(
        "total_bytes_per_vector",
        "total B/vec",
        "B",
        Lower,
        1,
        false,
        "total footprint / live points",
        |r| r
            .footprint()
            .total
            .as_ref()
            .map(|s| s.bytes as f64 / r.search.live_points.max(1) as f64)
    ),
    metric!(
        "index_bytes_per_vector",
        "index B/vec",
        "B",
        Lower,
        1,
        false,
        "index structure / live points",
        |r| r
            .footprint()
            .index
            .as_ref()
            .map(|s| s.bytes as f64 / r.search.live_points.max(1) as f64)
    ),
    metric!(
        "client_peak_rss_mb",
        "client RSS MB",
        "MB",
        Lower,
        1,
        false,
        "peak RSS of the ragdbeval process during the search step (includes in-process engines)",
        |r| Some(r.search.resources.client.peak_rss_bytes as f64 / MB)
    ),
    metric!(
        "client_cpu_percent",
        "client CPU%",
        "%",
        Lower,
        1,
        false,
        "mean CPU of the ragdbeval process during the search step (100 = one core)",
        |r| Some(r.search.resources.client.mean_cpu_percent)
    ),
    metric!(
        "build_peak_rss_mb",
        "build mem MB",
        "MB",
        Lower,
        1,
        true,
        "peak memory during the build: the engine's for server engines (PSS summed over its \
         processes, see memory_method), else the client's RSS",
        |r| r.build.map(|b| b
            .resources
            .engine
            .as_ref()
            .unwrap_or(&b.resources.client)
            .peak_memory_bytes() as f64
            / MB)
    ),
    metric!(
        "engine_peak_rss_mb",
        "engine mem MB",
        "MB",
        Lower,
        1,
        false,
        "peak memory of the engine server's process tree during the search step: PSS summed \
         over its processes (RSS when PSS is unreadable, see memory_method)",
        |r| r
            .search
            .resources
            .engine
            .as_ref()
            .map(|e| e.peak_memory_bytes() as f64 / MB)
    ),
    metric!(
        "engine_cpu_percent",
        "engine CPU%",
        "%",
        Lower,
        1,
        false,
        "mean CPU of the engine server process tree during the search step",
        |r| r
            .search
            .resources
            .engine
            .as_ref()
            .map(|e| e.mean_cpu_percent)
    ),
    metric!(
        "filter_selectivity",
        "pass %",
        "%",
        Higher,
        2,
        true,
        "filtered search: mean share of the live points that pass a query's predicate",
        |r| r.search.filter.as_ref().map(|f| f.selectivity * 100.0)
    ),
    metric!(
        "filter_violations",
        "violations",
        "",
        Lower,
        0,
        true,
        "filtered search: returned ids that fail their query's predicate (must be 0; any makes the run invalid)",
        |r| r.search.filter.as_ref().map(|f| f.violations as f64)
    ),
    metric!(
        "filter_short_results",
        "short",
        "",
        Lower,
        0,
        true,
        "filtered search: queries with fewer than K results although at least K points passed",
        |r| r.search.filter.as_ref().map(|f| f.short_results as f64)
    ),
    // Appended after the filter columns: results.csv only ever grows at its end.
    metric!(
        "recall_epsilon",
        "recall(eps)",
        "",
        Higher,
        4,
        false,
        "ann-benchmarks epsilon recall: results within 1.01 x the K-th true distance, / K",
        |r| r.search.quality.recall_epsilon
    ),
    metric!(
        "recall_large_epsilon",
        "recall(eps.1)",
        "",
        Higher,
        4,
        false,
        "ann-benchmarks largeepsilon recall: results within 1.1 x the K-th true distance, / K",
        |r| r.search.quality.recall_large_epsilon
    ),
    metric!(
        "relative_distance_error",
        "rel",
        "",
        Lower,
        4,
        false,
        "ann-benchmarks rel: sum of returned distances / sum of true distances over all queries and the first K ranks (inf: a rank left empty or repeated)",
        |r| r.search.quality.relative_distance_error
    ),
    metric!(
        "recall_easy",
        "recall easy",
        "",
        Higher,
        4,
        false,
        "recall@K of the easiest third of the queries (LID at K up to its first tercile)",
        |r| band(r, "easy").and_then(|b| b.recall)
    ),
    metric!(
        "recall_medium",
        "recall medium",
        "",
        Higher,
        4,
        false,
        "recall@K of the middle third of the queries by LID at K",
        |r| band(r, "medium").and_then(|b| b.recall)
    ),
    metric!(
        "recall_hard",
        "recall hard",
        "",
        Higher,
        4,
        false,
        "recall@K of the hardest third of the queries (LID at K above its second tercile)",
        |r| band(r, "hard").and_then(|b| b.recall)
    ),
    metric!(
        "p50_easy_ms",
        "p50 easy",
        "ms",
        Lower,
        3,
        false,
        "median latency of the easiest third of the queries by LID at K",
        |r| band(r, "easy").and_then(|b| b.p50_ms)
    ),
    metric!(
        "p50_medium_ms",
        "p50 medium",
        "ms",
        Lower,
        3,
        false,
        "median latency of the middle third of the queries by LID at K",
        |r| band(r, "medium").and_then(|b| b.p50_ms)
    ),
    metric!(
        "p50_hard_ms",
        "p50 hard",
        "ms",
        Lower,
        3,
        false,
        "median latency of the hardest third of the queries by LID at K",
        |r| band(r, "hard").and_then(|b| b.p50_ms)
    ),
];

/// A difficulty band of the row's search.
fn band<'a>(row: &Row<'a>, name: &str) -> Option<&'a crate::metrics::bands::Band> {
    row.search
        .difficulty_bands
        .as_ref()
        .and_then(|b| b.band(name))
}

/// A `--repeat` summary figure of the row's search.
fn repeat_figure<'a>(row: &Row<'a>, name: &str) -> Option<&'a crate::results::RepeatFigure> {
    row.search.repeats.as_ref().and_then(|r| r.figure(name))
}

/// Looks a metric up by key.
pub fn find(key: &str) -> Option<&'static MetricDef> {
    METRICS.iter().find(|m| m.key == key)
}

/// Formats a value with the metric's precision, `inf` for +inf, `-` when absent.
pub fn format_value(m: &MetricDef, v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{:.*}", m.decimals, x),
        // ann-benchmarks' `rel` is +inf for a list with an empty rank: say so, not "-".
        Some(x) if x == f64::INFINITY => "inf".to_string(),
        _ => "-".to_string(),
    }
}

/// All report rows of a run, in order: each search with the write step it follows.
pub fn rows(configs: &[ConfigRun]) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    for c in configs {
        let mut build = None;
        let mut mutation = None;
        for step in &c.steps {
            match step {
                Step::Build(b) => {
                    build = Some(b);
                    mutation = None;
                }
                Step::Mutation(m) => {
                    build = None;
                    mutation = Some(m);
                }
                // Its figures are its own (not a search row's); the searches after it follow
                // a changed collection, like those after a write step.
                Step::Stream(_) => {
                    build = None;
                    mutation = None;
                }
                Step::Search(s) => out.push(Row {
                    config: c,
                    build,
                    mutation,
                    search: s,
                }),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A search after a mutation must not repeat the build's time, size and RSS as if they
    /// described the changed collection (the first report rows did).
    #[test]
    fn build_figures_appear_only_on_the_search_after_the_build() {
        let json = serde_json::json!({
            "build_params": {},
            "steps": []
        });
        let mut config: ConfigRun = serde_json::from_value(json).unwrap();
        let build: BuildStep = serde_json::from_value(serde_json::json!({
            "points": 10, "batch_size": 10, "total_s": 2.0, "insert_s": 1.0,
            "ready_wait_s": 1.0, "vectors_per_s": 5.0,
            "batch_latency": crate::metrics::latency::LatencySummary::default(),
            "index": {"indexed_vectors": 10, "points": 10, "may_full_scan": false, "details": {}},
            "resources": {"client": crate::resources::ResourceStats::default()}
        }))
        .unwrap();
        let search: SearchStep = serde_json::from_value(serde_json::json!({
            "runbook_step": 2, "after": "build", "search_params": {}, "mode": "single",
            "warmup_queries": 0,
            "quality": crate::metrics::quality::QualitySummary::default(),
            "latency": crate::metrics::latency::LatencySummary::default(),
            "qps": 1.0, "qps_from_mean_latency": 1.0, "wall_s": 1.0, "live_points": 10,
            "stale_hits": 0, "ghost_hits": 0,
            "resources": {"client": crate::resources::ResourceStats::default()},
            "sidecar_step": 0
        }))
        .unwrap();
        let mut after_delete = search.clone();
        after_delete.after = "delete".into();
        let mutation: MutationStep = serde_json::from_value(serde_json::json!({
            "kind": "delete", "runbook_step": 3, "points": 1, "mode": "single", "batch_size": 1,
            "latency": crate::metrics::latency::LatencySummary::default(),
            "total_s": 0.1, "vectors_per_s": 10.0,
            "visibility": {"samples": 0, "visible": 0, "mean_ms": 0.0, "max_ms": 0.0, "bound_s": 1.0},
            "ready_wait_s": 0.0,
            "index": {"indexed_vectors": 9, "points": 9, "may_full_scan": false, "details": {}},
            "live_points": 9,
            "resources": {"client": crate::resources::ResourceStats::default()}
        }))
        .unwrap();
        config.steps = vec![
            Step::Build(build),
            Step::Search(search),
            Step::Mutation(mutation),
            Step::Search(after_delete),
        ];
        let configs = [config];
        let rows = rows(&configs);
        assert_eq!(rows.len(), 2);
        let build_s = find("build_s").unwrap();
        assert_eq!((build_s.value)(&rows[0]), Some(2.0));
        assert_eq!((build_s.value)(&rows[1]), None);
        assert!(rows[1].mutation.is_some() && rows[0].mutation.is_none());
    }

    #[test]
    fn keys_are_unique() {
        for (i, a) in METRICS.iter().enumerate() {
            for b in &METRICS[i + 1..] {
                assert_ne!(a.key, b.key);
            }
        }
        assert!(find("recall").is_some());
        assert!(find("nope").is_none());
    }
}
