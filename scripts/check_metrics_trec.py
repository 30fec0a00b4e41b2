#!/usr/bin/env python3
"""Cross-checks ragdbeval's quality metrics against the reference implementations.

ragdbeval's unit test `metrics::quality::tests::figures_are_consistent_and_never_exceed_one`
writes its cases (the hand-computed ones by name, plus 3000 generated ones with ties, repeats,
strangers and short lists) and ragdbeval's figures for each as JSON lines when
RAGDBEVAL_METRIC_CASES is set. This script scores the same inputs with

- trec_eval (through pytrec_eval): recall.K, P.K, recip_rank, ndcg_cut.K, map_cut.K, with the
  qrels built here, independently, by the rule of docs/metrics.md for the relevant set under ties;
- ann-benchmarks' knn, "epsilon" and "largeepsilon" recall and one query's "rel":
  `knn_threshold`, `epsilon_threshold` and `get_recall_values` below are copied from
  ann_benchmarks/plotting/metrics.py (rel's loop, `ann_benchmarks_rel`, restated for one
  query), run distances padded with +inf as in results.py, given as float64 (numpy 1.x's
  arithmetic on float32 scalars, which ann-benchmarks was written for; scripts/
  check_metrics_annb.py says more);

prints the named cases side by side and exits non-zero on any difference.

With --result, it does the same end to end on a real run: every search step of a
build-search result file (ids = train rows), its per-query sidecar and the ground truth of
the same dataset written by `ragdbeval dataset gt -k DEPTH --out gt.h5` (needs h5py); the
means of the reference figures must equal the step's summary.

    python3 -m venv /tmp/trec && /tmp/trec/bin/pip install pytrec_eval-terrier numpy h5py
    /tmp/trec/bin/python scripts/check_metrics_trec.py            # runs the unit test
    /tmp/trec/bin/python scripts/check_metrics_trec.py cases.jsonl  # or reads its output
    /tmp/trec/bin/python scripts/check_metrics_trec.py --result results/RUN.json --truth gt.h5
"""

import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import pytrec_eval
except ImportError:
    sys.exit("needs pytrec_eval and numpy: pip install pytrec_eval-terrier numpy")

TOL = 1e-9
ID_MAX = 2**64 - 1


# --- ann-benchmarks, ann_benchmarks/plotting/metrics.py (verbatim) ---
def knn_threshold(data, count, epsilon):
    return data[count - 1] + epsilon


def epsilon_threshold(data, count, epsilon):
    return data[count - 1] * (1 + epsilon)


def get_recall_values(dataset_distances, run_distances, count, threshold, epsilon=1e-3):
    recalls = np.zeros(len(run_distances))
    for i in range(len(run_distances)):
        t = threshold(dataset_distances[i], count, epsilon)
        actual = 0
        for d in run_distances[i][:count]:
            if d <= t:
                actual += 1
        recalls[i] = actual
    return (np.mean(recalls) / float(count), np.std(recalls) / float(count), recalls)


# --- end of ann-benchmarks ---


def load_cases(path):
    cases = []
    with open(path) as f:
        for line in f:
            if line.strip():
                c = json.loads(line)
                # serde_json writes non-finite floats as null: +inf pads the truth, NaN marks
                # a returned id outside the dataset.
                c["gt_distances"] = [math.inf if d is None else d for d in c["gt_distances"]]
                c["distances"] = [math.nan if d is None else d for d in c["distances"]]
                cases.append(c)
    return cases


def run_unit_test(path):
    env = dict(os.environ, RAGDBEVAL_METRIC_CASES=path)
    cmd = [
        "cargo", "test", "--release", "--lib",
        "metrics::quality::tests::figures_are_consistent_and_never_exceed_one",
    ]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run(cmd, cwd=here, env=env, check=True, stdout=subprocess.DEVNULL)


def relevant_set(c):
    """The rule of docs/metrics.md, written again from its text: a true top-r, |R| = r; points strictly
    closer than the r-th true distance b are in; the remaining slots go to tie partners at b,
    those the engine returned first, in its order (a returned id the truth does not list is a
    partner if its distance is <= b). Returns (qrels ids, answer ids with repeats renamed)."""
    truth = [
        (i, d) for i, d in zip(c["gt_ids"], c["gt_distances"]) if i != ID_MAX and math.isfinite(d)
    ]
    k = c["k"]
    answer = []
    seen = set()
    for pos, (i, d) in enumerate(list(zip(c["ids"], c["distances"]))[:k]):
        # A repeat keeps its rank as a miss: a placeholder document nobody judged.
        answer.append((f"repeat@{pos}", d) if i in seen else (str(i), d))
        seen.add(i)
    r = min(c["relevant"], len(truth))
    if r == 0:
        return set(), answer
    b = truth[r - 1][1]
    closer = {str(i) for i, d in truth if d < b}
    listed_partners = [str(i) for i, d in truth if d == b]
    slots = r - len(closer)
    chosen = []
    for doc, d in answer:
        if len(chosen) == slots:
            break
        if doc in closer or doc.startswith("repeat@"):
            continue
        if doc in listed_partners or (doc not in {str(i) for i, _ in truth} and d <= b):
            chosen.append(doc)
    # Fill the slots the answer left open with listed partners: they only set |R| = r.
    for doc in listed_partners:
        if len(chosen) == slots:
            break
        if doc not in chosen:
            chosen.append(doc)
    return closer | set(chosen), answer


def trec(c):
    qrels_ids, answer = relevant_set(c)
    k = c["k"]
    measures = {f"recall.{k}", f"P.{k}", "recip_rank", f"ndcg_cut.{k}", f"map_cut.{k}"}
    out = {"recall": 0.0, "precision": 0.0, "recip_rank": 0.0, "ndcg": 0.0, "ap": 0.0}
    if not qrels_ids or not answer:
        # trec_eval leaves out a query without relevant documents or without results; with
        # -c it scores the latter 0 on every measure, as ragdbeval does.
        return out, qrels_ids
    qrels = {"q": {doc: 1 for doc in qrels_ids}}
    # Distinct descending scores keep the engine's order (trec_eval sorts by score).
    run = {"q": {doc: float(len(answer) - pos) for pos, (doc, _) in enumerate(answer)}}
    res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)["q"]
    out["recall"] = res[f"recall_{k}"]
    out["precision"] = res[f"P_{k}"]
    out["recip_rank"] = res["recip_rank"]
    out["ndcg"] = res[f"ndcg_cut_{k}"]
    out["ap"] = res[f"map_cut_{k}"]
    return out, qrels_ids


def ann_benchmarks(c):
    """ann-benchmarks' knn recall; None where it cannot score the case (truth shallower
    than K)."""
    figures = ann_benchmarks_all(c)
    return None if figures is None else figures["recall_distance"]


def ann_benchmarks_all(c):
    """knn, epsilon and largeepsilon recall and rel of one case, None where ann-benchmarks
    cannot score it (truth shallower than K)."""
    truth = [d for d in c["gt_distances"] if math.isfinite(d)]
    k = c["k"]
    if len(truth) < k:
        return None
    run = list(c["distances"][:k]) + [math.inf] * (k - len(c["distances"][:k]))
    # ann-benchmarks stores distances as float32 arrays; widened exactly to float64.
    true_d = [np.array(truth, dtype=np.float32).astype(np.float64)]
    run_d = [np.array(run, dtype=np.float32).astype(np.float64)]
    # ann-benchmarks recomputes distances, so it has none missing: NaN (an id outside the
    # dataset) is never within a threshold, and in rel it stands for no distance (+inf).
    run_d = [np.where(np.isnan(run_d[0]), np.inf, run_d[0])]
    out = {}
    for name, threshold, eps in [("recall_distance", knn_threshold, 1e-3),
                                 ("recall_epsilon", epsilon_threshold, 0.01),
                                 ("recall_large_epsilon", epsilon_threshold, 0.1)]:
        mean, _, _ = get_recall_values(true_d, run_d, k, threshold, eps)
        out[name] = float(mean)
    out["rel"] = ann_benchmarks_rel(true_d, run_d)
    return out


def ann_benchmarks_rel(dataset_distances, run_distances):
    """The loop of ann-benchmarks' `rel` (metrics.py), without its HDF5 cache."""
    total_closest_distance = 0.0
    total_candidate_distance = 0.0
    for true_distances, found_distances in zip(dataset_distances, run_distances):
        for rdist, cdist in zip(true_distances, found_distances):
            total_closest_distance += rdist
            total_candidate_distance += cdist
    if total_closest_distance < 0.01:
        return float("inf")
    return total_candidate_distance / total_closest_distance


def same(ours, theirs):
    """Equal to TOL, +inf only to +inf."""
    if math.isinf(ours) or math.isinf(theirs):
        return ours == theirs
    return abs(ours - theirs) <= TOL


def has_repeat(c):
    ids = c["ids"][: c["k"]]
    return len(set(ids)) < len(ids)


def check_result(result_path, truth_path):
    """End to end: reference figures of every query of every search step, averaged, against
    the summary ragdbeval wrote."""
    import h5py

    with open(result_path) as f:
        result = json.load(f)
    sidecar = {}
    with open(result_path[: -len(".json")] + ".queries.jsonl") as f:
        for line in f:
            q = json.loads(line)
            sidecar.setdefault((q["config"], q["step"]), []).append(q)
    with h5py.File(truth_path, "r") as h5:
        gt_ids = h5["neighbors"][:]
        gt_d = h5["distances"][:]
    failures = 0
    print(f"{'config':>6} {'step':>4}  {'metric':<16} {'ragdbeval':>10} {'reference':>10}")
    for ci, config in enumerate(result["configs"]):
        for step in config["steps"]:
            if step.get("phase") != "search" or "sidecar_step" not in step:
                continue
            summary = step["quality"]
            k, relevant = summary["k"], summary["relevant"]
            queries = sidecar.get((ci, step["sidecar_step"]), [])
            sums = {"recall": 0.0, "precision": 0.0, "mrr": 0.0, "ndcg": 0.0, "map": 0.0}
            ab_sum, ab_n = 0.0, 0
            for q in queries:
                qi = q["query"]
                c = {
                    "k": k,
                    "relevant": relevant,
                    "gt_ids": [int(i) for i in gt_ids[qi]],
                    "gt_distances": [float(d) for d in gt_d[qi]],
                    "ids": q["ids"],
                    "distances": [math.nan if d is None else d for d in q["distances"]],
                }
                ref, _ = trec(c)
                for ours, theirs in [("recall", "recall"), ("precision", "precision"),
                                     ("mrr", "recip_rank"), ("ndcg", "ndcg"), ("map", "ap")]:
                    sums[ours] += ref[theirs]
                ab = ann_benchmarks(c)
                if ab is not None and not has_repeat(c):
                    ab_sum, ab_n = ab_sum + ab, ab_n + 1
            n = len(queries)
            rows = [(m, summary[m], v / n) for m, v in sums.items()]
            if ab_n == n:
                rows.append(("recall_distance", summary["recall_distance"], ab_sum / n))
            for m, ours, theirs in rows:
                bad = abs(ours - theirs) > 1e-9
                failures += bad
                mark = "  <-- differs" if bad else ""
                print(f"{ci:>6} {step['sidecar_step']:>4}  {m:<16} {ours:>10.6f} {theirs:>10.6f}{mark}")
    print(f"\n{'all agree' if failures == 0 else f'{failures} figures differ'}")
    sys.exit(1 if failures else 0)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--result" and sys.argv[3] == "--truth":
        check_result(sys.argv[2], sys.argv[4])
    if len(sys.argv) > 1:
        cases = load_cases(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cases.jsonl")
            run_unit_test(path)
            cases = load_cases(path)

    names = ["recall", "precision", "recip_rank", "ndcg", "ap"]
    failures = 0
    print(f"{'case':<26} {'K':>3} {'r':>3}  {'metric':<16} {'ragdbeval':>10} {'reference':>10}")
    for c in cases:
        ref, qrels_ids = trec(c)
        ab = ann_benchmarks_all(c)
        rows = [(n, c[n], ref[n], f"trec_eval") for n in names]
        if ab is not None and not has_repeat(c):
            for n, theirs in ab.items():
                # rel is +inf (JSON null) where ann-benchmarks gives +inf.
                ours = math.inf if c.get(n, 0.0) is None else c.get(n, math.nan)
                rows.append((n, ours, theirs, "ann-benchmarks"))
        bad = [row for row in rows if not same(row[1], row[2])]
        failures += len(bad)
        if c["name"] != "generated":
            for n, ours, theirs, _ in rows:
                mark = "" if same(ours, theirs) else "  <-- differs"
                print(
                    f"{c['name']:<26} {c['k']:>3} {c['relevant']:>3}  {n:<16} "
                    f"{ours:>10.6f} {theirs:>10.6f}{mark}"
                )
        elif bad:
            print(f"generated case differs: {bad}\n  {c}\n  qrels {sorted(qrels_ids)}")
    generated = sum(1 for c in cases if c["name"] == "generated")

    # The figures in the brief: trec_eval with the whole tie group {0, 1} as qrels.
    lead = next((c for c in cases if c["name"] == "duplicated_nn_r1"), None)
    if lead is not None:
        k = lead["k"]
        run = {"q": {str(i): float(len(lead["ids"]) - p) for p, i in enumerate(lead["ids"])}}
        res = pytrec_eval.RelevanceEvaluator(
            {"q": {"0": 1, "1": 1}}, {f"ndcg_cut.{k}", f"map_cut.{k}"}
        ).evaluate(run)["q"]
        print(
            f"\nduplicated_nn_r1 with qrels = the whole tie group {{0, 1}} (not a top-1): "
            f"ndcg_cut_{k} {res[f'ndcg_cut_{k}']:.4f}, map_cut_{k} {res[f'map_cut_{k}']:.4f}"
        )
    print(
        f"\n{len(cases)} cases ({generated} generated): "
        f"{'all agree' if failures == 0 else f'{failures} figures differ'}"
    )
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
