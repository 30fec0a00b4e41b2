#!/usr/bin/env python3
"""Holds the distance-based figures of a real `ragdbeval bench` run to ann-benchmarks' own
metric functions: knn recall (`recall_distance`), "epsilon" and "largeepsilon" recall
(`recall_epsilon`, `recall_large_epsilon`) and "rel" (`relative_distance_error`), every search
step of every run equal to 1e-9 (+inf equal to +inf).

Runs the binary on a generated dataset: `exact` (its per-query distances, recomputed by the
harness, are the true distances ann-benchmarks reads from the dataset file; the script checks
that they are) and a qdrant-edge sweep with a weak graph (ef 1, 4, 16, 128: recall from low to
near 1, so every threshold and rel > 1 is exercised), then feeds the sidecars' distances to the
functions below, copied verbatim from ann-benchmarks, with their HDF5 cache replaced by a dict.

ann-benchmarks pads a short result list with +inf (`results.py`), recomputes distances itself
and counts a repeated id each time; ragdbeval counts it once (docs/metrics.md). A step with
a repeated id or an id without a distance would differ by definition: the script says so and
compares it only where the definitions agree (none occur in these runs).

Distances are handed to the functions as float64 copies of the float32 values: ann-benchmarks
was written for numpy 1.x, where `float32 scalar + 1e-3` and `0.0 + float32 scalar` give
float64; numpy >= 2 keeps float32 there (NEP 50) and would round the thresholds and the sums
of rel. ragdbeval computes in float64 as numpy 1.x does.

Usage: python3 scripts/check_metrics_annb.py [path/to/ragdbeval]   (needs numpy)
"""

import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    sys.exit("needs numpy: pip install numpy")

DATASET = "gen:clustered:n=5000,dim=32,queries=300,seed=5"
K = 10
TOL = 1e-9


# --- ann-benchmarks, ann_benchmarks/plotting/metrics.py, verbatim ---
# https://github.com/erikbern/ann-benchmarks/blob/93587d8a12a617f929062fac1d643bac6a6e1d8d/ann_benchmarks/plotting/metrics.py
def knn_threshold(data, count, epsilon):
    return data[count - 1] + epsilon


def epsilon_threshold(data, count, epsilon):
    return data[count - 1] * (1 + epsilon)


def get_recall_values(dataset_distances, run_distances, count, threshold,
                      epsilon=1e-3):
    recalls = np.zeros(len(run_distances))
    for i in range(len(run_distances)):
        t = threshold(dataset_distances[i], count, epsilon)
        actual = 0
        for d in run_distances[i][:count]:
            if d <= t:
                actual += 1
        recalls[i] = actual
    return (np.mean(recalls) / float(count),
            np.std(recalls) / float(count),
            recalls)


def knn(dataset_distances, run_distances, count, metrics, epsilon=1e-3):
    if 'knn' not in metrics:
        print('Computing knn metrics')
        knn_metrics = metrics.create_group('knn')
        mean, std, recalls = get_recall_values(dataset_distances,
                                               run_distances, count,
                                               knn_threshold, epsilon)
        knn_metrics.attrs['mean'] = mean
        knn_metrics.attrs['std'] = std
        knn_metrics['recalls'] = recalls
    else:
        print("Found cached result")
    return metrics['knn']


def epsilon(dataset_distances, run_distances, count, metrics, epsilon=0.01):
    s = 'eps' + str(epsilon)
    if s not in metrics:
        print('Computing epsilon metrics')
        epsilon_metrics = metrics.create_group(s)
        mean, std, recalls = get_recall_values(dataset_distances,
                                               run_distances, count,
                                               epsilon_threshold, epsilon)
        epsilon_metrics.attrs['mean'] = mean
        epsilon_metrics.attrs['std'] = std
        epsilon_metrics['recalls'] = recalls
    else:
        print("Found cached result")
    return metrics[s]


def rel(dataset_distances, run_distances, metrics):
    if 'rel' not in metrics.attrs:
        print('Computing rel metrics')
        total_closest_distance = 0.0
        total_candidate_distance = 0.0
        for true_distances, found_distances in zip(dataset_distances,
                                                   run_distances):
            for rdist, cdist in zip(true_distances, found_distances):
                total_closest_distance += rdist
                total_candidate_distance += cdist
        if total_closest_distance < 0.01:
            metrics.attrs['rel'] = float("inf")
        else:
            metrics.attrs['rel'] = total_candidate_distance / \
                total_closest_distance
    else:
        print("Found cached result")
    return metrics.attrs['rel']


# `all_metrics` entries "k-nn", "epsilon", "largeepsilon", "rel" (same file):
#   knn(true_distances, run_distances, run_attrs["count"], metrics).attrs['mean']
#   epsilon(true_distances, run_distances, run_attrs["count"], metrics).attrs['mean']
#   epsilon(true_distances, run_distances, run_attrs["count"], metrics, 0.1).attrs['mean']
#   rel(true_distances, run_distances, metrics)
# --- end of ann-benchmarks ---


class Group(dict):
    """Stands in for the h5py group ann-benchmarks caches its metrics in."""

    def __init__(self):
        super().__init__()
        self.attrs = {}

    def create_group(self, name):
        self[name] = Group()
        return self[name]


def ann_benchmarks_figures(true_distances, run_distances, count):
    metrics = Group()
    with contextlib.redirect_stdout(io.StringIO()):
        return {
            "recall_distance": knn(true_distances, run_distances, count, metrics).attrs["mean"],
            "recall_epsilon": epsilon(true_distances, run_distances, count, metrics).attrs["mean"],
            "recall_large_epsilon":
                epsilon(true_distances, run_distances, count, metrics, 0.1).attrs["mean"],
            "relative_distance_error": rel(true_distances, run_distances, metrics),
        }


def read_sidecar(path):
    steps = {}
    with open(path) as f:
        for line in f:
            q = json.loads(line)
            steps.setdefault((q["config"], q["step"]), []).append(q)
    return steps


def search_steps(result_path):
    """(config index, sidecar step, quality) of every search step."""
    with open(result_path) as f:
        result = json.load(f)
    return [
        (ci, s["sidecar_step"], s["quality"])
        for ci, c in enumerate(result["configs"])
        for s in c["steps"]
        if s.get("phase") == "search" and "sidecar_step" in s
    ]


def as_float64(rows):
    """float32 values (as the sidecar's f32 were), widened exactly to float64."""
    return [np.array(r, dtype=np.float32).astype(np.float64) for r in rows]


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "ragdbeval"
    bad = 0
    largest = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        def run(*args):
            subprocess.run([binary, *args], cwd=tmp, check=True, stdout=subprocess.DEVNULL,
                           env={**os.environ, "RAGDBEVAL_DATA_DIR": os.path.join(tmp, "cache")})

        common = ["bench", "-q", "--dataset", DATASET, "--warmup", "0", "-k", str(K),
                  "--runbook", "build-search"]
        run(*common, "--db", "exact", "--name", "exact")
        run(*common, "--db", "qdrant-edge", "--build-param", "m=4",
            "--build-param", "ef_construct=8", "--search-param", "hnsw_ef=1,4,16,128",
            "--name", "hnsw")
        path = lambda name: os.path.join(tmp, "results", name)

        exact = read_sidecar(path("exact.queries.jsonl"))
        [(ci, si, exact_quality)] = search_steps(path("exact.json"))
        truth = {q["query"]: q["distances"] for q in exact[(ci, si)]}
        # The exact engine's answers are the true top-K: full, ascending, and scored perfect.
        if exact_quality["recall_distance"] != 1.0 or any(
            len(d) != K or d != sorted(d) for d in truth.values()
        ):
            print("DIFF the exact run is not the truth")
            bad += 1
        nq = len(truth)
        true_distances = as_float64([truth[q] for q in range(nq)])

        runs = [("exact", e) for e in search_steps(path("exact.json"))]
        runs += [("hnsw", e) for e in search_steps(path("hnsw.json"))]
        sidecars = {"exact": exact, "hnsw": read_sidecar(path("hnsw.queries.jsonl"))}
        print(f"{'run':<6} {'step':>4}  {'metric':<24} {'ragdbeval':>12} {'ann-benchmarks':>14}")
        for name, (ci, si, quality) in runs:
            queries = sorted(sidecars[name][(ci, si)], key=lambda q: q["query"])
            if len(queries) != nq:
                print(f"DIFF {name} step {si}: {len(queries)} queries, {nq} expected")
                bad += 1
                continue
            if any(len(set(q["ids"][:K])) < len(q["ids"][:K]) or None in q["distances"]
                   for q in queries):
                print(f"{name} step {si}: a repeated id or an id without a distance: "
                      "the definitions differ there, not compared")
                continue
            # results.py pads a short list with +inf.
            found = as_float64(
                [q["distances"][:K] + [math.inf] * (K - len(q["distances"][:K])) for q in queries]
            )
            theirs = ann_benchmarks_figures(true_distances, found, K)
            for metric, reference in theirs.items():
                if metric not in quality:
                    print(f"DIFF {name} step {si}: no {metric} in the result")
                    bad += 1
                    continue
                ours = quality[metric]
                if ours is None:  # JSON null: +inf
                    ours = math.inf
                if math.isinf(reference) or math.isinf(ours):
                    ok = reference == ours
                else:
                    diff = abs(ours - reference)
                    largest = max(largest, diff)
                    ok = diff <= TOL
                bad += not ok
                print(f"{name:<6} {si:>4}  {metric:<24} {ours:>12.9f} {reference:>14.9f}"
                      f"{'' if ok else '  <-- differs'}")
    print(f"\nlargest difference {largest:.3e}; "
          f"{'all agree' if bad == 0 else f'{bad} figure(s) differ'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
