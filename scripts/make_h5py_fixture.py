#!/usr/bin/env python3
"""Writes two small datasets with h5py, the way ann-benchmarks does (variable-length UTF-8
string attributes):
- datasets/fixtures/tiny-h5py-euclidean.hdf5: int32 neighbors, float32 distances, with ties;
- datasets/fixtures/tiny-h5py-angular.hdf5: int64 neighbors, float64 cosine distances, like
  the published ann-benchmarks files. The committed file lets the test suite check
that ragdbeval reads real h5py output; this script documents how it was made.

Run: python3 scripts/make_h5py_fixture.py  (needs: pip install h5py numpy)
"""
import os

import h5py
import numpy as np

rng = np.random.default_rng(7)
train = rng.normal(size=(200, 8)).astype(np.float32)
test = rng.normal(size=(5, 8)).astype(np.float32)
# Two exact duplicates of train[3], so the fixture has distance ties.
train[17] = train[3]
train[42] = train[3]
test[0] = train[3] + 0.01



def top(d, k=20):
    ids = np.broadcast_to(np.arange(d.shape[1]), d.shape)
    order = np.lexsort((ids, d), axis=1)[:, :k]
    return order, np.take_along_axis(d, order, axis=1)


def write(name, distance, neighbors, distances):
    out = os.path.join(os.path.dirname(__file__), "..", "datasets", "fixtures", name)
    with h5py.File(out, "w") as f:
        f.attrs["type"] = "dense"
        f.attrs["distance"] = distance
        f.attrs["dimension"] = train.shape[1]
        f.attrs["point_type"] = "float"
        f.create_dataset("train", data=train)
        f.create_dataset("test", data=test)
        f.create_dataset("neighbors", data=neighbors)
        f.create_dataset("distances", data=distances)
    print("wrote", os.path.normpath(out))


t64, q64 = train.astype(np.float64), test.astype(np.float64)
l2 = np.sqrt(((q64[:, None, :] - t64[None, :, :]) ** 2).sum(-1))
order, dist = top(l2)
write("tiny-h5py-euclidean.hdf5", "euclidean", order.astype(np.int32), dist.astype(np.float32))

cos = 1.0 - (q64 @ t64.T) / np.outer(np.linalg.norm(q64, axis=1), np.linalg.norm(t64, axis=1))
order, dist = top(cos)
write("tiny-h5py-angular.hdf5", "angular", order.astype(np.int64), dist.astype(np.float64))
