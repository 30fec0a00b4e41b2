//! The entries of the metric registry, in report order: what each figure is called, what it
//! means and how it is read from a report row. The registry's types, lookups and the macros
//! that write an entry are in its parent module.

use super::{Better, MetricDef, band, repeat_figure, task};

const MB: f64 = 1024.0 * 1024.0;

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
    task_metric!(
        "task_ndcg_at_10",
        "task NDCG@10",
        true,
        "retrieval task: NDCG@10 against the dataset's relevance judgments (trec_eval -c)",
        false,
        "ndcg",
        Some(10)
    ),
    task_metric!(
        "task_ndcg_at_10_exact",
        "exact NDCG@10",
        true,
        "retrieval task: NDCG@10 of the exact top-K, the ceiling of the setting's NDCG@10",
        true,
        "ndcg",
        Some(10)
    ),
    task_metric!(
        "task_recall_at_k",
        "task recall@K",
        false,
        "retrieval task: share of the judged relevant documents in the first K results",
        false,
        "recall",
        None
    ),
    task_metric!(
        "task_recall_at_k_exact",
        "exact task recall@K",
        false,
        "retrieval task: recall@K of the exact top-K",
        true,
        "recall",
        None
    ),
    task_metric!(
        "task_mrr_at_10",
        "task MRR@10",
        false,
        "retrieval task: mean reciprocal rank of the first relevant result in the top 10",
        false,
        "mrr",
        Some(10)
    ),
    task_metric!(
        "task_hit_at_10",
        "task hit@10",
        false,
        "retrieval task: share of queries with a relevant result in the top 10",
        false,
        "hit",
        Some(10)
    ),
];
