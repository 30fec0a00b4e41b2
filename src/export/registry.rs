//! The metric registry: every reported figure has one entry (key, header, description, unit,
//! direction, how to read it from a result). The terminal table, CSV, Markdown and plots all
//! iterate this list, so a new metric appears everywhere at once.

use crate::engine::Footprint;
use crate::results::{BuildStep, ConfigRun, MutationStep, SearchStep, Step};

/// One registry entry; `$f` reads the figure from a [`Row`].
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

/// A figure of the retrieval task against the dataset's relevance judgments (`eval`'s
/// metric at depth 10, or at K with `None`): of the engine's answers, or with `exact` of the
/// exact top-K. Absent on datasets without judgments.
macro_rules! task_metric {
    ($key:literal, $header:literal, $table:literal, $desc:literal, $exact:literal, $metric:literal, $at:expr) => {
        metric!($key, $header, "", Higher, 4, $table, $desc, |r| {
            task(r, $exact, $metric, $at)
        })
    };
}

mod entries;

pub use entries::METRICS;

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

/// A retrieval-task figure of the row's search: `metric` at depth `at` (the search's K with
/// `None`), of the engine's answers or of the exact top-K.
fn task(row: &Row<'_>, exact: bool, metric: &str, at: Option<usize>) -> Option<f64> {
    let task = row.search.end_task.as_ref()?;
    let depth = at.unwrap_or(row.search.quality.k);
    let figures = if exact { &task.exact } else { &task.metrics };
    figures.get(&format!("{metric}@{depth}")).copied()
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
