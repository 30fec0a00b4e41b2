//! Unit tests of the parent module: figures held to scipy.stats 1.17.1 (`ttest_rel` and
//! `wilcoxon` with default arguments); `python3 scripts/check_stats_scipy.py --check`
//! recomputes them from the same differences.

use super::*;

/// (name, differences, t, t's p, W, W's p) as scipy computes them.
type Case = (&'static str, &'static [f64], f64, f64, f64, f64);

#[rustfmt::skip]
#[allow(clippy::approx_constant, reason = "random differences, not constants")]
const CASES: &[Case] = &[
    (
        "exact_no_ties",
        &[-0.4931, 0.5406, -1.5963, 1.6958, 0.9383, 0.008, -0.0119, 0.6038, 0.0323, 0.0741, 1.0201, 0.8147],
        1.241631599148471,
        0.24019580393049259,
        18.0,
        0.10986328125,
    ),
    (
        "exact_fifty",
        &[0.1359, 0.1145, 0.3609, -0.414, -0.2038, 0.7483, 0.0695, -1.1744, -0.2773, 0.8566, -0.0323, 0.0513, 0.8418, 2.0246, -0.5132, 1.5482, -1.03, 0.375, -0.9695, 1.5515, 1.0339, 1.3377, -0.6855, 0.8846, -0.319, -0.2574, 0.7065, 1.0767, 0.4044, -0.428, -0.6258, 1.6443, 0.7939, 0.9197, 2.3835, -0.6159, 2.7595, 3.3509, 1.8184, 1.0271, -0.4638, 1.1945, -0.2427, 0.1783, -0.0904, 0.4838, 1.4881, -0.3556, -0.7854, -0.803],
        3.024422796252865,
        0.003958530108018378,
        377.0,
        0.011200519477185367,
    ),
    (
        "permutation_ties_zeros",
        &[0.5, -0.5, 1.0, 0.0, 2.0, 1.0, -0.25, 0.75, 1.0, 0.5],
        2.604868579052718,
        0.028509671686894146,
        4.0,
        0.03125,
    ),
    (
        "normal_ties_zeros",
        &[-0.9, -1.3, -0.8, 1.4, -0.5, 0.4, -1.1, 0.3, -1.6, -0.6, 2.4, -0.5, 1.2, 0.6, -0.1, -0.6, 1.4, -0.1, 1.6, -0.6, 0.2, 0.6, 0.5, -1.1, -0.6, -0.1, -0.8, 0.8, 0.7, -1.9, -1.7, -1.2, 0.2, 2.1, -0.3, 0.4, -1.0, -0.9, -1.9, 0.1],
        -0.7874546275012081,
        0.43577555404223284,
        335.0,
        0.313068738596072,
    ),
    (
        "normal_large",
        &[0.8972, -0.4067, 1.3465, 0.1479, -0.0864, 0.4673, 0.4374, 1.0978, -0.852, -2.338, 0.0647, -0.6617, -0.0772, 1.6143, -1.1528, 0.7148, 0.8959, 0.4107, 1.0685, -0.5084, -0.7315, 0.989, 0.6703, 1.3404, 0.1623, 1.5736, -0.3321, -1.1103, -2.0871, -1.1514, 0.7685, -1.5149, -0.5024, 2.0566, 0.7968, 1.741, -1.0416, -2.51, 1.4664, -1.4669, 0.0409, 0.1671, -0.9989, 1.5026, 1.4993, 0.5014, -0.0795, 0.1414, -1.1459, -0.2891, -0.1549, -0.9022, 0.7992, -1.4765, -0.5034, -2.3029, 0.4468, 0.6926, 0.5713, 2.8681, 0.8898, -0.992, 2.6135, -0.9703, 0.7387, 0.6931, -0.9297, 1.3453, 0.3046, 0.521, -0.7257, 1.2526, -0.9109, -1.8292, 1.3751, -0.4767, -0.0066, 1.8728, 1.0865, 0.5827, 1.0199, -0.7775, 0.7031, 1.0599, 0.7054, -0.2541, -3.7974, 0.5073, 0.0649, -0.4196, 0.7281, 0.2157, 0.154, -1.5336, -1.5093, 0.3205, 0.0261, 0.0887, 0.1163, 0.3615, -0.0139, 0.1078, 0.2061, 0.8794, -0.5647, 0.7364, 0.5864, 0.0554, -0.5251, 0.3191, 0.814, -1.125, 0.0121, 0.0147, -0.7112, -0.6693, -1.6011, -1.1531, -1.5875, -0.6666, -0.61, -0.5913, 0.3218, -0.2376, -0.7789, -0.7719, -1.1815, -0.2462, -0.2641, 1.573, 1.4842, 1.4279, 2.0292, -1.2671, 0.623, 0.7111, 0.4262, 2.0767, 2.4879, 0.9294, 0.6031, -1.1724, -1.1704, 0.6502, -0.1256, -1.3806, -0.174, 0.31, 0.8859, -0.1577, -0.3192, -0.0438, 0.123, -1.2131, 0.7833, 2.1403, 0.7642, -1.4982, 0.0445, -1.8156, -1.8792, 0.6093, 0.0276, -0.7371, -2.1374, -1.3189, 0.1122, -0.0181, 0.6397, 1.4734, -0.3893, 0.419, -0.1878, -0.5465, -0.2948, 0.9108, -1.0784, 1.091, 1.4273, -0.0143, 0.2049, -1.4618, 2.3105, 0.9289, 0.1223, 0.0074, 0.401, -0.7012, 0.2333, -0.9736, 0.4473, -0.7282, 0.8455, -0.1704, 0.2187, 2.9109, 0.7542, 0.2178, -0.0056, -1.0892, 1.0342, 1.5523, 0.0144, 1.6268, -0.1623, -1.8231, -0.7032, -1.107, -0.3245, 0.577, -0.979, -0.1302, 0.1494, -0.783, -0.9593, 0.0372, 0.8224, -0.6532, -0.8014, -0.1913, 0.2399, -0.593, -0.3841, -0.2813, -1.1358, -0.2275, -0.61, 1.5334, -0.5673, 0.4071, 0.3295, -1.168, -1.2989, -0.4955, 0.6126, -0.6232, -0.7062, -2.9502, -0.4468, 0.2625, 0.3947, 0.3792, -0.3778, -0.2772, 0.7823, -0.1857, -2.353, 0.97, -1.1277, 1.3253, 1.6441, 0.7124, 0.8541, 1.8078, -1.1521, 0.2039, 0.1891, -1.0171, 1.9618, -0.6307, -0.7812, 0.2177, 0.9811, -0.651, -0.6496, 0.4541, -1.4756, -0.8226, -0.8882, -0.4843, -0.1923, 1.7942, 0.8574, -0.0276, -0.2747, 0.8244, 0.3784, 0.8412, 1.331, -1.0582, -2.3029, -0.0718, 0.0295, 0.2368, -0.6488, -0.2826, 0.5087, 0.5626, 1.281, -2.2163, -1.6987, 1.4119, 0.5582, 0.7434, -0.3348, -0.5242, 0.1498, -0.9898, -1.5802, -1.1606],
        -0.10430989406787591,
        0.9169933603322192,
        22535.5,
        0.9790438361252315,
    ),
    (
        "clear_shift",
        &[0.5117, 0.5637, 0.6651, 0.5372, 0.5473, 0.6688, 0.4223, 0.4041, 0.4462, 0.4904, 0.7023, 0.4651, 0.6307, 0.4527, 0.5491, 0.5681, 0.5533, 0.5751, 0.4311, 0.6456, 0.5981, 0.4298, 0.5506, 0.3927, 0.5095, 0.3829, 0.5718, 0.7964, 0.6471, 0.5731],
        29.605846244337325,
        3.187494632206573e-23,
        0.0,
        1.862645149230957e-09,
    ),
];

fn close(have: f64, want: f64) -> bool {
    (have - want).abs() <= 1e-9 * want.abs().max(1.0)
}

#[test]
fn paired_t_and_wilcoxon_match_scipy() {
    for &(name, diffs, t, t_p, w, w_p) in CASES {
        let tt = paired_t(diffs).expect("defined");
        assert!(close(tt.t, t), "{name}: t {} vs scipy {t}", tt.t);
        assert!(close(tt.p, t_p), "{name}: t's p {} vs scipy {t_p}", tt.p);
        let wt = wilcoxon(diffs).expect("defined");
        assert!(
            close(wt.statistic, w),
            "{name}: W {} vs scipy {w}",
            wt.statistic
        );
        assert!(close(wt.p, w_p), "{name}: W's p {} vs scipy {w_p}", wt.p);
    }
}

#[test]
fn methods_follow_scipys_choice() {
    let method = |name: &str| {
        let case = CASES.iter().find(|c| c.0 == name).expect("case");
        wilcoxon(case.1).expect("defined").method
    };
    assert_eq!(method("exact_no_ties"), WilcoxonMethod::Exact);
    assert_eq!(method("exact_fifty"), WilcoxonMethod::Exact);
    assert_eq!(method("permutation_ties_zeros"), WilcoxonMethod::Exact);
    assert_eq!(method("normal_ties_zeros"), WilcoxonMethod::Normal);
    assert_eq!(method("normal_large"), WilcoxonMethod::Normal);
}

/// Worked by hand: differences 1, 2, 3 have mean 2 and sd 1, so t = 2 / (1 / √3) = 2√3 and
/// d_z = 2; all positive, so R− = 0 and the exact p is 2 · (1/8) = 0.25.
#[test]
fn hand_computed() {
    let d = [1.0, 2.0, 3.0];
    let t = paired_t(&d).expect("defined");
    assert!(close(t.t, 2.0 * 3f64.sqrt()));
    assert_eq!(t.df, 2.0);
    assert!(close(effect_size(&d).expect("defined"), 2.0));
    let w = wilcoxon(&d).expect("defined");
    assert_eq!(w.statistic, 0.0);
    assert!(close(w.p, 0.25));
}

#[test]
fn undefined_cases_are_none() {
    assert!(paired_t(&[1.0]).is_none());
    assert!(paired_t(&[0.5, 0.5, 0.5]).is_none());
    assert!(wilcoxon(&[0.0, 0.0]).is_none());
    assert!(effect_size(&[2.0, 2.0]).is_none());
    assert!(bootstrap_mean_ci(&[], 100, 0.95, |_| 0).is_none());
}

/// The bootstrap takes its indices from the caller: with a fixed sequence the interval is the
/// numpy-style percentiles of the resample means, computed here by hand.
#[test]
fn bootstrap_uses_the_given_indices() {
    let d = [1.0, 2.0, 3.0, 4.0];
    // Four resamples of four: means 1, 2.5, 2.5, 4 (indices cycle through the pattern).
    let pattern = [0, 0, 0, 0, 0, 1, 2, 3, 1, 2, 3, 0, 3, 3, 3, 3];
    let mut next = pattern.iter().copied().cycle();
    let (lo, hi) = bootstrap_mean_ci(&d, 4, 0.5, |_| next.next().expect("cycle")).expect("ci");
    // Sorted means 1, 2.5, 2.5, 4; 25th percentile at position 0.75: 1 + 0.75·1.5 = 2.125;
    // 75th at position 2.25: 2.5 + 0.25·1.5 = 2.875.
    assert!(close(lo, 2.125), "{lo}");
    assert!(close(hi, 2.875), "{hi}");
}

/// (name, statistic, values, resamples, level, seed, low, high): bootstrap intervals with
/// indices from `SplitMix64::new(seed).below(n)`, as `compare` and `--repeat` draw them. The
/// bounds are numpy's, computed from the same index stream by `scripts/check_stats_scipy.py`
/// (which re-derives them and fails on a difference).
type BootstrapCase = (
    &'static str,
    &'static str,
    &'static [f64],
    usize,
    f64,
    u64,
    f64,
    f64,
);

const BOOTSTRAP_CASES: &[BootstrapCase] = &[
    (
        "mean_of_differences",
        "mean",
        &[
            0.12, -0.05, 0.31, 0.08, 0.27, -0.11, 0.19, 0.04, 0.22, 0.15, -0.02, 0.09,
        ],
        2000,
        0.95,
        0x5eed_c0de,
        0.03916666666666666,
        0.1758541666666666,
    ),
    (
        "median_of_trials",
        "median",
        &[
            1520.0, 1610.5, 1498.25, 1702.0, 1555.5, 1580.0, 1633.75, 1490.5, 1601.0,
        ],
        2000,
        0.95,
        0x5eed_c0de,
        1498.25,
        1633.75,
    ),
];

#[test]
fn bootstrap_intervals_match_numpy_on_the_same_indices() {
    for &(name, statistic, values, resamples, level, seed, low, high) in BOOTSTRAP_CASES {
        let mut rng = crate::rng::SplitMix64::new(seed);
        let draw = |n: usize| rng.below(n as u64) as usize;
        let (lo, hi) = match statistic {
            "mean" => bootstrap_mean_ci(values, resamples, level, draw),
            _ => bootstrap_median_ci(values, resamples, level, draw),
        }
        .expect("an interval");
        assert!(close(lo, low) && close(hi, high), "{name}: ({lo}, {hi})");
    }
}

#[test]
fn median_and_variation() {
    assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    assert!(median(&mut []).is_nan());
    // sd of [1, 2, 3] is 1 (n − 1), mean 2.
    assert!(close(
        coefficient_of_variation(&[1.0, 2.0, 3.0]).expect("cv"),
        0.5
    ));
    assert!(coefficient_of_variation(&[1.0]).is_none());
}

/// `holm` on small families worked by hand: sort, multiply the i-th smallest by m − i + 1,
/// carry the running maximum, cap at 1, put back in the input's order.
#[test]
fn holm_hand_computed() {
    let cases: &[(&[f64], &[f64])] = &[
        // Sorted 0.005, 0.01, 0.03, 0.04 → 4·0.005, 3·0.01, 2·0.03, max(0.06, 1·0.04).
        (&[0.01, 0.04, 0.03, 0.005], &[0.03, 0.06, 0.06, 0.02]),
        // 4·0.02, 3·0.2, 2·0.5 = 1, then 1·0.9 lifted to the running maximum 1.
        (&[0.5, 0.2, 0.9, 0.02], &[1.0, 0.6, 1.0, 0.08]),
        // Ties: 3·0.01, then 2·0.01 lifted to 0.03.
        (&[0.01, 0.01, 0.5], &[0.03, 0.03, 0.5]),
        // One test: no adjustment.
        (&[0.04], &[0.04]),
        // Above 1 is capped; the other is doubled.
        (&[1.5, 0.01], &[1.0, 0.02]),
        (&[], &[]),
    ];
    for (raw, want) in cases {
        let have = holm(raw);
        assert_eq!(have.len(), want.len(), "{raw:?}");
        for (h, w) in have.iter().zip(*want) {
            assert!((h - w).abs() <= 1e-15, "{raw:?}: {have:?}");
        }
    }
    // A single p-value comes back bit for bit.
    assert_eq!(holm(&[0.031_25]), vec![0.031_25]);
}

#[test]
fn holm_leaves_missing_tests_out_of_the_family() {
    // Two defined p-values: m = 2, the NaN stays NaN.
    let have = holm(&[0.01, f64::NAN, 0.04]);
    assert!(
        (have[0] - 0.02).abs() <= 1e-15 && have[2] == 0.04,
        "{have:?}"
    );
    assert!(have[1].is_nan());
    assert!(holm(&[f64::NAN, f64::NAN]).iter().all(|p| p.is_nan()));
    let have = holm_optional(&[Some(0.01), None, Some(0.04)]);
    assert_eq!(have[1], None);
    assert!((have[0].expect("defined") - 0.02).abs() <= 1e-15);
    assert_eq!(have[2], Some(0.04));
}

#[test]
fn holm_is_monotone_and_never_below_the_raw_p() {
    let raw = [0.2, 0.001, 0.049, 0.03, 0.7, 0.011, 0.011, 0.5];
    let adjusted = holm(&raw);
    for (i, j) in (0..raw.len()).flat_map(|i| (0..raw.len()).map(move |j| (i, j))) {
        if raw[i] <= raw[j] {
            assert!(adjusted[i] <= adjusted[j], "{i} {j}: {adjusted:?}");
        }
    }
    assert!(raw.iter().zip(&adjusted).all(|(r, a)| a >= r && *a <= 1.0));
}
