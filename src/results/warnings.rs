//! Warnings about measurements that should not be taken at face value. Like hyperfine's
//! warnings, they are stored in the result file *and* printed with the results (by
//! [`crate::output::warnings`]), so a number is never published without its caveat.

use serde::{Deserialize, Serialize};

/// Something suspicious about a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// Searches may have been answered by a brute-force scan, not the index under test.
    PossibleFullScan { detail: String },
    /// The engine returned the same id more than once in a result list.
    DuplicateIds { queries: usize },
    /// The engine returned fewer than k results for some queries.
    ShortResults { queries: usize },
    /// Deleted ids came back from search.
    StaleHits { count: usize },
    /// Updated ids ranked by their old vectors.
    GhostHits { count: usize },
    /// The engine's reported distances disagree with the recomputed ones.
    ScoreMismatch { queries: usize, detail: String },
    /// The client process was near CPU saturation: the harness may be the bottleneck.
    ClientSaturated { cpu_percent: f64 },
    /// Too few queries for stable tail percentiles.
    FewQueries { queries: usize, percentile: String },
    /// An engine that promises exact answers disagreed with the ground truth: the truth or
    /// the engine is wrong, and no figure of the run can be trusted.
    TruthMismatch {
        queries: usize,
        runbook_step: usize,
        /// Where the truth came from, and so what to do.
        detail: String,
    },
    /// An open-loop level ended with scheduled queries never sent (its backlog outlasted the
    /// catch-up time): they have no latency, so its percentiles cover the answered ones only.
    DroppedQueries {
        rate: f64,
        intended: u64,
        dropped: u64,
        /// Each dropped query had waited longer than this when the level gave up.
        waited_s: f64,
    },
    /// A resource figure no machine like this one can produce (CPU above 100 % × cores,
    /// memory above its RAM): a measurement bug, not a result.
    ImplausibleResources {
        phase: String,
        side: String,
        detail: String,
    },
    /// `--repeat`: the trials of one measurement spread more than 10 % (coefficient of
    /// variation): the machine was not quiet, or the engine is not steady.
    NoisyMeasurement {
        runbook_step: usize,
        search_params: String,
        figure: String,
        cv_percent: f64,
        trials: usize,
    },
    /// The engine returned points that fail their query's filter: it ignored or
    /// mis-translated the predicate. The run is invalid (`status.invalid`).
    FilterViolations {
        count: usize,
        queries: usize,
        level: String,
        runbook_step: usize,
    },
    /// Queries of a search step whose truth is empty (nothing live, or nothing passing the
    /// filter): there is nothing to find, so recall and the rank figures are undefined for
    /// them and left out of the means; when every query is such, the step's figures are null.
    NothingToFind {
        runbook_step: usize,
        search_params: String,
        queries: usize,
        of: usize,
    },
    /// Anything else an adapter or phase wants the reader to know.
    Note { detail: String },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::PossibleFullScan { detail } => write!(
                f,
                "searches may have been answered by a full scan, not the index: {detail}"
            ),
            Warning::NothingToFind {
                runbook_step,
                search_params,
                queries,
                of,
            } if queries == of => write!(
                f,
                "search at runbook step {runbook_step} ({search_params}) ran over an empty live \
                 set: no query has anything to find, so recall, NDCG and the other rank \
                 figures are undefined (null)"
            ),
            Warning::NothingToFind {
                runbook_step,
                search_params,
                queries,
                of,
            } => write!(
                f,
                "search at runbook step {runbook_step} ({search_params}): {queries} of {of} \
                 queries have an empty truth (nothing live passes them): left out of recall \
                 and the rank figures"
            ),
            Warning::DuplicateIds { queries } => write!(
                f,
                "{queries} result list(s) contained a duplicate id (each id counted once)"
            ),
            Warning::ShortResults { queries } => write!(
                f,
                "{queries} query(ies) returned fewer than k results (missing ones count as misses)"
            ),
            Warning::StaleHits { count } => write!(
                f,
                "STALE HITS: {count} deleted or never-inserted id(s) were returned by search"
            ),
            Warning::GhostHits { count } => write!(
                f,
                "GHOST HITS: {count} updated id(s) were returned where their old vector ranks"
            ),
            Warning::ScoreMismatch { queries, detail } => write!(
                f,
                "{queries} query(ies) had engine scores that disagree with recomputed distances ({detail})"
            ),
            Warning::ClientSaturated { cpu_percent } => write!(
                f,
                "the client used {cpu_percent:.0}% CPU: latency may include harness overhead"
            ),
            Warning::FewQueries {
                queries,
                percentile,
            } => write!(
                f,
                "only {queries} timed queries: {percentile} rests on very few samples"
            ),
            Warning::TruthMismatch {
                queries,
                runbook_step,
                detail,
            } => write!(
                f,
                "GROUND TRUTH MISMATCH: the exact engine's answers differ from the ground truth \
                 for {queries} query(ies) at runbook step {runbook_step}: {detail}"
            ),
            Warning::DroppedQueries {
                rate,
                intended,
                dropped,
                waited_s,
            } => write!(
                f,
                "open loop at {rate:.0}/s dropped {dropped} of {intended} scheduled queries \
                 (never sent: the engine fell too far behind); its latency percentiles cover \
                 the answered queries only, and each dropped one had already waited over \
                 {waited_s:.1} s"
            ),
            Warning::ImplausibleResources {
                phase,
                side,
                detail,
            } => write!(
                f,
                "IMPLAUSIBLE RESOURCE FIGURE (a measurement bug, not a result): {side} during \
                 {phase}: {detail}"
            ),
            Warning::NoisyMeasurement {
                runbook_step,
                search_params,
                figure,
                cv_percent,
                trials,
            } => write!(
                f,
                "NOISY: {figure} varied by {cv_percent:.1} % (coefficient of variation) over \
                 {trials} trials at runbook step {runbook_step} ({search_params}); compare \
                 medians with their intervals, or rerun on a quieter machine"
            ),
            Warning::FilterViolations {
                count,
                queries,
                level,
                runbook_step,
            } => write!(
                f,
                "FILTER VIOLATIONS (the run is invalid): {count} returned id(s) in {queries} \
                 query(ies) fail their predicate ({level}, runbook step {runbook_step}); the \
                 engine did not apply the filter as asked"
            ),
            Warning::Note { detail } => f.write_str(detail),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message wrapped over several source lines reads as one sentence: no run of spaces
    /// left where a line continuation was lost.
    #[test]
    fn a_filter_violation_reads_as_one_sentence() {
        let text = Warning::FilterViolations {
            count: 3,
            queries: 2,
            level: "label 1%".into(),
            runbook_step: 2,
        }
        .to_string();
        assert!(!text.contains("  "), "{text}");
        assert!(text.contains("in 2 query(ies) fail their predicate (label 1%, runbook step 2)"));
    }
}
