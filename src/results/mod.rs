//! The result model: one JSON document per run, plus a sidecar of per-query results.
//!
//! The document is rewritten atomically after every completed step, so a run that dies
//! part-way still leaves a valid file holding the steps that finished, with its status saying
//! why it stopped; [`run_files`] keeps it and the sidecar in step with each other.

pub mod compare;
pub mod eval_compare;
pub mod eval_pairwise;
mod file;
pub mod gate;
pub mod histlog;
pub mod load;
pub mod lock;
pub mod manifest;
pub mod run_files;
pub mod settings;
pub mod sidecar;
mod start;
mod stream;
pub mod warnings;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::{Footprint, IndexReport, SourcedBytes};
use crate::metrics::bands::DifficultyBands;
use crate::metrics::latency::{LatencySummary, null_is_nan};
use crate::metrics::quality::QualitySummary;
use crate::params::ParamMap;
use crate::resources::PhaseResources;
pub use file::ResultFileError;
pub use manifest::Manifest;
pub use stream::{StageRecall, StreamFreshness, StreamSecond, StreamStep};
use warnings::Warning;

/// Version tag of the JSON layout; bumped on incompatible changes.
pub const SCHEMA: &str = "ragdbeval.result/1";

/// State of a run as recorded in its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Still going (the file is an intermediate snapshot).
    Running,
    Completed,
    /// Stopped by an error; finished steps are kept.
    Failed,
    /// Stopped by Ctrl-C or SIGTERM; finished steps are kept.
    Interrupted,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunStatus {
    pub state: RunState,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    /// Each time the run was continued with `bench --resume`, oldest first (absent: it ran
    /// in one go).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub resumed: Vec<Resumption>,
    /// Why the run's figures must not be used, if anything makes it invalid (an engine that
    /// broke a filter). Empty: valid.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub invalid: Vec<String>,
}

/// One continuation of a run by `bench --resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resumption {
    /// When it was resumed (RFC 3339, UTC).
    pub at: String,
    /// How the earlier attempt had ended (`failed`, `interrupted`, or `running` for a
    /// process that was killed).
    pub previous_state: RunState,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub previous_error: Option<String>,
    /// Measured steps kept from the earlier attempts (all configurations).
    pub steps_kept: usize,
    /// Options given again on resuming (`--url`, `--timeout`), as given.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub overrides: Vec<String>,
}

/// The dataset as used (after `--limit` / `--max-queries`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatasetInfo {
    pub name: String,
    pub source: String,
    /// The file's SHA-256, or for several files the SHA-256 of their lower-case hex digests
    /// concatenated in the order of `files`.
    pub sha256: String,
    /// Each source file (path as loaded, bytes, SHA-256), in the order `sha256` hashes them;
    /// empty for a generated dataset and in results written before it was recorded.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub files: Vec<crate::dataset::FileDigest>,
    pub train: usize,
    pub dim: usize,
    pub queries: usize,
    pub distance: String,
    pub ground_truth_depth: usize,
    pub ground_truth_source: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub limit: Option<usize>,
    /// The relevance judgments the searches were also scored against, if the dataset has them.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub judgments: Option<JudgmentsInfo>,
    /// The sparse vectors (and texts) a sparse or hybrid run retrieved with.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub lexical: Option<LexicalInfo>,
}

/// A dataset's sparse side as a sparse or hybrid run records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LexicalInfo {
    /// Dimensions of the sparse vectors (a BM25 encoding's vocabulary).
    pub dim: usize,
    /// Stored entries of the base rows kept, and of the queries kept.
    pub base_nnz: usize,
    pub query_nnz: usize,
    /// What made the vectors (`sparse/encoding.json`), or null.
    pub encoding: serde_json::Value,
    /// Whether the rows' texts were there (an engine that analyses text reads them).
    pub texts: bool,
    pub files: Vec<crate::dataset::FileDigest>,
}

/// A dataset's relevance judgments as a result records them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JudgmentsInfo {
    pub file: crate::dataset::FileDigest,
    /// Judged queries among the queries the run kept.
    pub queries: usize,
    /// Judged queries beyond them (`--queries`), left out.
    pub dropped_queries: usize,
}

/// A search step's answers scored against the dataset's relevance judgments with `eval`'s
/// code and trec_eval's conventions (linear gain, means over the judged queries), beside the
/// same figures for the exact top-K of the step: the ceiling an approximate search can reach.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EndTask {
    /// Judged queries the means average over.
    pub queries: usize,
    /// `eval`'s metric names (`ndcg@10`, `recall@100`, `mrr@10`, `hit@10`, `map@10`) at 10
    /// and at the search's K (only depths up to K).
    pub metrics: BTreeMap<String, f64>,
    /// The same metrics for the exact top-K.
    pub exact: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineInfo {
    pub name: String,
    pub version: String,
    pub in_process: bool,
    /// Engine-reported facts (collection info, telemetry).
    #[serde(default)]
    pub details: serde_json::Map<String, serde_json::Value>,
}

/// The bulk load and index build.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BuildStep {
    pub points: usize,
    pub batch_size: usize,
    /// Load plus index-ready wait.
    pub total_s: f64,
    pub insert_s: f64,
    pub ready_wait_s: f64,
    /// Points ÷ `total_s` (load plus index-ready wait), as for mutation steps; NaN (`null`)
    /// when no time was measured.
    #[serde(deserialize_with = "null_is_nan")]
    pub vectors_per_s: f64,
    /// Points ÷ `insert_s` (the load calls alone), as `write_vectors_per_s` of mutations.
    #[serde(default, deserialize_with = "null_is_nan")]
    pub write_vectors_per_s: f64,
    /// Latency of each bulk-load request.
    pub batch_latency: LatencySummary,
    pub index: IndexReport,
    /// The two size figures after the build, index structure and total footprint, each with
    /// its source or the reason it was not measured.
    #[serde(default)]
    pub footprint: Footprint,
    /// `footprint.total` ÷ points: what each vector costs, everything included.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub total_bytes_per_vector: Option<f64>,
    /// `footprint.index` ÷ points: the index structure's share per vector.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub index_bytes_per_vector: Option<f64>,
    /// Older files only: one size whose meaning differed per engine (see
    /// its `source`). Never written now and not shown under the new labels.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub index_size: Option<SourcedBytes>,
    /// Older files only: `index_size` ÷ points.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub bytes_per_vector: Option<f64>,
    pub resources: PhaseResources,
    /// `--repeat N --repeat-build`: the build time (`total_s`) of every trial, this one first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rebuild_s: Vec<f64>,
}

/// How long a write took to become visible to search (read-after-write), over a sample of
/// the step's operations.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Visibility {
    /// Operations sampled.
    pub samples: usize,
    /// Sampled operations seen by search within the bound.
    pub visible: usize,
    pub mean_ms: f64,
    pub max_ms: f64,
    /// How long each sample was polled before giving up.
    pub bound_s: f64,
    /// Writes passed over as samples because no probe could observe them: the point does not
    /// rank in the top k for its own vector (common under `dot`, or among many duplicates).
    #[serde(default)]
    pub unobservable: usize,
}

/// An insert, update or delete step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MutationStep {
    /// `insert`, `update` or `delete`.
    pub kind: String,
    /// Position of the step in the runbook (1-based).
    pub runbook_step: usize,
    pub points: usize,
    /// `single` (one call per point) or `batch`.
    pub mode: String,
    pub batch_size: usize,
    /// Latency of each call (one point in single mode, one batch in batch mode).
    pub latency: LatencySummary,
    /// Sum of write-call times plus the index-ready wait after them (read-after-write polling
    /// excluded), like the build's `total_s`. Older result files held the call times only
    /// (now `write_s`).
    pub total_s: f64,
    /// Points ÷ `total_s`: the same definition as the build's `vectors_per_s` (NaN, `null`,
    /// when no time was measured).
    #[serde(deserialize_with = "null_is_nan")]
    pub vectors_per_s: f64,
    /// Sum of write-call times alone.
    #[serde(default)]
    pub write_s: f64,
    /// Points ÷ `write_s`.
    #[serde(default, deserialize_with = "null_is_nan")]
    pub write_vectors_per_s: f64,
    /// Ids returned by a read-after-write probe that were deleted by an earlier step.
    #[serde(default)]
    pub stale_hits: usize,
    pub visibility: Visibility,
    /// Index-ready wait after the step.
    pub ready_wait_s: f64,
    pub index: IndexReport,
    /// The two size figures after the step (see [`BuildStep::footprint`]).
    #[serde(default)]
    pub footprint: Footprint,
    /// Points live after the step.
    pub live_points: usize,
    /// `footprint.total` ÷ live points.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub total_bytes_per_live_vector: Option<f64>,
    /// Older files only: one size whose meaning differed per engine.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub index_size: Option<SourcedBytes>,
    /// Older files only: `index_size` ÷ live points.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub bytes_per_live_vector: Option<f64>,
    pub resources: PhaseResources,
}

/// One search configuration measured over the query set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchStep {
    /// Position of the step in the runbook (1-based).
    pub runbook_step: usize,
    /// The step it follows (`build`, `insert`, `update`, `delete`).
    pub after: String,
    pub search_params: ParamMap,
    /// `single` (one call per query) or `batch` (one call for all queries).
    pub mode: String,
    pub warmup_queries: usize,
    pub quality: QualitySummary,
    pub latency: LatencySummary,
    /// Timed queries ÷ wall time of the timed loop.
    pub qps: f64,
    /// 1000 ÷ mean latency in ms (single-thread throughput).
    pub qps_from_mean_latency: f64,
    pub wall_s: f64,
    /// Points live in the engine when this step ran.
    pub live_points: usize,
    /// Results whose id was never inserted or has been deleted.
    pub stale_hits: usize,
    /// Updated ids returned where their old vector, not their current one, would rank.
    pub ghost_hits: usize,
    /// Engines that promise exact answers (`exact`): queries whose answer differs from the
    /// ground truth in any id or distance bit. Anything but 0 means the truth or the engine is
    /// wrong. Absent for other engines.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub truth_mismatches: Option<usize>,
    pub resources: PhaseResources,
    /// Index of this step's rows in the per-query sidecar.
    pub sidecar_step: usize,
    /// Latency of the very first query after the index was built or changed (before warm-up).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cold_start_ms: Option<f64>,
    /// When latency settled (rolling p50 within 10 % of steady state).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub warmup_settle: Option<WarmupSettle>,
    /// Load levels measured with these search parameters (closed and open loop).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load: Vec<load::LoadLevel>,
    /// `--rate-sweep`: the highest rate whose p99 stayed within the SLO.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub max_rate_within_slo: Option<f64>,
    /// `--repeat N`: every trial of the timed loop and their summary. The step's own figures
    /// (and its sidecar lines) are the first trial's.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub repeats: Option<Repeats>,
    /// `--filter`: the level this measurement searched with, and what the filter did.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub filter: Option<FilterOutcome>,
    /// Recall and latency of the easy, medium and hard thirds of the queries (by LID at K).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub difficulty_bands: Option<DifficultyBands>,
    /// The retrieval task against the dataset's relevance judgments, when it has them.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub end_task: Option<EndTask>,
}

/// A filtered search measurement: which predicates, how many points they let through, and
/// whether the engine kept to them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilterOutcome {
    /// Index of the level in the run's filter settings (`settings.filter.levels`).
    pub level: usize,
    /// `label 1%`, `tenant 1/1000`, `color = "red"`, ...
    pub name: String,
    /// The fraction of points each predicate was generated to pass (absent for literal
    /// predicates).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub target_selectivity: Option<f64>,
    /// The mean fraction of the live points that passed a query's predicate at this step.
    pub selectivity: f64,
    /// Returned ids that do not satisfy their query's predicate. Any makes the run invalid.
    pub violations: usize,
    /// Queries with at least one violation.
    pub violating_queries: usize,
    /// Queries answered with fewer than K results although at least K live points passed
    /// (or fewer than all of them, when fewer than K passed).
    pub short_results: usize,
}

/// The figures of one timed trial.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub qps: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
}

impl Trial {
    /// The figures of a search step's timed loop.
    pub fn of(step: &SearchStep) -> Trial {
        Trial::from_summary(&step.latency, step.qps)
    }

    /// A trial's figures from its latency summary and throughput.
    pub fn from_summary(latency: &crate::metrics::latency::LatencySummary, qps: f64) -> Trial {
        Trial {
            qps,
            p50_ms: latency.p50_ms,
            p90_ms: latency.p90_ms,
            p95_ms: latency.p95_ms,
            p99_ms: latency.p99_ms,
            p999_ms: latency.p999_ms,
        }
    }

    /// (name, value) of each figure, in a fixed order.
    pub fn figures(&self) -> [(&'static str, f64); 6] {
        [
            ("qps", self.qps),
            ("p50_ms", self.p50_ms),
            ("p90_ms", self.p90_ms),
            ("p95_ms", self.p95_ms),
            ("p99_ms", self.p99_ms),
            ("p999_ms", self.p999_ms),
        ]
    }
}

/// Repeated trials of one search measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repeats {
    pub trials: Vec<Trial>,
    /// Per figure: the median over trials, its 95 % bootstrap interval (10,000 resamples of
    /// the trials, fixed seed), and the coefficient of variation.
    pub summary: Vec<RepeatFigure>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatFigure {
    pub figure: String,
    pub median: f64,
    pub ci95: Option<(f64, f64)>,
    pub cv: Option<f64>,
}

impl Repeats {
    /// The summary of `trials`.
    pub fn from_trials(trials: Vec<Trial>) -> Repeats {
        use crate::metrics::stats::{bootstrap_median_ci, coefficient_of_variation, median};
        let names = Trial::default().figures().map(|(n, _)| n);
        let summary = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let values: Vec<f64> = trials.iter().map(|t| t.figures()[i].1).collect();
                let mut rng = crate::rng::SplitMix64::new(0x5eed_c0de);
                RepeatFigure {
                    figure: name.to_string(),
                    median: median(&mut values.clone()),
                    ci95: bootstrap_median_ci(&values, 10_000, 0.95, |n| {
                        rng.below(n as u64) as usize
                    }),
                    cv: coefficient_of_variation(&values),
                }
            })
            .collect();
        Repeats { trials, summary }
    }

    pub fn figure(&self, name: &str) -> Option<&RepeatFigure> {
        self.summary.iter().find(|f| f.figure == name)
    }
}

/// How many queries, and how long, until latency settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarmupSettle {
    pub queries: usize,
    pub ms: f64,
    /// False when it never settled within the measured queries.
    pub settled: bool,
}

/// The recall/QPS curve of all configurations measured at one runbook step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepCurve {
    pub runbook_step: usize,
    pub after: String,
    /// The filter level of the searches on this curve, if filtered.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub filter: Option<String>,
    #[serde(flatten)]
    pub curve: crate::metrics::pareto::Curve,
}

/// One measured step of a configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Step {
    Build(BuildStep),
    Search(SearchStep),
    Mutation(MutationStep),
    Stream(StreamStep),
}

/// Everything measured for one set of build parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConfigRun {
    pub build_params: ParamMap,
    /// The search parameters of this configuration's stream steps, when a runbook with
    /// stream steps is swept over several search-parameter sets: a stream changes the
    /// collection as it runs, so each set gets its own run of the runbook from a fresh build.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stream_search_params: Option<ParamMap>,
    pub steps: Vec<Step>,
    /// Set when this configuration stopped on an error.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

impl RunResult {
    /// How reports name the run's series: the engine, and for a sparse or hybrid run the
    /// retrieval too (`qdrant-edge hybrid`), so that it is not drawn as the dense one.
    pub fn series_name(&self) -> String {
        let retrieval = self
            .configs
            .first()
            .and_then(|c| c.build_params.get("retrieval"))
            .filter(|_| self.dataset.lexical.is_some());
        match retrieval {
            Some(r) => format!("{} {r}", self.engine.name),
            None => self.engine.name.clone(),
        }
    }
}

impl ConfigRun {
    pub fn build(&self) -> Option<&BuildStep> {
        self.steps.iter().find_map(|s| match s {
            Step::Build(b) => Some(b),
            _ => None,
        })
    }

    pub fn mutations(&self) -> impl Iterator<Item = &MutationStep> {
        self.steps.iter().filter_map(|s| match s {
            Step::Mutation(m) => Some(m),
            _ => None,
        })
    }

    pub fn streams(&self) -> impl Iterator<Item = &StreamStep> {
        self.steps.iter().filter_map(|s| match s {
            Step::Stream(t) => Some(t),
            _ => None,
        })
    }

    pub fn searches(&self) -> impl Iterator<Item = &SearchStep> {
        self.steps.iter().filter_map(|s| match s {
            Step::Search(q) => Some(q),
            _ => None,
        })
    }
}

/// A whole run: what was measured, on what, how.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: String,
    pub status: RunStatus,
    pub manifest: Manifest,
    pub dataset: DatasetInfo,
    pub engine: EngineInfo,
    pub configs: Vec<ConfigRun>,
    #[serde(default)]
    pub warnings: Vec<Warning>,
    /// Pareto frontier and QPS at recall targets, per search step of the runbook.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curves: Vec<StepCurve>,
    /// File name (next to this one) of the per-query results.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sidecar: Option<String>,
    /// The dataset's element type and what the engine stored it as (absent in files from
    /// in older files, whose engines all stored float32).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub element_type: Option<ElementTypes>,
}

/// `"element_type": {"dataset": "uint8", "engine": "uint8"}`, or with the engine's
/// conversion stated: `"engine": "float32 (converted from uint8, exact)"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElementTypes {
    /// What the dataset's components are (`float32`, `uint8`, `int8`).
    pub dataset: String,
    /// What the engine stored them as, set once a build has run. A build sweep whose
    /// configurations stored different types lists each once, separated by `; `.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub engine: Option<String>,
}

impl ElementTypes {
    /// Records that a build stored the dataset's vectors as `stored`.
    pub fn record_engine(&mut self, stored: &str) {
        match &mut self.engine {
            None => self.engine = Some(stored.to_string()),
            Some(all) if all.split("; ").any(|s| s == stored) => {}
            Some(all) => {
                all.push_str("; ");
                all.push_str(stored);
            }
        }
    }
}

#[cfg(test)]
mod footprint_tests {
    use super::*;

    fn step(footprint: Footprint) -> BuildStep {
        BuildStep {
            points: 10,
            batch_size: 5,
            total_s: 1.0,
            insert_s: 1.0,
            ready_wait_s: 0.0,
            vectors_per_s: 10.0,
            write_vectors_per_s: 10.0,
            batch_latency: Default::default(),
            index: Default::default(),
            footprint,
            total_bytes_per_vector: None,
            index_bytes_per_vector: None,
            index_size: None,
            bytes_per_vector: None,
            resources: Default::default(),
            rebuild_s: Vec::new(),
        }
    }

    /// A `ragdbeval.result/1` build step written before the two-figure footprint still loads;
    /// its one engine-specific size stays where it was, not under the new labels.
    #[test]
    fn old_index_size_still_loads() {
        let mut json = serde_json::to_value(step(Footprint::default())).unwrap();
        let obj = json.as_object_mut().unwrap();
        obj.remove("footprint");
        obj.insert(
            "index_size".into(),
            serde_json::json!({ "bytes": 4096, "source": "shard directory" }),
        );
        obj.insert("bytes_per_vector".into(), serde_json::json!(409.6));
        let old: BuildStep = serde_json::from_value(json).unwrap();
        assert_eq!(old.index_size.as_ref().map(|s| s.bytes), Some(4096));
        assert_eq!(old.bytes_per_vector, Some(409.6));
        assert_eq!(old.footprint, Footprint::default());
        assert_eq!(old.total_bytes_per_vector, None);
    }

    #[test]
    fn footprint_round_trips_with_reasons() {
        let f = Footprint::new(
            Err("no index structure".into()),
            Ok(SourcedBytes {
                bytes: 400,
                source: "in memory".into(),
            }),
        );
        let json = serde_json::to_string(&step(f.clone())).unwrap();
        assert!(!json.contains("\"index_size\""), "{json}");
        let back: BuildStep = serde_json::from_str(&json).unwrap();
        assert_eq!(back.footprint, f);
        assert_eq!(
            back.footprint.index_unmeasured.as_deref(),
            Some("no index structure")
        );
    }
}
