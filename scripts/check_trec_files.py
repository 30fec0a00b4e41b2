#!/usr/bin/env python3
"""Scores `bench --trec-run` files against `dataset qrels` with trec_eval (pytrec_eval) and
checks that recall, P, reciprocal rank, NDCG and MAP at K equal the bench's own figures in
its result file: the files say the same as the run.

Runs the binary on a generated dataset: an exact run, a qdrant-edge sweep (low ef, so recall
is below 1) and a qdrant-edge run on int8-quantized vectors without rescoring (its answers
are out of true-distance order, so the run file's scores must be nudged to keep the engine's
ranking) on `--runbook build-search`, and an exact run on the `default` runbook against
`dataset qrels --runbook default`.

    python3 -m venv /tmp/trec && /tmp/trec/bin/pip install pytrec_eval-terrier
    /tmp/trec/bin/python scripts/check_trec_files.py [path/to/ragdbeval]
"""

import json
import os
import subprocess
import sys
import tempfile

try:
    import pytrec_eval
except ImportError:
    sys.exit("needs pytrec_eval: pip install pytrec_eval-terrier")

DATASET = "gen:clustered:n=5000,dim=32,queries=300,seed=3"
K = 10
TOL = 1e-9
MEASURES = {f"recall.{K}", f"P.{K}", "recip_rank", f"ndcg_cut.{K}", f"map_cut.{K}"}
# trec_eval measure → the bench's name for it.
NAMES = {f"recall_{K}": "recall", f"P_{K}": "precision", "recip_rank": "mrr",
         f"ndcg_cut_{K}": "ndcg", f"map_cut_{K}": "map"}


def read_qrels(path):
    qrels = {}
    with open(path) as f:
        for line in f:
            qid, _, doc, rel = line.split()
            qrels.setdefault(qid, {})[doc] = int(rel)
    return qrels


def read_run(path):
    run = {}
    with open(path) as f:
        for line in f:
            qid, _, doc, _rank, score, _tag = line.split()
            run.setdefault(qid, {})[doc] = float(score)
    return run


def search_steps(result_path):
    with open(result_path) as f:
        result = json.load(f)
    return [s["quality"] for c in result["configs"] for s in c["steps"] if s["phase"] == "search"]


def check(run_path, qrels_path, quality, label):
    qrels = read_qrels(qrels_path)
    evaluated = pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(read_run(run_path))
    bad = 0
    for measure, name in NAMES.items():
        # trec_eval -c: a query without results counts with 0.
        mean = sum(evaluated.get(q, {}).get(measure, 0.0) for q in qrels) / len(qrels)
        ok = abs(mean - quality[name]) <= TOL
        bad += not ok
        print(f"{'ok  ' if ok else 'DIFF'} {label} {measure}: trec_eval {mean:.6f}, "
              f"bench {quality[name]:.6f}")
    return bad


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "ragdbeval"
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        def run(*args):
            subprocess.run([binary, *args], cwd=tmp, check=True, stdout=subprocess.DEVNULL,
                           env={**os.environ, "RAGDBEVAL_DATA_DIR": os.path.join(tmp, "cache")})

        common = ["bench", "-q", "--dataset", DATASET, "--warmup", "0", "-k", str(K)]
        run(*common, "--db", "exact", "--runbook", "build-search", "--name", "exact",
            "--trec-run", "exact.trec")
        run(*common, "--db", "qdrant-edge", "--runbook", "build-search", "--build-param", "m=4",
            "--build-param", "ef_construct=8", "--search-param", "hnsw_ef=1,16,128",
            "--name", "hnsw", "--trec-run", "hnsw.trec")
        run(*common, "--db", "qdrant-edge", "--runbook", "build-search", "--build-param",
            "quantization=int8", "--search-param", "rescore=false", "--name", "int8",
            "--trec-run", "int8.trec")
        run(*common, "--db", "exact", "--runbook", "default", "--name", "steps",
            "--trec-run", "steps.trec")
        run("dataset", "qrels", "-q", "--dataset", DATASET, "-k", str(K), "--out", "all.qrels")
        run("dataset", "qrels", "-q", "--dataset", DATASET, "-k", str(K), "--runbook", "default",
            "--out", "steps.qrels")
        path = lambda name: os.path.join(tmp, name)
        [exact] = search_steps(path("results/exact.json"))
        bad += check(path("exact.trec"), path("all.qrels"), exact, "exact")
        for i, quality in enumerate(search_steps(path("results/hnsw.json")), 1):
            bad += check(path(f"hnsw.{i}.trec"), path("all.qrels"), quality, f"hnsw #{i}")
        [int8] = search_steps(path("results/int8.json"))
        bad += check(path("int8.trec"), path("all.qrels"), int8, "int8 without rescoring")
        for i, quality in enumerate(search_steps(path("results/steps.json")), 1):
            bad += check(path(f"steps.{i}.trec"), path(f"steps.{i}.qrels"), quality,
                         f"default runbook search {i}")
    print(f"{bad} difference(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
