#!/usr/bin/env python3
"""Holds ragdbeval's query difficulty (relative contrast and local intrinsic dimensionality,
`src/groundtruth/difficulty.rs`) to a numpy reference on a generated set, to 1e-4.

The script generates clustered float32 vectors (with a query equal to a base point, so one
distance is 0 and LID must leave it out, and a duplicated base point, so neighbours tie),
computes the exact neighbours itself with numpy in float64 and writes the set as a TEXMEX
directory with that ground truth. Then

- `ragdbeval bench --db exact` writes each query's `rc` and `lid` (at K) in its sidecar: each
  must equal the reference's to 1e-4 (relative above 1: see TOL), NaN only where it is NaN;
- `ragdbeval dataset info DIR -k K` prints their distribution: mean, min, quartiles and max
  must equal numpy's (`np.quantile`, linear) to the same, plus 0.5e-4 (it prints 4
  decimals),

for K = 10 and K = 100. The reference is VIBE's: `compute_lid` below is copied verbatim from
VIBE, and RC is its `avg_distances / distances[:, k - 1]` with the mean plain euclidean
distance to the whole base (the base here is below ragdbeval's sampling threshold, so both
take every point).

Usage: python3 scripts/check_difficulty_numpy.py [path/to/ragdbeval]   (needs numpy)
"""

import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    sys.exit("needs numpy: pip install numpy")

# 1e-4, relative above 1: ragdbeval's distances are float32 and LID amplifies their rounding
# where the k nearest distances are close together (a query of LID 38 moves by 1.4e-4 when
# its distances move by one float32 ulp).
TOL = 1e-4
PRINTED = 0.5e-4  # `dataset info` prints 4 decimals


def within(ours, ref, extra=0.0):
    diff = abs(ours - ref)
    return diff, diff <= TOL * max(1.0, abs(ref)) + extra
N, DIM, QUERIES, CLUSTERS, DEPTH = 3000, 24, 200, 12, 100


# --- VIBE, export_results.py, verbatim ---
# https://github.com/vector-index-bench/vibe/blob/b332c7359ea7cdd1a00708c020108e679754167d/export_results.py
def compute_lid(distances, k):
    w = distances[min(len(distances) - 1, k - 1)]
    half_w = 0.5 * w

    distances = distances[:k]
    distances = distances[distances > 1e-5]

    small = distances[distances < half_w]
    large = distances[distances >= half_w]

    s = np.log(small / w).sum() + np.log1p((large - w) / w).sum()
    valid = small.size + large.size

    return -valid / s
# RC (export_query_stats): metrics[f"rc{k}"] = avg_distances / distances[:, k - 1], where
# avg_distances is the mean distance from the query to every train point (vibe/datasets.py
# write_output, FaissFlat.query_with_distances: sqrt of the squared L2 for euclidean).
# --- end of VIBE ---


def generate():
    rng = np.random.default_rng(16)
    centres = rng.normal(0.0, 4.0, size=(CLUSTERS, DIM))
    base = centres[rng.integers(CLUSTERS, size=N)] + rng.normal(0.0, 1.0, size=(N, DIM))
    queries = centres[rng.integers(CLUSTERS, size=QUERIES)] + rng.normal(0.0, 1.0, (QUERIES, DIM))
    base, queries = base.astype(np.float32), queries.astype(np.float32)
    base[11] = base[10]  # a duplicated point: tied neighbours
    queries[0] = base[5]  # a query equal to a base point: distance 0
    return base, queries


def write_vecs(path, rows, fmt):
    with open(path, "wb") as f:
        for r in rows:
            f.write(struct.pack("<i", len(r)))
            f.write(struct.pack(f"<{len(r)}{fmt}", *r))


def reference(base, queries):
    """Distances of every query to every base point (float64), the exact neighbours (ties by
    id, as ragdbeval breaks them) and the mean distance."""
    b = base.astype(np.float64)
    all_d = np.stack([np.sqrt(((b - q.astype(np.float64)) ** 2).sum(axis=1)) for q in queries])
    order = np.argsort(all_d, axis=1, kind="stable")[:, :DEPTH]
    return order, np.take_along_axis(all_d, order, axis=1), all_d.mean(axis=1)


def stats(values):
    v = np.array([x for x in values if not np.isnan(x)])
    return {"mean": v.mean(), "min": v.min(), "p25": np.quantile(v, 0.25),
            "median": np.quantile(v, 0.5), "p75": np.quantile(v, 0.75), "max": v.max()}


def parse_info(text):
    """{'RC': {...}, 'LID': {...}} from `dataset info`'s difficulty table."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] in ("RC", "LID") and len(parts) == 8:
            out[parts[0]] = dict(zip(["mean", "min", "p25", "median", "p75", "max"],
                                     map(float, parts[1:7])))
    return out


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "ragdbeval"
    base, queries = generate()
    ids, dists, mean_d = reference(base, queries)
    bad, largest, compared = 0, 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "difficulty")
        os.mkdir(data)
        write_vecs(os.path.join(data, "set_base.fvecs"), base, "f")
        write_vecs(os.path.join(data, "set_query.fvecs"), queries, "f")
        write_vecs(os.path.join(data, "set_groundtruth.ivecs"), ids.astype(np.int32), "i")
        env = {**os.environ, "RAGDBEVAL_DATA_DIR": os.path.join(tmp, "cache")}
        for k in (10, 100):
            rc = mean_d / dists[:, k - 1]
            with np.errstate(divide="ignore", invalid="ignore"):
                lid = np.array([compute_lid(row, k) for row in dists])
            # Where VIBE's division gives ±inf, ragdbeval gives NaN (docs/metrics.md).
            lid[~np.isfinite(lid)] = np.nan

            name = f"k{k}"
            subprocess.run([binary, "bench", "-q", "--dataset", data, "--db", "exact",
                            "--runbook", "build-search", "--warmup", "0", "-k", str(k),
                            "--name", name], cwd=tmp, env=env, check=True,
                           stdout=subprocess.DEVNULL)
            with open(os.path.join(tmp, "results", f"{name}.queries.jsonl")) as f:
                lines = [json.loads(line) for line in f]
            for q in lines:
                for metric, ref in (("rc", rc[q["query"]]), ("lid", lid[q["query"]])):
                    ours = q.get(metric, "missing")
                    ours = np.nan if ours is None else ours
                    if ours == "missing":
                        print(f"DIFF k={k} query {q['query']}: no {metric} in the sidecar")
                        bad += 1
                        continue
                    compared += 1
                    if np.isnan(ref) or np.isnan(ours):
                        if not (np.isnan(ref) and np.isnan(ours)):
                            print(f"DIFF k={k} query {q['query']} {metric}: {ours} vs {ref}")
                            bad += 1
                        continue
                    diff, ok = within(ours, ref)
                    largest = max(largest, diff / max(1.0, abs(ref)))
                    if not ok:
                        print(f"DIFF k={k} query {q['query']} {metric}: {ours} vs {ref}")
                        bad += 1
            print(f"k={k}: {len(lines)} sidecar lines; query 0 (a base point): "
                  f"lid {lines[0].get('lid')} vs {lid[0]:.6f}")

            info = subprocess.run([binary, "dataset", "info", data, "-k", str(k)], cwd=tmp,
                                  env=env, check=True, capture_output=True, text=True).stdout
            printed = parse_info(info)
            for metric, values in (("RC", rc), ("LID", lid)):
                want = stats(values)
                got = printed.get(metric)
                if got is None:
                    print(f"DIFF k={k}: no {metric} row in `dataset info`:\n{info}")
                    bad += 1
                    continue
                for stat, ref in want.items():
                    diff, ok = within(got[stat], ref, PRINTED)
                    bad += not ok
                    print(f"{'ok  ' if ok else 'DIFF'} k={k} {metric} {stat:<6} "
                          f"ragdbeval {got[stat]:.4f} numpy {ref:.6f}")
    print(f"\n{compared} per-query figures and the distributions compared; largest per-query "
          f"difference {largest:.3e} (relative above 1); "
          f"{'all agree' if bad == 0 else f'{bad} difference(s)'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
