#!/usr/bin/env python3
"""Reference figures for src/metrics/stats.rs from scipy.stats: the paired t-test
(`ttest_rel`) and the Wilcoxon signed-rank test (`wilcoxon`, default arguments) on the
difference vectors the unit tests use (`src/metrics/stats/tests.rs`, `CASES`). Prints each
case's figures and, with --check, compares them with the values the tests hold (1e-9
relative) and exits 1 on a mismatch.

Usage: python3 scripts/check_stats_scipy.py [--check]   (needs scipy: pip install scipy)
"""
import re
import pathlib
import sys

import numpy as np
import scipy
import scipy.stats as st

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "src/metrics/stats/tests.rs"


def cases():
    """(name, diffs, t, t_p, w, w_p) as written in the Rust test file."""
    text = TESTS.read_text()
    pattern = re.compile(
        r'\(\s*"(\w+)",\s*&\[([^\]]*)\],\s*([-\w.e+]+),\s*([-\w.e+]+),\s*([-\w.e+]+),\s*([-\w.e+]+),?\s*\)'
    )
    for m in pattern.finditer(text):
        diffs = [float(x) for x in m.group(2).replace("\n", " ").split(",") if x.strip()]
        yield m.group(1), diffs, *(float(m.group(i).replace("f64::NAN", "nan")) for i in range(3, 7))


M64 = (1 << 64) - 1


class SplitMix64:
    """src/rng.rs, bit for bit."""

    def __init__(self, seed):
        self.x = seed

    def next(self):
        self.x = (self.x + 0x9E3779B97F4A7C15) & M64
        z = self.x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, n):
        return (self.next() * n) >> 64


def bootstrap_cases():
    """(name, statistic, values, resamples, level, seed, low, high) from BOOTSTRAP_CASES."""
    text = TESTS.read_text()
    block = text[text.index("const BOOTSTRAP_CASES"):]
    block = block[: block.index("];")]
    pattern = re.compile(
        r'\(\s*"(\w+)",\s*"(\w+)",\s*&\[([^\]]*)\],\s*(\d+),\s*([\d.]+),\s*(0x[\w_]+|\d+),\s*([-\d.e+]+),\s*([-\d.e+]+),?\s*\)'
    )
    for m in pattern.finditer(block):
        values = [float(x) for x in m.group(3).split(",") if x.strip()]
        seed = int(m.group(6).replace("_", ""), 0)
        yield (m.group(1), m.group(2), values, int(m.group(4)), float(m.group(5)), seed,
               float(m.group(7)), float(m.group(8)))


def bootstrap_bounds(statistic, values, resamples, level, seed):
    """numpy percentiles of the statistic over resamples drawn like ragdbeval draws them."""
    rng = SplitMix64(seed)
    n = len(values)
    stat = np.mean if statistic == "mean" else np.median
    out = [float(stat(np.array([values[rng.below(n)] for _ in range(n)]))) for _ in range(resamples)]
    tail = (1.0 - level) / 2.0
    return float(np.percentile(out, 100 * tail)), float(np.percentile(out, 100 * (1 - tail)))


def main() -> int:
    check = "--check" in sys.argv
    print(f"scipy {scipy.__version__}")
    bad = 0
    n = 0
    for name, diffs, t, tp, w, wp in cases():
        n += 1
        d = np.array(diffs)
        with np.errstate(all="ignore"):
            rt = st.ttest_rel(d, np.zeros_like(d))
        rw = st.wilcoxon(d)
        want = [rt.statistic, rt.pvalue, rw.statistic, rw.pvalue]
        print(name, " ".join(repr(float(x)) for x in want))
        for label, have, ref in zip(["t", "t_p", "W", "W_p"], [t, tp, w, wp], want):
            if np.isnan(ref) and np.isnan(have):
                continue
            if abs(have - ref) > 1e-9 * max(1.0, abs(ref)):
                print(f"  MISMATCH {label}: test holds {have!r}, scipy {ref!r}")
                bad += 1
    boot = 0
    for name, statistic, values, resamples, level, seed, low, high in bootstrap_cases():
        boot += 1
        want = bootstrap_bounds(statistic, values, resamples, level, seed)
        print(name, statistic, repr(want))
        for label, have, ref in zip(["low", "high"], [low, high], want):
            if abs(have - ref) > 1e-9 * max(1.0, abs(ref)):
                print(f"  MISMATCH bootstrap {label}: test holds {have!r}, numpy {ref!r}")
                bad += 1
    if n == 0 or boot == 0:
        print("no cases found in", TESTS)
        return 1
    if check:
        print(f"{n} test cases and {boot} bootstrap cases, {bad} mismatches")
    return 1 if bad and check else 0


if __name__ == "__main__":
    sys.exit(main())
