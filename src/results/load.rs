//! The stored figures of one load level (closed-loop concurrency, open-loop rate); the runner
//! measures them (`runner::load`).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::metrics::latency::LatencySummary;
use crate::resources::PhaseResources;

/// One load level's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadLevel {
    /// `closed` or `open`.
    pub kind: String,
    /// Clients (closed) or workers (open).
    pub concurrency: usize,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub target_rate: Option<f64>,
    pub duration_s: f64,
    pub completed: u64,
    pub errors: u64,
    /// Completed queries ÷ wall time.
    pub qps: f64,
    /// Latency (open loop: from the intended send time).
    pub latency: LatencySummary,
    /// Open loop: worst delay between a query's intended and actual send time.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub max_send_lag_ms: Option<f64>,
    /// Open loop: mean delay between a query's intended and actual send time, over the queries
    /// sent. Near zero when the harness keeps the schedule; grows with a backlog.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mean_send_lag_ms: Option<f64>,
    /// Open loop: queries scheduled in the level (`rate × duration`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub intended: Option<u64>,
    /// Open loop: scheduled queries never sent because the backlog outlasted the level's grace
    /// period (see `runner::load::open_loop`); `completed + errors + dropped = intended`. Their latency is
    /// unknown, so the percentiles leave them out: any count above 0 is warned about. Absent
    /// in older files and for closed loops.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dropped: Option<u64>,
    /// CPU time of the sender threads (the harness's own cost, plus an in-process engine's
    /// work inside its calls), from the kernel's per-thread accounting; absent where that is
    /// not readable.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sender_cpu_ms: Option<f64>,
    /// Open loop: the engine (or the harness) could not keep up with the target rate.
    pub saturated: bool,
    pub resources: PhaseResources,
    /// Interval histograms (one per second) for `ragdbeval merge`, if written.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub histogram_log: Option<String>,
    /// The merged histogram, kept for logs and merging; not serialised.
    #[serde(skip)]
    pub histogram: Option<Histogram<u64>>,
    /// Per-second histograms (start offset, histogram), for interval logs.
    #[serde(skip)]
    pub intervals: Vec<(Duration, Histogram<u64>)>,
}
