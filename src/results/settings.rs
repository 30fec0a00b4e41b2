//! The harness settings a run was made with: `manifest.settings` of a result file, read by
//! `compare`, `verify`, `--resume` and the report.
//!
//! Every field is optional when read: a file written by another ragdbeval version, or by a
//! sparse or hybrid run (which has no runbook file, filter or load levels), lacks some. Fields
//! are declared in alphabetical order, the order the files have always had them in; keys this
//! version does not know are kept as they are (`other`).

use serde::{Deserialize, Serialize};

use crate::filter::FilterSpec;
use crate::runbook::StepSpec;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Points per write call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<usize>,
    /// `--build-param` as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_overrides: Option<Vec<String>>,
    /// `--concurrency`: client threads of the load levels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<Vec<usize>>,
    /// The filter: enough to make the same attributes and predicates again. Written as `null`
    /// for a run without one.
    #[serde(default)]
    pub filter: Option<FilterSpec>,
    /// The depth the ground truth was computed to (`verify` uses it, and so the same cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ground_truth_k: Option<usize>,
    /// Results asked for per query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
    /// `--duration` of each load level, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_duration_s: Option<f64>,
    /// `single` (one query per call) or `batch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The engine's named parameter set (`--set`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param_set: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_sweep: Option<bool>,
    /// `--rate`: the open-loop arrival rates of the load levels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rates: Option<Vec<f64>>,
    /// The depth recall is measured against (`relevant` ≥ `k`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relevant: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_build: Option<bool>,
    /// `sparse` or `hybrid` for those runs; absent for a dense one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runbook: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runbook_hash: Option<String>,
    /// The runbook's steps as run (`verify` replays them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runbook_steps: Option<Vec<StepSpec>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_interval_ms: Option<u64>,
    /// `--search-param` as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_overrides: Option<Vec<String>>,
    /// The latency objective of the rate sweep, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload_parallel: Option<usize>,
    /// The server's URL, its secrets redacted; `null` for an in-process engine.
    #[serde(default)]
    pub url: Option<String>,
    /// Queries run before the timed ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    /// Settings this version does not know (a newer version's), kept as they are.
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

impl Settings {
    /// The settings as a JSON object, one entry per setting recorded.
    pub fn to_map(&self) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_written_in_the_order_of_a_sorted_map() {
        let every = Settings {
            batch_size: Some(1),
            build_overrides: Some(vec!["m=8".into()]),
            concurrency: Some(vec![1]),
            filter: None,
            ground_truth_k: Some(100),
            k: Some(10),
            load_duration_s: Some(1.0),
            mode: Some("single".into()),
            param_set: Some("default".into()),
            rate_sweep: Some(false),
            rates: Some(vec![10.0]),
            relevant: Some(10),
            repeat: Some(1),
            repeat_build: Some(false),
            retrieval: Some("hybrid".into()),
            runbook: Some("default".into()),
            runbook_hash: Some("00".into()),
            runbook_steps: Some(Vec::new()),
            sample_interval_ms: Some(100),
            search_overrides: Some(Vec::new()),
            slo_ms: Some(10.0),
            upload_parallel: Some(1),
            url: Some("http://127.0.0.1:1".into()),
            warmup: Some(0),
            workers: Some(1),
            other: serde_json::Map::new(),
        };
        let text = serde_json::to_string(&every).unwrap();
        let sorted: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).unwrap();
        assert_eq!(sorted.len(), 25);
        assert_eq!(text, serde_json::to_string(&sorted).unwrap());
        assert_eq!(serde_json::from_str::<Settings>(&text).unwrap(), every);

        let settings = Settings {
            k: Some(10),
            warmup: Some(0),
            batch_size: Some(64),
            url: None,
            retrieval: Some("sparse".into()),
            ..Settings::default()
        };
        let text = serde_json::to_string(&settings).unwrap();
        let sorted: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).unwrap();
        assert_eq!(text, serde_json::to_string(&sorted).unwrap());
        assert_eq!(
            text,
            r#"{"batch_size":64,"filter":null,"k":10,"retrieval":"sparse","url":null,"warmup":0}"#
        );
    }

    #[test]
    fn unknown_and_missing_settings_are_kept_and_absent() {
        let read: Settings =
            serde_json::from_str(r#"{"k": 5, "from_a_newer_version": [1, 2]}"#).unwrap();
        assert_eq!(read.k, Some(5));
        assert_eq!(read.relevant, None);
        assert_eq!(
            read.other["from_a_newer_version"],
            serde_json::json!([1, 2])
        );
        let again = serde_json::to_string(&read).unwrap();
        assert!(again.contains(r#""from_a_newer_version":[1,2]"#), "{again}");
    }
}
