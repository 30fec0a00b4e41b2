//! Recall and latency split by query difficulty: a mean over all queries hides whether an
//! index fails on the hard ones. The queries are cut into three bands at the terciles of their
//! LID at K ([`crate::groundtruth::difficulty`]; high LID = hard): easy (LID ≤ the first
//! tercile), medium (≤ the second), hard (above). Queries with an undefined LID are in no
//! band and counted apart.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::latency::LatencySummary;
use crate::groundtruth::difficulty::quantile;

/// Band names, easiest first.
pub const BAND_NAMES: [&str; 3] = ["easy", "medium", "hard"];

/// One search step's figures per difficulty band.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DifficultyBands {
    /// The figure the bands split on (`lid`).
    pub by: String,
    /// The K it was computed at.
    pub k: usize,
    /// The two tercile boundaries (numpy's linear quantiles at 1/3 and 2/3).
    pub cuts: [f64; 2],
    /// Queries with an undefined LID, in no band.
    pub undefined: usize,
    /// easy, medium, hard.
    pub bands: Vec<Band>,
}

/// Recall and latency of the queries of one band.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub name: String,
    pub queries: usize,
    /// Mean recall@K of the band's queries; absent for an empty band.
    pub recall: Option<f64>,
    /// Latency of the band's queries; absent for an empty band and in batch mode (one call
    /// answers every query: no per-query latency).
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub mean_ms: Option<f64>,
}

impl DifficultyBands {
    /// The band called `name`, if any.
    pub fn band(&self, name: &str) -> Option<&Band> {
        self.bands.iter().find(|b| b.name == name)
    }
}

/// Splits queries by LID terciles. `lid`, `recall` and (when given) `latencies` are indexed
/// by query; `None` when no query has a defined LID.
pub fn lid_terciles(
    lid: &[f64],
    recall: &[f64],
    latencies: Option<&[Duration]>,
    k: usize,
) -> Option<DifficultyBands> {
    let mut defined: Vec<f64> = lid.iter().copied().filter(|x| !x.is_nan()).collect();
    if defined.is_empty() {
        return None;
    }
    defined.sort_unstable_by(f64::total_cmp);
    let cuts = [quantile(&defined, 1.0 / 3.0), quantile(&defined, 2.0 / 3.0)];
    let band_of = |x: f64| -> Option<usize> {
        if x.is_nan() {
            None
        } else if x <= cuts[0] {
            Some(0)
        } else if x <= cuts[1] {
            Some(1)
        } else {
            Some(2)
        }
    };
    let bands = (0..BAND_NAMES.len())
        .map(|b| {
            let members: Vec<usize> = (0..lid.len().min(recall.len()))
                .filter(|&q| band_of(lid[q]) == Some(b))
                .collect();
            let n = members.len();
            let latency = latencies
                .filter(|_| n > 0)
                .map(|l| LatencySummary::of(members.iter().filter_map(|&q| l.get(q).copied())));
            Band {
                name: BAND_NAMES[b].to_string(),
                queries: n,
                recall: (n > 0).then(|| members.iter().map(|&q| recall[q]).sum::<f64>() / n as f64),
                p50_ms: latency.as_ref().map(|l| l.p50_ms),
                p99_ms: latency.as_ref().map(|l| l.p99_ms),
                mean_ms: latency.as_ref().map(|l| l.mean_ms),
            }
        })
        .collect();
    Some(DifficultyBands {
        by: "lid".into(),
        k,
        cuts,
        undefined: lid.len() - defined.len(),
        bands,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terciles_split_recall_and_latency() {
        // LID 1..=6 with recall falling as LID rises; cuts at quantiles 1/3 and 2/3 of 1..6:
        // positions 5/3 and 10/3 → 2.6667 and 4.3333: easy {1, 2}, medium {3, 4}, hard {5, 6}.
        // A seventh query with NaN LID is in no band.
        let lid = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, f64::NAN];
        let recall = [1.0, 1.0, 0.8, 0.6, 0.4, 0.0, 0.5];
        let ms = |x: u64| Duration::from_millis(x);
        let lat = [ms(1), ms(1), ms(2), ms(2), ms(4), ms(4), ms(9)];
        let b = lid_terciles(&lid, &recall, Some(&lat), 10).unwrap();
        assert!((b.cuts[0] - 8.0 / 3.0).abs() < 1e-12 && (b.cuts[1] - 13.0 / 3.0).abs() < 1e-12);
        assert_eq!(b.undefined, 1);
        let want = [(2, 1.0), (2, 0.7), (2, 0.2)];
        for (band, (n, recall)) in b.bands.iter().zip(want) {
            assert_eq!(band.queries, n, "{band:?}");
            assert!((band.recall.unwrap() - recall).abs() < 1e-12, "{band:?}");
        }
        let hard = b.band("hard").unwrap();
        assert!((hard.mean_ms.unwrap() - 4.0).abs() < 0.01, "{hard:?}");
        // Batch mode: no latency per band.
        let batch = lid_terciles(&lid, &recall, None, 10).unwrap();
        assert!(batch.bands.iter().all(|x| x.p50_ms.is_none()));
        // No defined LID: no bands.
        assert!(lid_terciles(&[f64::NAN], &[1.0], None, 10).is_none());
    }
}
