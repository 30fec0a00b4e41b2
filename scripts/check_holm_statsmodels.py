#!/usr/bin/env python3
"""Holds the Holm-adjusted p-values of `ragdbeval eval compare` with three or more runs to
statsmodels' `multipletests(pvals, method="holm")`.

Generates TREC judgments and five runs of differing quality (seeded, 60 queries, graded
judgments), runs `eval compare R1 … R5 --format json` (10 pairs), and for every metric feeds
each test's raw pairwise p-values — the t-test's, then the Wilcoxon test's, the pairs without
a test left out as ragdbeval leaves them out — to statsmodels. Every adjusted p-value must
equal statsmodels' to 1e-12 relative (both compute (m − i + 1) · p in float64, so they agree
bit for bit in practice; the tolerance only allows for a different summation order), and each
verdict must be a difference exactly where statsmodels rejects at the same α. The raw p-values
themselves are held to scipy by `check_stats_scipy.py`.

Usage: python3 scripts/check_holm_statsmodels.py [path/to/ragdbeval]
       (needs statsmodels: pip install statsmodels)
"""

import json
import os
import random
import subprocess
import sys
import tempfile

try:
    import statsmodels
    from statsmodels.stats.multitest import multipletests
except ImportError:
    sys.exit("needs statsmodels: pip install statsmodels")

RUNS = 5
QUERIES = 60
ALPHA = 0.05
REL_TOL = 1e-12


def judgments_and_runs(rng):
    """TREC qrels and RUNS runs: run r puts each relevant document higher the larger r's
    quality, with noise, so the pairs range from clearly different to indistinguishable."""
    qrels, runs = [], [[] for _ in range(RUNS)]
    quality = [0.0, 0.05, 0.3, 0.35, 0.9]
    for q in range(QUERIES):
        relevant = {f"d{q}_{i}": rng.choice([1, 2]) for i in range(rng.randint(1, 4))}
        qrels += [f"q{q} 0 {doc} {grade}" for doc, grade in relevant.items()]
        pool = list(relevant) + [f"n{q}_{i}" for i in range(20)]
        for r, lines in enumerate(runs):
            scored = [
                (rng.random() + (quality[r] + 0.3 * rng.random() if d in relevant else 0.0), d)
                for d in pool
            ]
            scored.sort(reverse=True)
            lines += [f"q{q} Q0 {d} {rank} {s:.6f} run{r}" for rank, (s, d) in enumerate(scored[:10], 1)]
    return qrels, runs


def ragdbeval_pairwise(binary, workdir):
    """`eval compare` of the generated runs, as its JSON document."""
    qrels, runs = judgments_and_runs(random.Random(20240611))
    qrels_path = os.path.join(workdir, "qrels.txt")
    with open(qrels_path, "w") as f:
        f.write("\n".join(qrels) + "\n")
    run_paths = []
    for r, lines in enumerate(runs):
        path = os.path.join(workdir, f"run{r + 1}.trec")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        run_paths.append(path)
    out = os.path.join(workdir, "pairwise.json")
    subprocess.run(
        [binary, "eval", "compare", *run_paths, "--qrels", qrels_path, "--alpha", str(ALPHA),
         "--format", "json", "--out", out],
        check=True,
    )
    with open(out) as f:
        return json.load(f)


def check_family(metric, test, pairs, worst):
    """Compares one family's adjusted p-values (and, for Wilcoxon, the verdicts) with
    statsmodels; returns the number of mismatches and updates worst[0], the largest relative
    difference seen."""
    defined = [p for p in pairs if p[test] is not None]
    if not defined:
        return 0
    reject, adjusted, _, _ = multipletests([p[test] for p in defined], alpha=ALPHA, method="holm")
    bad = 0
    for p, want, rejected in zip(defined, adjusted, reject):
        have = p[test + "_holm"]
        diff = abs(have - want) / max(abs(want), 1e-300)
        worst[0] = max(worst[0], diff)
        if diff > REL_TOL:
            print(f"  MISMATCH {metric} {test} {p['a']} → {p['b']}: ragdbeval {have!r}, "
                  f"statsmodels {want!r}")
            bad += 1
        # A verdict needs a non-zero mean difference; at adjusted p == α the two rules differ
        # (statsmodels rejects at ≤, ragdbeval at <), so that boundary is not compared.
        if test == "wilcoxon_p" and p["delta"] != 0.0 and want != ALPHA:
            differs = p["verdict"] != "no_significant_difference"
            if differs != bool(rejected):
                print(f"  MISMATCH {metric} {p['a']} → {p['b']}: verdict {p['verdict']}, "
                      f"statsmodels rejects: {bool(rejected)}")
                bad += 1
    for p in pairs:
        if p[test] is None and p[test + "_holm"] is not None:
            print(f"  MISMATCH {metric} {test}: an adjusted p without a raw one")
            bad += 1
    return bad


def main() -> int:
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/ragdbeval"
    print(f"statsmodels {statsmodels.__version__}")
    with tempfile.TemporaryDirectory() as workdir:
        c = ragdbeval_pairwise(binary, workdir)
    if c["adjustment"] != "holm" or c["pair_count"] != RUNS * (RUNS - 1) // 2:
        print(f"unexpected adjustment or pair count: {c['adjustment']}, {c['pair_count']}")
        return 1
    bad = families = values = 0
    worst = [0.0]
    flips = 0
    for m in c["metrics"]:
        for test in ["t_p", "wilcoxon_p"]:
            families += 1
            values += sum(p[test] is not None for p in m["pairs"])
            bad += check_family(m["metric"], test, m["pairs"], worst)
        flips += sum(
            p["wilcoxon_p"] is not None and p["wilcoxon_p"] < ALPHA <= p["wilcoxon_p_holm"]
            for p in m["pairs"]
        )
    print(f"holm: {families} families over {c['pair_count']} pairs, {values} adjusted p-values, "
          f"{flips} Wilcoxon verdicts turned by the adjustment; largest relative difference "
          f"from statsmodels {worst[0]:.3g}; {bad} mismatches")
    if values == 0 or flips == 0:
        print("the generated runs no longer exercise the adjustment: change the qualities")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
