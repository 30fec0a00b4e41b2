//! `streams.csv` of `report --out DIR`: one row per stream step (searches while writes ran),
//! whose figures are not a search row's and so are not in `results.csv`. The same columns,
//! fewer of them, make the stream block of the end-of-run summary. Columns are only ever
//! added at the end.

use super::ExportError;
use crate::params::ParamMapExt;
use crate::results::{ConfigRun, RunResult, StreamStep};

/// One figure of a stream step.
pub struct StreamColumn {
    /// CSV header.
    pub key: &'static str,
    /// Terminal header; `None`: CSV only.
    pub header: Option<&'static str>,
    pub decimals: usize,
    pub value: fn(&StreamStep) -> Option<f64>,
}

const fn column(
    key: &'static str,
    header: Option<&'static str>,
    decimals: usize,
    value: fn(&StreamStep) -> Option<f64>,
) -> StreamColumn {
    StreamColumn {
        key,
        header,
        decimals,
        value,
    }
}

fn stage(t: &StreamStep, stage: u32) -> Option<f64> {
    t.recall_at_stage
        .iter()
        .find(|s| s.stage == stage && s.searches > 0)
        .and_then(|s| s.recall)
}

fn seen(count: usize, value: f64) -> Option<f64> {
    (count > 0).then_some(value)
}

/// Every figure, in column order.
pub const STREAM_COLUMNS: &[StreamColumn] = &[
    column("inserts", Some("ins"), 0, |t| Some(t.inserts as f64)),
    column("updates", Some("upd"), 0, |t| Some(t.updates as f64)),
    column("deletes", Some("del"), 0, |t| Some(t.deletes as f64)),
    column("target_rate", None, 0, |t| t.target_rate),
    column("batch_size", None, 0, |t| Some(t.batch_size as f64)),
    column("duration_s", None, 3, |t| Some(t.duration_s)),
    column("write_points_per_s", Some("write pts/s"), 0, |t| {
        Some(t.write_points_per_s)
    }),
    column("write_p50_ms", None, 3, |t| Some(t.write_latency.p50_ms)),
    column("write_p99_ms", Some("write p99 ms"), 3, |t| {
        Some(t.write_latency.p99_ms)
    }),
    column("searchers", None, 0, |t| Some(t.searchers as f64)),
    column("searches", None, 0, |t| Some(t.searches as f64)),
    column("qps", Some("QPS"), 0, |t| Some(t.qps)),
    column("p50_ms", None, 3, |t| Some(t.latency.p50_ms)),
    column("p99_ms", Some("p99 ms"), 3, |t| Some(t.latency.p99_ms)),
    column("p999_ms", None, 3, |t| Some(t.latency.p999_ms)),
    column("recall", Some("recall"), 4, |t| Some(t.recall)),
    column("recall_at_50", Some("@50%"), 4, |t| stage(t, 50)),
    column("recall_at_80", Some("@80%"), 4, |t| stage(t, 80)),
    column("recall_at_100", Some("@100%"), 4, |t| stage(t, 100)),
    column("stale_hits", Some("stale"), 0, |t| {
        Some(t.stale_hits as f64)
    }),
    column("searches_with_stale_hits", None, 0, |t| {
        Some(t.searches_with_stale_hits as f64)
    }),
    column("visible_p50_ms", Some("visible p50 ms"), 3, |t| {
        seen(t.freshness.puts_seen, t.freshness.put_delay.p50_ms)
    }),
    column("visible_p99_ms", None, 3, |t| {
        seen(t.freshness.puts_seen, t.freshness.put_delay.p99_ms)
    }),
    column("gone_p50_ms", Some("gone p50 ms"), 3, |t| {
        seen(t.freshness.deletes_seen, t.freshness.delete_delay.p50_ms)
    }),
    column("gone_p99_ms", None, 3, |t| {
        seen(t.freshness.deletes_seen, t.freshness.delete_delay.p99_ms)
    }),
    column("freshness_not_seen", None, 0, |t| {
        Some(t.freshness.not_seen as f64)
    }),
    column("freshness_overtaken", None, 0, |t| {
        Some(t.freshness.overtaken as f64)
    }),
    column("freshness_unobservable", None, 0, |t| {
        Some(t.freshness.unobservable as f64)
    }),
    column("index_lag_max", Some("index lag"), 0, |t| {
        t.index_lag_max.map(|v| v as f64)
    }),
    column("index_lag_after", None, 0, |t| {
        t.index_lag_after.map(|v| v as f64)
    }),
    column("client_cpu_percent", None, 1, |t| {
        Some(t.resources.client.mean_cpu_percent)
    }),
    column("server_cpu_percent", None, 1, |t| {
        t.resources.engine.as_ref().map(|e| e.mean_cpu_percent)
    }),
    column("live_points", None, 0, |t| Some(t.live_points as f64)),
    column("truth_s", None, 3, |t| Some(t.truth_s)),
];

/// The identity of a stream row: step, build and search parameters.
pub fn identity(config: &ConfigRun, t: &StreamStep) -> [String; 3] {
    [
        format!("{}:stream", t.runbook_step),
        config.build_params.label(),
        t.search_params.label(),
    ]
}

/// A value with the column's precision, `-` when absent.
pub fn format_cell(c: &StreamColumn, t: &StreamStep) -> String {
    match (c.value)(t) {
        Some(x) if x.is_finite() => format!("{:.*}", c.decimals, x),
        _ => "-".into(),
    }
}

/// The file; `None` when no run has a stream step.
pub fn render(runs: &[(&std::path::Path, &RunResult)]) -> Result<Option<String>, ExportError> {
    let err = |e: &dyn std::fmt::Display| ExportError {
        format: "streams.csv",
        message: e.to_string(),
    };
    if !runs
        .iter()
        .any(|(_, r)| r.configs.iter().any(|c| c.streams().next().is_some()))
    {
        return Ok(None);
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let header: Vec<&str> = ["run", "engine", "dataset", "step", "build", "search"]
        .into_iter()
        .chain(STREAM_COLUMNS.iter().map(|c| c.key))
        .collect();
    w.write_record(&header).map_err(|e| err(&e))?;
    for (path, run) in runs {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for config in &run.configs {
            for t in config.streams() {
                let mut record = vec![
                    stem.clone(),
                    run.engine.name.clone(),
                    run.dataset.name.clone(),
                ];
                record.extend(identity(config, t));
                record.extend(STREAM_COLUMNS.iter().map(|c| match (c.value)(t) {
                    // Full precision: the file is for machines.
                    Some(x) if x.is_finite() => x.to_string(),
                    _ => String::new(),
                }));
                w.write_record(&record).map_err(|e| err(&e))?;
            }
        }
    }
    let bytes = w.into_inner().map_err(|e| err(&e))?;
    String::from_utf8(bytes).map(Some).map_err(|e| err(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys are unique and every terminal header names a CSV column.
    #[test]
    fn keys_are_unique() {
        let mut keys: Vec<&str> = STREAM_COLUMNS.iter().map(|c| c.key).collect();
        keys.sort_unstable();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n);
    }

    /// A stage without searches and freshness with no sample are empty, not zero.
    #[test]
    fn absent_figures_are_empty() {
        let t = StreamStep {
            recall_at_stage: vec![crate::results::StageRecall {
                stage: 50,
                searches: 0,
                recall: None,
            }],
            ..StreamStep::default()
        };
        let cell = |key: &str| {
            let c = STREAM_COLUMNS.iter().find(|c| c.key == key).unwrap();
            format_cell(c, &t)
        };
        assert_eq!(cell("recall_at_50"), "-");
        assert_eq!(cell("visible_p50_ms"), "-");
        assert_eq!(cell("index_lag_max"), "-");
        assert_eq!(cell("stale_hits"), "0");
    }
}
