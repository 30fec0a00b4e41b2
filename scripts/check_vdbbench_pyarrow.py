#!/usr/bin/env python3
"""ragdbeval reads VectorDBBench directories as pyarrow writes them.

The Rust tests write their Parquet files with ragdbeval's own writer; this check writes them
the way VectorDBBench's files are made (pandas/pyarrow: `id` int64 and `emb` as a list of
float32 or, from Python floats, of float64; shuffled shards `shuffle_train-NN-of-M.parquet`;
`neighbors.parquet` with `neighbors_id`; `scalar_labels.parquet`), then runs the binary:

  - `dataset info DIR` must report the layout, the sizes and a ground truth read from the file;
  - `bench --db exact --dataset DIR` must score recall 1.0 against those neighbours, which
    numpy computed independently (float64 brute force);
  - a float64 `emb` column must load with the "rounded to f32" warning in the result.

Usage: check_vdbbench_pyarrow.py RAGDBEVAL_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def write_dir(path, train, test, k, as_double, shards):
    os.makedirs(path)
    n = len(train)
    order = np.random.default_rng(7).permutation(n)
    # Exact neighbours in float64 (cosine, as VectorDBBench's Cohere/OpenAI sets).
    tn = train / np.linalg.norm(train, axis=1, keepdims=True)
    qn = test / np.linalg.norm(test, axis=1, keepdims=True)
    sims = qn.astype(np.float64) @ tn.astype(np.float64).T
    neighbors = np.argsort(-sims, axis=1, kind="stable")[:, :k]

    def emb_column(rows):
        if as_double:
            # Doubles a hair off each f32 (well under half an f32 step, so they round back to
            # the same vectors the neighbours were computed on): the loader must say it rounded.
            nudged = rows.astype(np.float64) * (1.0 + 1e-12) + 1e-30
            return pa.array([list(r) for r in nudged], type=pa.list_(pa.float64()))
        return pa.array(list(rows), type=pa.list_(pa.float32()))

    for s, part in enumerate(np.array_split(order, shards)):
        table = pa.table({"id": pa.array(part, type=pa.int64()), "emb": emb_column(train[part])})
        pq.write_table(table, os.path.join(path, f"shuffle_train-{s:02d}-of-{shards}.parquet"))
    pq.write_table(
        pa.table({"id": pa.array(np.arange(len(test)), type=pa.int64()), "emb": emb_column(test)}),
        os.path.join(path, "test.parquet"),
    )
    pq.write_table(
        pa.table({
            "id": pa.array(np.arange(len(test)), type=pa.int64()),
            "neighbors_id": pa.array(list(neighbors), type=pa.list_(pa.int64())),
        }),
        os.path.join(path, "neighbors.parquet"),
    )
    labels = [f"label_{i % 20}" for i in range(n)]
    pq.write_table(
        pa.table({"id": pa.array(np.arange(n), type=pa.int64()), "labels": labels}),
        os.path.join(path, "scalar_labels.parquet"),
    )


def run(binary, cwd, *args):
    out = subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"FAIL: ragdbeval {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def main():
    binary = os.path.abspath(sys.argv[1])
    rng = np.random.default_rng(11)
    train = rng.normal(size=(3000, 24)).astype(np.float32)
    test = rng.normal(size=(40, 24)).astype(np.float32)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for as_double in (False, True):
            name = f"cohere_check_{'f64' if as_double else 'f32'}"
            path = os.path.join(tmp, name)
            write_dir(path, train, test, 10, as_double, shards=3)
            info = run(binary, tmp, "dataset", "info", path)
            wanted = ["VectorDBBench layout", "3000 × 24", "test:          40", "angular",
                      "depth 10 (File)"]
            missing = [w for w in wanted if w not in info]
            if missing:
                print(f"FAIL {name}: `dataset info` lacks {missing}:\n{info}")
                failures += 1
            run(binary, tmp, "bench", "--db", "exact", "--dataset", path, "-k", "10",
                "--name", name, "-q")
            with open(os.path.join(tmp, "results", f"{name}.json")) as f:
                result = json.load(f)
            text = json.dumps(result)
            recall = [v for k, v in _walk(result) if k == "recall"]
            ok = recall and all(abs(r - 1.0) < 1e-12 for r in recall)
            rounded = "rounded to f32" in text
            if not ok or rounded != as_double:
                print(f"FAIL {name}: recall {recall}, rounded warning {rounded} (want {as_double})")
                failures += 1
            else:
                print(f"ok   {name}: recall {recall[0]} against pyarrow-written neighbours, "
                      f"rounded warning {rounded}")
    if failures:
        sys.exit(f"{failures} failure(s)")
    print("VectorDBBench directories written by pyarrow: read correctly")


def _walk(value, key=None):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)
    else:
        yield key, value


if __name__ == "__main__":
    main()
