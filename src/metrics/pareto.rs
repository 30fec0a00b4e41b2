//! Recall/QPS trade-off curves: the Pareto frontier of a parameter sweep and the throughput
//! interpolated at a target recall, so engines are compared at equal recall.

use serde::{Deserialize, Serialize};

/// One measured configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub recall: f64,
    pub qps: f64,
    pub p99_ms: f64,
    /// Which configuration (build and search parameters) produced it.
    pub label: String,
}

/// The points not dominated by another (higher or equal recall *and* higher or equal QPS,
/// one of them strictly), sorted by ascending recall (hence descending QPS).
pub fn frontier(points: &[CurvePoint]) -> Vec<CurvePoint> {
    frontier_by(points, |p| (p.recall, p.qps))
}

/// The points of `points` that no other beats on both coordinates of `xy` (higher is
/// better on both), by ascending x; points with a coordinate that is not finite are left out.
/// Of points with equal coordinates the first is kept.
pub fn frontier_by<T: Clone>(points: &[T], xy: impl Fn(&T) -> (f64, f64)) -> Vec<T> {
    let mut sorted: Vec<(f64, f64, &T)> = points
        .iter()
        .map(|p| {
            let (x, y) = xy(p);
            (x, y, p)
        })
        .filter(|(x, y, _)| x.is_finite() && y.is_finite())
        .collect();
    // Highest x first; among equal x, highest y first.
    sorted.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.total_cmp(&a.1)));
    let mut out: Vec<T> = Vec::new();
    let mut best_y = f64::NEG_INFINITY;
    for (_, y, p) in sorted {
        if y > best_y {
            best_y = y;
            out.push(p.clone());
        }
    }
    out.reverse();
    out
}

/// Throughput at recall ≥ `target`, linearly interpolated along the frontier between the
/// two points that bracket the target. `None` when no configuration reaches the target.
/// Below the frontier's lowest recall, the fastest point already satisfies the target.
pub fn qps_at_recall(frontier: &[CurvePoint], target: f64) -> Option<f64> {
    let first = frontier.first()?;
    if target <= first.recall {
        return Some(first.qps);
    }
    frontier.windows(2).find_map(|w| {
        let (lo, hi) = (&w[0], &w[1]);
        if target > lo.recall && target <= hi.recall {
            let t = (target - lo.recall) / (hi.recall - lo.recall);
            Some(lo.qps + t * (hi.qps - lo.qps))
        } else {
            None
        }
    })
}

/// The recall targets every run reports.
pub const RECALL_TARGETS: [f64; 3] = [0.90, 0.95, 0.99];

/// Frontier and interpolated throughputs of one sweep.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    pub frontier: Vec<CurvePoint>,
    /// (target recall, interpolated QPS or null when unreachable).
    pub qps_at_recall: Vec<(f64, Option<f64>)>,
}

impl Curve {
    pub fn from_points(points: &[CurvePoint]) -> Curve {
        let frontier = frontier(points);
        let qps_at_recall = RECALL_TARGETS
            .iter()
            .map(|t| (*t, qps_at_recall(&frontier, *t)))
            .collect();
        Curve {
            frontier,
            qps_at_recall,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(recall: f64, qps: f64, label: &str) -> CurvePoint {
        CurvePoint {
            recall,
            qps,
            p99_ms: 1.0,
            label: label.into(),
        }
    }

    /// The frontier keeps the settings no other beats on both recall and QPS; a frontier of
    /// one point leaves the others to be drawn as points only.
    #[test]
    fn the_frontier_is_the_undominated_points() {
        let same = |p: &(f64, f64)| *p;
        assert_eq!(
            frontier_by(&[(1.0, 1857.0), (1.0, 2342.0)], same),
            vec![(1.0, 2342.0)]
        );
        assert_eq!(
            frontier_by(
                &[(0.9, 300.0), (0.99, 200.0), (0.95, 100.0), (1.0, 50.0)],
                same
            ),
            vec![(0.9, 300.0), (0.99, 200.0), (1.0, 50.0)]
        );
        assert!(frontier_by(&[], same).is_empty());
    }

    #[test]
    fn frontier_drops_dominated_points() {
        let pts = [
            p(0.80, 1000.0, "a"),
            p(0.85, 900.0, "b"),
            p(0.84, 800.0, "dominated by b"),
            p(0.95, 400.0, "c"),
            p(0.95, 300.0, "same recall, slower"),
            p(0.99, 100.0, "d"),
        ];
        let f = frontier(&pts);
        let labels: Vec<&str> = f.iter().map(|x| x.label.as_str()).collect();
        assert_eq!(labels, ["a", "b", "c", "d"]);
    }

    #[test]
    fn interpolation_between_bracketing_points() {
        let f = frontier(&[
            p(0.80, 1000.0, "a"),
            p(0.90, 600.0, "b"),
            p(1.0, 100.0, "c"),
        ]);
        assert_eq!(qps_at_recall(&f, 0.5), Some(1000.0));
        assert_eq!(qps_at_recall(&f, 0.90), Some(600.0));
        // Halfway from 0.90 (600) to 1.00 (100): 350.
        let q = qps_at_recall(&f, 0.95).unwrap();
        assert!((q - 350.0).abs() < 1e-9, "{q}");
        // 0.85: halfway from 1000 to 600.
        assert!((qps_at_recall(&f, 0.85).unwrap() - 800.0).abs() < 1e-9);
        assert_eq!(qps_at_recall(&f, 1.0), Some(100.0));
        let low = frontier(&[p(0.5, 10.0, "x")]);
        assert_eq!(qps_at_recall(&low, 0.9), None);
        assert_eq!(qps_at_recall(&[], 0.9), None);
        let c = Curve::from_points(&[
            p(0.80, 1000.0, "a"),
            p(0.90, 600.0, "b"),
            p(1.0, 100.0, "c"),
        ]);
        assert_eq!(c.qps_at_recall[0], (0.90, Some(600.0)));
    }
}
