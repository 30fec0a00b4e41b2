//! The metric registry: every reported figure has one entry (key, header, description, unit,
//! direction, how to read it from a result). The terminal table, CSV, Markdown and plots all
//! iterate this list, so a new metric appears everywhere at once.

use crate::results::{BuildStep, ConfigRun, SearchStep};

/// Whether larger or smaller values are better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// One row of a report: a search step with the build it ran on.
pub struct Row<'a> {
    pub config: &'a ConfigRun,
    pub build: Option<&'a BuildStep>,
    pub search: &'a SearchStep,
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
        "ann-benchmarks recall: results within the r-th true distance + 1e-3",
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
        "mean average precision at K",
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
        "build_s",
        "build s",
        "s",
        Lower,
        2,
        true,
        "bulk load plus index-ready wait",
        |r| r.build.map(|b| b.total_s)
    ),
    metric!(
        "insert_s",
        "load s",
        "s",
        Lower,
        2,
        false,
        "bulk load time",
        |r| r.build.map(|b| b.insert_s)
    ),
    metric!(
        "ready_wait_s",
        "index wait s",
        "s",
        Lower,
        2,
        false,
        "time from end of load until the index was ready",
        |r| r.build.map(|b| b.ready_wait_s)
    ),
    metric!(
        "build_vectors_per_s",
        "load vec/s",
        "1/s",
        Higher,
        0,
        false,
        "points / build time",
        |r| r.build.map(|b| b.vectors_per_s)
    ),
    metric!(
        "index_mb",
        "index MB",
        "MB",
        Lower,
        1,
        true,
        "index size (source in the result file)",
        |r| r
            .build
            .and_then(|b| b.index_size.as_ref())
            .map(|s| s.bytes as f64 / MB)
    ),
    metric!(
        "bytes_per_vector",
        "B/vec",
        "B",
        Lower,
        1,
        false,
        "index size / points",
        |r| r.build.and_then(|b| b.bytes_per_vector)
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
        "build RSS MB",
        "MB",
        Lower,
        1,
        true,
        "peak RSS during the build: the engine's for server engines, else the client's",
        |r| r.build.map(|b| b
            .resources
            .engine
            .as_ref()
            .unwrap_or(&b.resources.client)
            .peak_rss_bytes as f64
            / MB)
    ),
    metric!(
        "engine_peak_rss_mb",
        "engine RSS MB",
        "MB",
        Lower,
        1,
        false,
        "peak RSS of the engine server process tree during the search step",
        |r| r
            .search
            .resources
            .engine
            .as_ref()
            .map(|e| e.peak_rss_bytes as f64 / MB)
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
];

/// Looks a metric up by key.
pub fn find(key: &str) -> Option<&'static MetricDef> {
    METRICS.iter().find(|m| m.key == key)
}

/// Formats a value with the metric's precision, `-` when absent.
pub fn format_value(m: &MetricDef, v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{:.*}", m.decimals, x),
        _ => "-".to_string(),
    }
}

/// All report rows of a run, in order.
pub fn rows(configs: &[ConfigRun]) -> Vec<Row<'_>> {
    configs
        .iter()
        .flat_map(|c| {
            let build = c.build();
            c.searches().map(move |s| Row {
                config: c,
                build,
                search: s,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
