#!/usr/bin/env python3
"""Holds `ragdbeval eval` to trec_eval (pytrec_eval): on hand-made cases and on a generated
run of 1,500 queries with graded judgments, score ties, short and empty answers, queries
missing from the run and run queries without judgments, every metric trec_eval also computes
must equal trec_eval's own value per query to 1e-6:

    ragdbeval                 trec_eval
    precision@k               P_k
    recall@k                  recall_k
    map@k                     map_cut_k
    ndcg@k (--gain linear)    ndcg_cut_k
    r_precision               Rprec
    rr                        recip_rank

The means are held to trec_eval's too, to 1e-9: by default over the judged queries the run
answers, queries judged only non-relevant included (as trec_eval averages); with
`--means trec_eval-c` over every judged query, those missing from the run counted as 0 (as
trec_eval -c). The generated case has queries judged only non-relevant and judged queries
missing from the run, so a convention that left either out would differ.

Usage: python3 scripts/check_eval_trec.py [path/to/ragdbeval]
       (needs pytrec_eval: pip install pytrec_eval-terrier)
"""

import json
import os
import random
import subprocess
import sys
import tempfile

try:
    import pytrec_eval
except ImportError:
    sys.exit("needs pytrec_eval: pip install pytrec_eval-terrier")

KS = [1, 3, 5, 10, 20, 100]
TOL = 1e-6
MEAN_TOL = 1e-9
MEASURES = {
    "P." + ",".join(map(str, KS)),
    "recall." + ",".join(map(str, KS)),
    "map_cut." + ",".join(map(str, KS)),
    "ndcg_cut." + ",".join(map(str, KS)),
    "Rprec",
    "recip_rank",
}
NAMES = {"r_precision": "Rprec", "rr": "recip_rank"}
for k in KS:
    NAMES[f"precision@{k}"] = f"P_{k}"
    NAMES[f"recall@{k}"] = f"recall_{k}"
    NAMES[f"map@{k}"] = f"map_cut_{k}"
    NAMES[f"ndcg@{k}"] = f"ndcg_cut_{k}"


def hand_made():
    """Small cases whose trec_eval values are easy to reason about: ties broken by docid
    (descending, as trec_eval does), grades 0..3, a negative grade, a judged-irrelevant
    document retrieved, fewer results than k."""
    qrels = {
        "a": {"d1": 2, "d2": 1, "d3": 0, "d4": 3},
        "b": {"x": 1},
        "c": {"p": 1, "q": 1, "r": -1},
    }
    run = {
        "a": {"d3": 0.9, "d2": 0.9, "d9": 0.5, "d4": 0.4, "d1": 0.1},
        "b": {"y": 1.0, "z": 1.0, "x": 1.0},
        "c": {"r": 2.0, "q": 1.5},
    }
    return qrels, run


def generated(seed=7, queries=1500):
    rng = random.Random(seed)
    qrels, run = {}, {}
    for i in range(queries):
        qid = f"q{i}"
        docs = [f"doc{rng.randrange(5000)}" for _ in range(rng.randrange(1, 40))]
        judged = {}
        for d in docs:
            judged[d] = rng.choice([0, 0, 1, 1, 2, 3])
        # Every 37th query is judged only non-relevant (trec_eval counts it in its means).
        if i % 37 == 0:
            judged = {d: 0 for d in judged}
        elif not any(g >= 1 for g in judged.values()):
            judged[docs[0]] = 1
        qrels[qid] = judged
        if i % 50 == 0:
            continue  # missing from the run
        answer = {}
        length = rng.choice([0, 1, 3, 10, 25, 100, 120])
        pool = list(judged) + [f"doc{rng.randrange(5000)}" for _ in range(length)]
        rng.shuffle(pool)
        for d in pool[:length]:
            # Coarse scores: many ties, broken by docid.
            answer[d] = round(rng.random() * 10) / 10
        if answer:
            run[qid] = answer
    for i in range(20):
        run[f"unjudged{i}"] = {"doc1": 1.0}
    return qrels, run


def write(tmp, name, qrels, run):
    qpath, rpath = os.path.join(tmp, f"{name}.qrels"), os.path.join(tmp, f"{name}.run")
    with open(qpath, "w") as f:
        for q, docs in qrels.items():
            for d, g in docs.items():
                f.write(f"{q} 0 {d} {g}\n")
    with open(rpath, "w") as f:
        for q, docs in run.items():
            for rank, (d, s) in enumerate(docs.items(), 1):
                f.write(f"{q} Q0 {d} {rank} {s!r} tag\n")
    return qpath, rpath


def evaluate(binary, tmp, name, qpath, rpath, means):
    out = os.path.join(tmp, f"{name}.{means}.json")
    subprocess.run([binary, "eval", "--qrels", qpath, "--run", rpath, "-k",
                    ",".join(map(str, KS)), "--json", out, "--full-precision",
                    "--means", means],
                   check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def check_means(name, doc, theirs, judged_queries):
    """ragdbeval's means against the mean of trec_eval's per-query values over
    `judged_queries` (a query trec_eval has no value for counts as 0, as with -c)."""
    bad = 0
    means = doc["aggregate"]["metrics"]
    if doc["aggregate"]["scored"] != len(judged_queries):
        print(f"DIFF {name} {doc['averaging']}: means over {doc['aggregate']['scored']} "
              f"queries, trec_eval over {len(judged_queries)}")
        bad += 1
    for name_ours, name_theirs in NAMES.items():
        expected = sum(theirs.get(q, {}).get(name_theirs, 0.0)
                       for q in judged_queries) / len(judged_queries)
        if abs(means[name_ours] - expected) > MEAN_TOL:
            bad += 1
            print(f"DIFF {name} mean {doc['averaging']} {name_ours}: ragdbeval "
                  f"{means[name_ours]}, trec_eval {expected}")
    return bad


def check(binary, tmp, name, qrels, run):
    qpath, rpath = write(tmp, name, qrels, run)
    doc = evaluate(binary, tmp, name, qpath, rpath, "trec_eval")
    ours = {q["query_id"]: q["metrics"] for q in doc["per_query"]}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run)
    compared, worst, bad = 0, 0.0, 0
    for qid, measures in theirs.items():
        for name_ours, name_theirs in NAMES.items():
            a, b = ours[qid][name_ours], measures[name_theirs]
            diff = abs(a - b)
            worst = max(worst, diff)
            compared += 1
            if diff > TOL:
                bad += 1
                if bad <= 10:
                    print(f"DIFF {name} {qid} {name_ours}: ragdbeval {a}, trec_eval {b}")
    missing = len(set(qrels) - set(theirs))
    print(f"{name}: {len(theirs)} queries, {compared} values compared "
          f"({missing} judged queries without results left out), {bad} differ "
          f"(largest difference {worst:.2e})")
    bad += check_means(name, doc, theirs, list(theirs))
    complete = evaluate(binary, tmp, name, qpath, rpath, "trec_eval-c")
    bad += check_means(name, complete, theirs, list(qrels))
    non_relevant = sum(1 for q in qrels.values() if not any(g >= 1 for g in q.values()))
    print(f"{name}: means over {len(theirs)} queries (trec_eval) and {len(qrels)} (-c), "
          f"{non_relevant} judged only non-relevant: {'agree' if not bad else 'differ'}")
    return bad


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "ragdbeval"
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        bad += check(binary, tmp, "hand-made", *hand_made())
        bad += check(binary, tmp, "generated", *generated())
    if bad:
        sys.exit(f"ragdbeval eval differs from trec_eval on {bad} values")
    print("ragdbeval eval agrees with trec_eval")


if __name__ == "__main__":
    main()
