#!/usr/bin/env python3
"""ragdbeval's exact sparse ground truth held to a scipy brute force, and its fused (hybrid)
lists held to RRF and a convex combination computed here from scipy's and numpy's exact lists.

Generated data (seeded): base rows and queries with a Zipf-like choice of dimensions and
positive weights (as BM25 and SPLADE vectors have), many equal weights (ties), some queries
overlapping fewer than K rows. The script writes a dataset directory (dense base.fbin and
query.fbin, and sparse/base.csr, sparse/queries.csr in big-ann-benchmarks' CSR format), then:

1. `ragdbeval dataset gt --sparse -k K` against `Q @ B.T` from scipy.sparse: for every query the
   rows with a positive score, best first, ties by the smaller row, cut at K (padding id -1):
   the ids must be equal and the scores within 1e-5 relative;
2. `ragdbeval bench --db exact --retrieval hybrid --trec-run` with RRF (k = 60) and with a convex
   combination (alpha = 0.3) of depth-50 lists: every id of each exported top-10 must hold, in
   the fusion computed here (RRF: sum of 1 / (k + rank), ranks from 1; convex: alpha times the
   min-max normalised dense similarity plus 1 - alpha times the normalised sparse score, 0 for a
   list that lacks the row), a score no lower than this fusion's 10th (within 1e-9), and the
   run's recall against ragdbeval's exact fused truth must be 1.

Exit 1 on any mismatch.

  .venv/bin/python scripts/check_sparse_scipy.py BIN
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import scipy.sparse as sp

ROWS, QUERIES, DIM, VOCAB, K = 3000, 200, 16, 800, 20


def write_fbin(path, a):
    with open(path, "wb") as f:
        np.array(a.shape, dtype="<u4").tofile(f)
        a.astype("<f4").tofile(f)


def write_csr(path, m):
    m = sp.csr_matrix(m)
    m.sort_indices()
    with open(path, "wb") as f:
        np.array([m.shape[0], m.shape[1], m.nnz], dtype="<i8").tofile(f)
        m.indptr.astype("<i8").tofile(f)
        m.indices.astype("<i4").tofile(f)
        m.data.astype("<f4").tofile(f)


def random_sparse(rng, rows, nnz_mean):
    """Rows of distinct dimensions drawn with a Zipf-like law, weights in (0, 3]; some weights
    rounded to a few values so that exact ties occur."""
    p = 1.0 / np.arange(1, VOCAB + 1)
    p /= p.sum()
    data, indices, indptr = [], [], [0]
    for _ in range(rows):
        n = max(1, rng.poisson(nnz_mean))
        dims = np.unique(rng.choice(VOCAB, size=n, p=p))
        w = rng.uniform(0.1, 3.0, size=len(dims))
        w[rng.random(len(dims)) < 0.3] = 1.0
        indices.extend(dims)
        data.extend(w)
        indptr.append(len(indices))
    return sp.csr_matrix((np.array(data, dtype=np.float32), indices, indptr),
                         shape=(rows, VOCAB))


def exact_lists(base, queries, k):
    """Per query the rows with a positive score, best first, ties by row, cut at k."""
    scores = (queries.astype(np.float64) @ base.astype(np.float64).T).toarray()
    out = []
    for row in scores:
        hit = np.nonzero(row > 0)[0]
        order = sorted(hit, key=lambda r: (-row[r], r))[:k]
        out.append([(int(r), float(row[r])) for r in order])
    return out


def read_gt(path):
    with open(path, "rb") as f:
        n, k = np.frombuffer(f.read(8), dtype="<u4")
        ids = np.frombuffer(f.read(4 * n * k), dtype="<i4").reshape(n, k)
        dists = np.frombuffer(f.read(4 * n * k), dtype="<f4").reshape(n, k)
    return ids, dists


def check_truth(bin_path, work, base, queries):
    # Outside the dataset directory, which would otherwise read it as its (dense) truth.
    out = os.path.join(work + "-gt", "sparse_gt.ibin")
    os.mkdir(work + "-gt")
    subprocess.run([bin_path, "dataset", "gt", "--dataset", work, "--sparse", "-k", str(K),
                    "--out", out, "-q"], check=True, stdout=subprocess.DEVNULL)
    ids, dists = read_gt(out)
    want = exact_lists(base, queries, K)
    bad = 0
    for q, lst in enumerate(want):
        got = [(int(i), -float(d)) for i, d in zip(ids[q], dists[q]) if i >= 0]
        if [r for r, _ in got] != [r for r, _ in lst]:
            bad += 1
            if bad <= 3:
                print(f"query {q}: ragdbeval {got[:5]} scipy {lst[:5]}")
            continue
        for (_, a), (_, b) in zip(got, lst):
            if abs(a - b) > 1e-5 * max(1.0, abs(b)):
                bad += 1
                print(f"query {q}: score {a} vs {b}")
                break
    short = sum(1 for lst in want if len(lst) < K)
    print(f"sparse truth: {QUERIES} queries × top-{K} over {ROWS} rows ({short} queries with "
          f"fewer than {K} overlapping rows): {bad} mismatches against scipy")
    return bad == 0


def dense_lists(base, queries, depth):
    """Exact euclidean neighbours (the directory's default distance), ties by row."""
    d = np.sqrt(((queries[:, None, :] - base[None, :, :]) ** 2).sum(axis=2))
    return [[(int(r), -float(row[r])) for r in sorted(range(len(row)), key=lambda r: (row[r], r))[:depth]]
            for row in d]


def fused(dense, sparse, kind, param):
    scores = {}
    if kind == "rrf":
        for lst in (dense, sparse):
            for rank, (r, _) in enumerate(lst, 1):
                scores[r] = scores.get(r, 0.0) + 1.0 / (param + rank)
    else:
        for lst, w in ((dense, param), (sparse, 1.0 - param)):
            vals = [s for _, s in lst]
            lo, hi = min(vals), max(vals)
            for r, s in lst:
                n = (s - lo) / (hi - lo) if hi > lo else 1.0
                scores[r] = scores.get(r, 0.0) + w * n
    return scores


def read_trec(path):
    runs = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            q, _, doc, rank, _score, _tag = line.split()
            runs.setdefault(int(q), []).append((int(rank), int(doc)))
    return {q: [d for _, d in sorted(v)] for q, v in runs.items()}


def check_fused(bin_path, work, dense_base, dense_queries, base, queries):
    ok = True
    res = os.path.join(work, "results")
    depth = 50
    sparse = exact_lists(base, queries, depth)
    dense = dense_lists(dense_base, dense_queries, depth)
    for kind, param, params in [("rrf", 60.0, ["fusion=rrf", "rrf_k=60"]),
                                ("convex", 0.3, ["fusion=convex", "alpha=0.3"])]:
        trec = os.path.join(work, f"{kind}.trec")
        cmd = [bin_path, "bench", "--db", "exact", "--retrieval", "hybrid", "--dataset", work,
               "-k", "10", "-q", "--out", res, "--name", kind, "--warmup", "0",
               "--trec-run", trec]
        for p in params + [f"depth={depth}"]:
            cmd += ["--search-param", p]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        run = read_trec(trec)
        bad = 0
        for q in range(len(dense)):
            scores = fused(dense[q], sparse[q], kind, param)
            tenth = sorted(scores.values(), reverse=True)[min(9, len(scores) - 1)]
            got = run.get(q, [])
            if len(got) != min(10, len(scores)) or any(scores.get(d, 0.0) < tenth - 1e-9 for d in got):
                bad += 1
                if bad <= 3:
                    print(f"{kind} query {q}: ragdbeval {got} vs {sorted(scores, key=lambda r: (-scores[r], r))[:10]}")
        with open(os.path.join(res, f"{kind}.json"), encoding="utf-8") as f:
            result = json.load(f)
        steps = [s for s in result["configs"][0]["steps"] if s["phase"] == "search"]
        recall = steps[0]["quality"]["recall"]
        print(f"hybrid {kind}: {len(dense)} fused top-10 lists against this script's fusion: "
              f"{bad} mismatches; recall against ragdbeval's exact fused truth {recall:.4f}")
        ok &= bad == 0 and recall == 1.0
    return ok


def main():
    bin_path = sys.argv[1]
    rng = np.random.default_rng(7)
    base = random_sparse(rng, ROWS, 12)
    queries = random_sparse(rng, QUERIES, 4)
    work = tempfile.mkdtemp(prefix="check-sparse.")
    dense_base = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    dense_queries = rng.standard_normal((QUERIES, DIM)).astype(np.float32)
    write_fbin(os.path.join(work, "base.fbin"), dense_base)
    write_fbin(os.path.join(work, "query.fbin"), dense_queries)
    os.mkdir(os.path.join(work, "sparse"))
    write_csr(os.path.join(work, "sparse", "base.csr"), base)
    write_csr(os.path.join(work, "sparse", "queries.csr"), queries)
    ok = check_truth(bin_path, work, base, queries)
    ok &= check_fused(bin_path, work, dense_base.astype(np.float64),
                      dense_queries.astype(np.float64), base, queries)
    print("OK" if ok else "FAIL")
    shutil.rmtree(work)
    shutil.rmtree(work + "-gt")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
