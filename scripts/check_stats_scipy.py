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
    if n == 0:
        print("no cases found in", TESTS)
        return 1
    if check:
        print(f"{n} cases, {bad} mismatches")
    return 1 if bad and check else 0


if __name__ == "__main__":
    sys.exit(main())
