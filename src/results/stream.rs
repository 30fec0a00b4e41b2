//! The record of a stream step: searches scored while writes ran, with the stream's
//! freshness, its stages and its timeline.

use serde::{Deserialize, Serialize};

use crate::metrics::latency::{LatencySummary, null_is_nan};
use crate::params::ParamMap;
use crate::resources::PhaseResources;

/// A stream step: searches while writes ran, each search scored against what a correct engine
/// could have returned at some instant between its sending and its answer (see
/// [`crate::groundtruth::stream`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamStep {
    /// Position of the step in the runbook (1-based).
    pub runbook_step: usize,
    pub search_params: ParamMap,
    pub k: usize,
    /// Closed-loop search threads.
    pub searchers: usize,
    /// Target write rate (points per second); `None`: as fast as the engine took them.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub target_rate: Option<f64>,
    /// Points per write call.
    pub batch_size: usize,
    /// Points inserted, updated and deleted.
    pub inserts: usize,
    pub updates: usize,
    pub deletes: usize,
    /// From the first write issued to the last acknowledged.
    pub duration_s: f64,
    /// Points written ÷ `duration_s` (NaN, `null`, when no time passed).
    #[serde(deserialize_with = "null_is_nan")]
    pub write_points_per_s: f64,
    /// Latency of each write call.
    pub write_latency: LatencySummary,
    pub searches: usize,
    /// Searches ÷ `duration_s` (only searches sent while writes ran are counted).
    #[serde(deserialize_with = "null_is_nan")]
    pub qps: f64,
    pub latency: LatencySummary,
    /// Mean over searches of the streaming recall (NaN, `null`, without searches).
    #[serde(deserialize_with = "null_is_nan")]
    pub recall: f64,
    /// Returned ids whose delete was acknowledged before the search was sent.
    pub stale_hits: usize,
    /// Searches with at least one stale hit.
    pub searches_with_stale_hits: usize,
    /// Recall of the searches sent in the tenth of the stream before 50 %, 80 % and 100 % of
    /// the writes were acknowledged: VectorDBBench's stages, scored with the rule above.
    pub recall_at_stage: Vec<StageRecall>,
    /// Per second of the step.
    pub timeline: Vec<StreamSecond>,
    /// Time to compute the streaming ground truth and score every search (not measured time).
    pub truth_s: f64,
    /// How soon sampled writes showed in search while the stream ran.
    #[serde(default)]
    pub freshness: StreamFreshness,
    /// Client and engine resources over the whole step.
    #[serde(default)]
    pub resources: PhaseResources,
    /// Points the engine held but had not indexed yet (its own count, see
    /// [`crate::engine::VectorEngine::index_progress`]): the most seen at a second's end,
    /// and right after the last write. Absent for engines that report no index progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_lag_max: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_lag_after: Option<u64>,
    /// Points live after the step.
    pub live_points: usize,
}

/// Freshness under load: for a sample of a stream step's writes, the time from the write's
/// acknowledgement until a search with the written vector first returns the point (inserts
/// and updates) or a search with its last vector first no longer does (deletes). A probe
/// thread polls every pending sample in turn, beside the searchers, so each time is an upper
/// bound by one probe round.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamFreshness {
    /// Writes sampled (evenly over the stream, at most 100).
    pub samples: usize,
    /// Sampled inserts and updates seen, and their delay.
    pub puts_seen: usize,
    pub put_delay: LatencySummary,
    /// Sampled deletes seen gone, and their delay.
    pub deletes_seen: usize,
    pub delete_delay: LatencySummary,
    /// Samples not seen within `bound_s` of their acknowledgement.
    pub not_seen: usize,
    /// Samples dropped unseen because a later write of the same point (a delete, an update,
    /// an insert again) was sent before they were seen: the search then answers for that one.
    #[serde(default)]
    pub overtaken: usize,
    /// Writes chosen as samples but left out because a search with their vector cannot reveal
    /// them: the point does not rank in the top k for its own vector among the live points
    /// (under `dot`, or among duplicates). Not in `samples`.
    #[serde(default)]
    pub unobservable: usize,
    pub bound_s: f64,
    /// Median time of one probe round (every pending sample searched once): the resolution
    /// of the delays. A fast stream queues many samples at once and lengthens the rounds.
    #[serde(default)]
    pub probe_round_p50_ms: f64,
}

/// Recall at one stage of the stream.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StageRecall {
    /// Percentage of the writes acknowledged (50, 80, 100).
    pub stage: u32,
    pub searches: usize,
    /// Mean recall of those searches; `null` when the stage had none.
    pub recall: Option<f64>,
}

/// One second of a stream step.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamSecond {
    /// Seconds from the step's start (the second `[second, second + 1)`).
    pub second: u64,
    /// Searches sent in this second; without any, their latency and recall are undefined
    /// (NaN, `null` in JSON), as are the write latencies of a second without writes.
    pub searches: usize,
    #[serde(deserialize_with = "null_is_nan")]
    pub p50_ms: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub p99_ms: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub recall: f64,
    pub stale_hits: usize,
    /// Points whose write was acknowledged in this second.
    pub points_written: usize,
    #[serde(deserialize_with = "null_is_nan")]
    pub write_p50_ms: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub write_p99_ms: f64,
    /// The client's mean CPU (100 = one core) and peak RSS over this second; undefined (NaN)
    /// for a second the resource sampler has no figure for.
    #[serde(default, deserialize_with = "null_is_nan")]
    pub client_cpu_percent: f64,
    #[serde(default, deserialize_with = "null_is_nan")]
    pub client_rss_mb: f64,
    /// The engine server's, when it runs on this host (PSS or RSS, see the step's resources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_memory_mb: Option<f64>,
    /// Points held but not yet indexed at the end of this second, where the engine says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_lag: Option<u64>,
}
