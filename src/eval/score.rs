//! Matching a run to the judgments, and every retrieval metric per query.
//!
//! Conventions (docs/eval.md lists them with their variants):
//! - relevant means grade ≥ 1 (trec_eval's default); R is the number of relevant references;
//! - P@k divides by k even when fewer results came back, as trec_eval does (the RAG
//!   ground-truth convention divides by the results returned: that is `context_precision@k` here);
//! - NDCG@k: gain = grade (linear, trec_eval's `ndcg_cut`; `--gain exp`: 2^grade − 1),
//!   discount log2(rank + 1), ideal ranking from all the query's judgments;
//! - MAP@k = Σ over relevant results at rank i ≤ k of P@i, divided by R (trec_eval's
//!   `map_cut`); R-precision = relevant in the top R / R; `rr` is the reciprocal rank of the
//!   first relevant result at any depth (trec_eval's `recip_rank`), `mrr@k` the same cut at k;
//! - recall@k with R = 0 is vacuously 1 here; trec_eval's 0 is set by the caller where such
//!   queries count in the means (`evaluate::Averaging`);
//! - AQWV@k = 1 − P_miss − β·P_FA with P_miss = 1 − recall@k and P_FA the fraction of the
//!   results in the top k that are not relevant (no detection threshold, β = 40).

use rustc_hash::FxHashMap as HashMap;

use super::{Hit, JudgedQuery, Matching, Reference};

/// Gain of a grade in NDCG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gain {
    Linear,
    Exponential,
}

impl Gain {
    fn of(self, grade: i64) -> f64 {
        if grade < 1 {
            return 0.0;
        }
        match self {
            Gain::Linear => grade as f64,
            Gain::Exponential => 2f64.powi(grade.min(60) as i32) - 1.0,
        }
    }
}

/// AQWV's cost of a false alarm relative to a miss.
pub const AQWV_BETA: f64 = 40.0;

/// A document name as the RAG ground-truth JSONL format compares them: lowercase, one trailing file extension
/// dropped (`.pdf`, `.md`, …: up to 5 alphanumerics after the last dot), whitespace runs made
/// one space, trimmed.
pub fn normalize_document(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    let stem = match lower.rsplit_once('.') {
        Some((stem, ext))
            if !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            stem
        }
        _ => lower.as_str(),
    };
    stem.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How each result of one query matched: its grade (0: not relevant), and the references it
/// matched (`None` for none).
#[derive(Debug, Clone, Default)]
pub struct Matched {
    pub grades: Vec<i64>,
    pub reference: Vec<Option<usize>>,
    /// Results that could have matched more than one unmatched reference (logged
    /// for review; the first in the judgments' order is taken).
    pub ambiguous: Vec<usize>,
}

/// Matches one query's results to its references.
pub fn match_results(query: &JudgedQuery, hits: &[Hit], matching: Matching) -> Matched {
    let mut out = Matched {
        grades: Vec::with_capacity(hits.len()),
        reference: Vec::with_capacity(hits.len()),
        ambiguous: Vec::new(),
    };
    match matching {
        Matching::Exact => {
            let by_id: HashMap<&str, usize> = query
                .references
                .iter()
                .enumerate()
                .map(|(i, r)| (r.document.as_str(), i))
                .collect();
            for h in hits {
                let r = by_id.get(h.document.as_str()).copied();
                out.grades.push(r.map_or(0, |r| query.references[r].grade));
                out.reference.push(r);
            }
        }
        Matching::Fuzzy => {
            // References indexed by normalised name; pages compared within each name.
            let mut by_name: HashMap<String, Vec<usize>> = HashMap::default();
            for (i, r) in query.references.iter().enumerate() {
                by_name
                    .entry(normalize_document(&r.document))
                    .or_default()
                    .push(i);
            }
            let mut used = vec![false; query.references.len()];
            for (rank, h) in hits.iter().enumerate() {
                let page_fits = |r: &Reference| match (h.page(), r.page) {
                    (Some(a), Some(b)) => a.abs_diff(b) <= 1,
                    // Either side without a page: the document alone decides.
                    _ => true,
                };
                let candidates: Vec<usize> = by_name
                    .get(&normalize_document(&h.document))
                    .map(|refs| {
                        refs.iter()
                            .copied()
                            .filter(|r| !used[*r] && page_fits(&query.references[*r]))
                            .collect()
                    })
                    .unwrap_or_default();
                if candidates.len() > 1 {
                    out.ambiguous.push(rank);
                }
                match candidates.first() {
                    Some(&r) => {
                        used[r] = true;
                        out.grades.push(query.references[r].grade);
                        out.reference.push(Some(r));
                    }
                    None => {
                        out.grades.push(0);
                        out.reference.push(None);
                    }
                }
            }
        }
    }
    out
}

/// Every rank-based metric of one query at one depth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AtK {
    pub hit: f64,
    pub mrr: f64,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub map: f64,
    pub ndcg: f64,
    pub context_precision: f64,
    pub aqwv: f64,
}

/// Names of the [`AtK`] metrics, in its field order (the registry of `eval`'s outputs).
pub const AT_K_METRICS: [&str; 9] = [
    "hit",
    "mrr",
    "precision",
    "recall",
    "f1",
    "map",
    "ndcg",
    "context_precision",
    "aqwv",
];

impl AtK {
    pub fn values(&self) -> [f64; 9] {
        [
            self.hit,
            self.mrr,
            self.precision,
            self.recall,
            self.f1,
            self.map,
            self.ndcg,
            self.context_precision,
            self.aqwv,
        ]
    }
}

/// The grades of the ideal ranking: every relevant judgment, highest first.
pub fn ideal_grades(references: &[Reference]) -> Vec<i64> {
    let mut g: Vec<i64> = references
        .iter()
        .map(|r| r.grade)
        .filter(|g| *g >= 1)
        .collect();
    g.sort_unstable_by(|a, b| b.cmp(a));
    g
}

fn dcg(grades: &[i64], gain: Gain) -> f64 {
    grades
        .iter()
        .enumerate()
        .map(|(i, g)| gain.of(*g) / ((i + 2) as f64).log2())
        .sum()
}

/// The metrics at depth `k` of results with `grades` (rank order) against `ideal`.
pub fn at_k(grades: &[i64], ideal: &[i64], k: usize, gain: Gain) -> AtK {
    let r = ideal.len();
    let top = &grades[..grades.len().min(k)];
    let relevant_in_top = top.iter().filter(|g| **g >= 1).count();
    let first = top.iter().position(|g| *g >= 1);
    let precision = if k == 0 {
        0.0
    } else {
        relevant_in_top as f64 / k as f64
    };
    let recall = if r == 0 {
        1.0
    } else {
        relevant_in_top as f64 / r as f64
    };
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    let mut found = 0usize;
    let mut ap_sum = 0.0;
    for (i, g) in top.iter().enumerate() {
        if *g >= 1 {
            found += 1;
            ap_sum += found as f64 / (i + 1) as f64;
        }
    }
    let map = if r == 0 { 0.0 } else { ap_sum / r as f64 };
    let ideal_dcg = dcg(&ideal[..r.min(k)], gain);
    let ndcg = if ideal_dcg > 0.0 {
        dcg(top, gain) / ideal_dcg
    } else {
        0.0
    };
    let (context_precision, false_alarms) = if top.is_empty() {
        (0.0, 0.0)
    } else {
        let c = relevant_in_top as f64 / top.len() as f64;
        (c, 1.0 - c)
    };
    AtK {
        hit: f64::from(u8::from(first.is_some())),
        mrr: first.map_or(0.0, |i| 1.0 / (i + 1) as f64),
        precision,
        recall,
        f1,
        map,
        ndcg,
        context_precision,
        aqwv: 1.0 - (1.0 - recall) - AQWV_BETA * false_alarms,
    }
}

/// R-precision: relevant results in the top R, over R (0 when R = 0).
pub fn r_precision(grades: &[i64], r: usize) -> f64 {
    if r == 0 {
        return 0.0;
    }
    grades.iter().take(r).filter(|g| **g >= 1).count() as f64 / r as f64
}

/// Reciprocal rank of the first relevant result at any depth.
pub fn reciprocal_rank(grades: &[i64]) -> f64 {
    grades
        .iter()
        .position(|g| *g >= 1)
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// Score discrimination: the coefficient of variation (population standard deviation over
/// mean) of the scores; `None` with fewer than two scores, a missing score or a zero mean.
pub fn score_discrimination(hits: &[Hit]) -> Option<f64> {
    if hits.len() < 2 || hits.iter().any(|h| !h.score.is_finite()) {
        return None;
    }
    let n = hits.len() as f64;
    let mean = hits.iter().map(|h| h.score).sum::<f64>() / n;
    if mean == 0.0 {
        return None;
    }
    let var = hits.iter().map(|h| (h.score - mean).powi(2)).sum::<f64>() / n;
    Some(var.sqrt() / mean.abs())
}

/// Linear-interpolation percentile (numpy's default) of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

#[cfg(test)]
mod tests;
