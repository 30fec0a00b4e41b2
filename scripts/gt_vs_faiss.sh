#!/usr/bin/env bash
# Exact ground truth: ragdbeval's kernel against faiss-cpu's IndexFlatL2 on the same data.
#
# Generates N base and Q query vectors of dimension D (uniform, seeded) with numpy, writes
# them as TEXMEX .fvecs, then times
#   - `ragdbeval dataset gt -k K` (the time of the top-k computation alone, as it prints), and
#   - faiss IndexFlatL2.search(queries, K) (index.add excluded, like ours excludes loading),
# both on all cores of this machine. Defaults are the issue's target: 10k × 1M × 128, k = 100.
#
#   ./scripts/gt_vs_faiss.sh                # full size (needs ~1.5 GB RAM, a few minutes)
#   N=100000 Q=1000 ./scripts/gt_vs_faiss.sh
set -euo pipefail
N=${N:-1000000}
Q=${Q:-10000}
D=${D:-128}
K=${K:-100}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -c "import numpy, faiss" 2>/dev/null || pip install -q numpy faiss-cpu
bin=$("$here/ragdbeval" --version >/dev/null && echo "${CARGO_TARGET_DIR:-$HOME/.cache/ragdbeval/target}/release/ragdbeval")

python3 - "$work" "$N" "$Q" "$D" <<'PY'
import sys, numpy as np
work, n, q, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(1)
def fvecs(path, x):
    with open(path, "wb") as f:
        rows = np.empty((x.shape[0], d + 1), dtype=np.float32)
        rows[:, 0] = np.array([d], dtype=np.int32).view(np.float32)[0]
        rows[:, 1:] = x
        rows.tofile(f)
fvecs(f"{work}/bench_base.fvecs", rng.random((n, d), dtype=np.float32))
fvecs(f"{work}/bench_query.fvecs", rng.random((q, d), dtype=np.float32))
PY

echo "== ragdbeval ($N base × $Q queries × $D dims, k=$K)"
"$bin" dataset gt --dataset "$work" -k "$K" --out "$work/gt.hdf5" -q | tee "$work/ours.txt"

echo "== faiss-cpu IndexFlatL2"
python3 - "$work" "$K" "$D" <<'PY'
import sys, time, numpy as np, faiss, h5py
work, k, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def fvecs(path):
    a = np.fromfile(path, dtype=np.float32).reshape(-1, d + 1)
    return np.ascontiguousarray(a[:, 1:])
xb, xq = fvecs(f"{work}/bench_base.fvecs"), fvecs(f"{work}/bench_query.fvecs")
index = faiss.IndexFlatL2(d)
index.add(xb)
t = time.perf_counter()
dist, ids = index.search(xq, k)
secs = time.perf_counter() - t
print(f"faiss {faiss.__version__}: k={k} for {len(xq)} queries over {len(xb)} x {d} in {secs:.3f} s on {faiss.omp_get_max_threads()} threads")
# Agreement with ragdbeval's neighbours (ties may order differently at the boundary).
with h5py.File(f"{work}/gt.hdf5") as f:
    ours = f["neighbors"][:]
agree = np.mean([len(set(a) & set(b)) / k for a, b in zip(ours, ids)])
print(f"neighbour-set agreement with ragdbeval: {agree:.6f}")
PY
