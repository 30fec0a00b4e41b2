//! Unit tests of the parent module: hand-computed RC and LID, and the undefined cases.

use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn hand_computed_rc_and_lid() {
    // Distances 1, 2, 4 at k = 3: w = 4, w/2 = 2. ln(1/4) = −2 ln 2 (below w/2),
    // ln1p((2 − 4)/4) = −ln 2, ln1p(0) = 0: s = −3 ln 2, LID = 3 / (3 ln 2) = 1 / ln 2.
    // Mean distance 8: RC = 8 / 4 = 2.
    let d = query_difficulty(8.0, &[1.0, 2.0, 4.0], 3);
    assert!(close(d.rc, 2.0), "{d:?}");
    assert!(close(d.lid, 1.0 / std::f64::consts::LN_2), "{d:?}");
    // At k = 2 only the first two count: w = 2, ln1p(−1/2) + 0 → LID = 2 / ln 2; RC = 8 / 2.
    let d = query_difficulty(8.0, &[1.0, 2.0, 4.0], 2);
    assert!(close(d.rc, 4.0) && close(d.lid, 2.0 / std::f64::consts::LN_2));
}

#[test]
fn duplicates_of_the_query_are_left_out_of_lid() {
    // Two copies of the query (distance 0) then 1, 2 at k = 4: w = 2; kept 1 and 2 → the same
    // as [1, 2] at k = 2.
    let d = query_difficulty(6.0, &[0.0, 0.0, 1.0, 2.0], 4);
    assert!(close(d.lid, 2.0 / std::f64::consts::LN_2), "{d:?}");
    assert!(close(d.rc, 3.0));
}

#[test]
fn undefined_cases_are_nan_not_panics() {
    // k-th distance 0 (k copies of the query): RC divides by 0, LID keeps nothing.
    let d = query_difficulty(5.0, &[0.0, 0.0], 2);
    assert!(d.rc.is_nan() && d.lid.is_nan(), "{d:?}");
    // All k distances equal: s = 0 (VIBE gets −inf).
    let d = query_difficulty(5.0, &[3.0, 3.0, 3.0], 3);
    assert!(close(d.rc, 5.0 / 3.0) && d.lid.is_nan(), "{d:?}");
    // No neighbour at all, or k = 0.
    for d in [
        query_difficulty(5.0, &[], 10),
        query_difficulty(5.0, &[1.0], 0),
    ] {
        assert!(d.rc.is_nan() && d.lid.is_nan(), "{d:?}");
    }
}

#[test]
fn k_beyond_the_depth_uses_the_deepest_neighbour() {
    let shallow = query_difficulty(8.0, &[1.0, 2.0], 10);
    let at_depth = query_difficulty(8.0, &[1.0, 2.0], 2);
    assert_eq!(shallow, at_depth);
}

#[test]
fn computed_on_a_line_against_hand_figures() {
    // Base 1..=5 on a line, query at 0, euclidean: distances 1..5, mean 3. Truth of depth 5
    // padded to 6 (the base is smaller): the padding is no neighbour.
    let train = Vectors::new((1..=5).map(|x| x as f32).collect(), 1).unwrap();
    let test = Vectors::new(vec![0.0], 1).unwrap();
    let truth = GroundTruth {
        k: 6,
        ids: vec![0, 1, 2, 3, 4, PointId::MAX],
        distances: vec![1.0, 2.0, 3.0, 4.0, 5.0, f32::INFINITY],
    };
    let d = Difficulty::compute(&train, &test, Distance::Euclidean, &truth, 2);
    assert_eq!(d.mean_over, 5);
    assert!(close(d.queries[0].rc, 1.5));
    assert!(close(d.queries[0].lid, 2.0 / std::f64::consts::LN_2));
    // k = 10 > depth 5: w = 5.
    let d = Difficulty::compute(&train, &test, Distance::Euclidean, &truth, 10);
    assert!(close(d.queries[0].rc, 3.0 / 5.0));
}

#[test]
fn a_large_base_is_averaged_over_a_fixed_sample() {
    // 3 × MEAN_SAMPLE points cycling through 0..7 on a line: averaged over a sample, the same
    // on every call.
    let n = 3 * MEAN_SAMPLE;
    let train = Vectors::new((0..n).map(|i| (i % 7) as f32).collect(), 1).unwrap();
    let test = Vectors::new(vec![0.5, 3.5], 1).unwrap();
    let truth = GroundTruth {
        k: 1,
        ids: vec![0, 4],
        distances: vec![0.5, 0.5],
    };
    let a = Difficulty::compute(&train, &test, Distance::Euclidean, &truth, 1);
    let b = Difficulty::compute(&train, &test, Distance::Euclidean, &truth, 1);
    assert_eq!(a.mean_over, MEAN_SAMPLE);
    // Bit for bit (LID at k = 1 is NaN, which `==` never equals).
    let bits = |d: &Difficulty| -> Vec<(u64, u64)> {
        d.queries
            .iter()
            .map(|q| (q.rc.to_bits(), q.lid.to_bits()))
            .collect()
    };
    assert_eq!(bits(&a), bits(&b));
    let rows = mean_sample(n).unwrap();
    assert_eq!(rows.len(), MEAN_SAMPLE);
    assert!(rows.windows(2).all(|w| w[0] < w[1]) && rows[MEAN_SAMPLE - 1] < n);
    // The sample's mean is near the whole base's (values 0..6 uniform: mean |x − 0.5| =
    // (0.5 + 0.5 + 1.5 + … + 5.5) / 7 = 18.5 / 7; the sample's standard error is ≈ 0.02).
    assert!(
        (a.queries[0].rc * 0.5 - 18.5 / 7.0).abs() < 0.1,
        "{:?}",
        a.queries[0]
    );
}

#[test]
fn distribution_uses_numpy_linear_quantiles_and_skips_nan() {
    let s = Distribution::of([4.0, f64::NAN, 1.0, 3.0, 2.0].into_iter());
    assert_eq!((s.count, s.undefined), (4, 1));
    assert!(close(s.mean, 2.5) && close(s.min, 1.0) && close(s.max, 4.0));
    assert!(close(s.p25, 1.75) && close(s.median, 2.5) && close(s.p75, 3.25));
    let empty = Distribution::of([f64::NAN].into_iter());
    assert_eq!((empty.count, empty.undefined), (0, 1));
    assert!(empty.mean.is_nan() && empty.median.is_nan());
}
