#!/usr/bin/env bash
# Exact ground truth: ragdbeval's kernel against faiss-cpu's IndexFlatL2 on the same data.
#
# Generates N base and Q query vectors of dimension D (uniform, seeded) with numpy, writes
# them as TEXMEX .fvecs, then times
#   - `ragdbeval dataset gt -k K` (the time of the top-k computation alone, as it prints), and
#   - faiss IndexFlatL2.search(queries, K) (index.add excluded, like ours excludes loading),
# both on all cores of this machine. Defaults are the issue's target: 10k × 1M × 128, k = 100.
# RUNS=n repeats the pair n times, interleaved, so that load from other processes on the
# machine hits both sides alike (compare the best time of each).
#
#   ./scripts/gt_vs_faiss.sh                # full size (needs ~1.5 GB RAM, a few minutes)
#   N=100000 Q=1000 ./scripts/gt_vs_faiss.sh
#   RUNS=3 ./scripts/gt_vs_faiss.sh
#   MAPPED=1 RUNS=3 ./scripts/gt_vs_faiss.sh   # also the same data as big-ann .fbin, which
#                                              # ragdbeval memory-maps (issue 16: within 5 %)
#   BASELINE_BIN=/path/to/older/ragdbeval RUNS=3 ./scripts/gt_vs_faiss.sh
#                                              # also an older build on the same data, in the
#                                              # same rounds (a before/after comparison)
set -euo pipefail
N=${N:-1000000}
Q=${Q:-10000}
D=${D:-128}
K=${K:-100}
RUNS=${RUNS:-1}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# numpy, faiss-cpu and h5py (to read our output) live in their own virtualenv under the cache:
# neither the system python (often "externally managed") nor the project's .venv is touched.
venv="${RAGDBEVAL_FAISS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ragdbeval/faiss-venv}"
if ! "$venv/bin/python" -c "import numpy, faiss, h5py" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q numpy faiss-cpu h5py
fi
py="$venv/bin/python"
# RAGDBEVAL_BIN: time an already-built binary (e.g. a copy, while the shared target dir is rebuilt).
bin=${RAGDBEVAL_BIN:-$("$here/ragdbeval" --version >/dev/null && echo "${CARGO_TARGET_DIR:-$HOME/.cache/ragdbeval/target}/release/ragdbeval")}

"$py" - "$work" "$N" "$Q" "$D" <<'PY'
import sys, numpy as np
work, n, q, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(1)
def fvecs(path, x):
    with open(path, "wb") as f:
        rows = np.empty((x.shape[0], d + 1), dtype=np.float32)
        rows[:, 0] = np.array([d], dtype=np.int32).view(np.float32)[0]
        rows[:, 1:] = x
        rows.tofile(f)
xb, xq = rng.random((n, d), dtype=np.float32), rng.random((q, d), dtype=np.float32)
fvecs(f"{work}/bench_base.fvecs", xb)
fvecs(f"{work}/bench_query.fvecs", xq)
# The same vectors as a big-ann directory (header n, d as u32, then rows), for MAPPED=1.
import os
os.makedirs(f"{work}/fbin", exist_ok=True)
for name, x in (("base", xb), ("query", xq)):
    with open(f"{work}/fbin/{name}.fbin", "wb") as f:
        np.array(x.shape, dtype="<u4").tofile(f)
        x.astype("<f4").tofile(f)
PY

for run in $(seq 1 "$RUNS"); do
  echo "== ragdbeval ($N base × $Q queries × $D dims, k=$K)"
  "$bin" dataset gt --dataset "$work" -k "$K" --out "$work/gt.hdf5" -q | tee "$work/ours.txt"
  if [ -n "${MAPPED:-}" ]; then
    echo "== ragdbeval, the same vectors memory-mapped from .fbin"
    "$bin" dataset gt --dataset "$work/fbin" -k "$K" --out "$work/gt-mapped.hdf5" -q
    cmp -s <("$py" -c "import h5py,sys; print(h5py.File(sys.argv[1])['neighbors'][:].tobytes().hex())" "$work/gt.hdf5") \
           <("$py" -c "import h5py,sys; print(h5py.File(sys.argv[1])['neighbors'][:].tobytes().hex())" "$work/gt-mapped.hdf5") \
      && echo "mapped and in-memory neighbours identical" || { echo "mapped and in-memory neighbours DIFFER" >&2; exit 1; }
  fi

  if [ -n "${BASELINE_BIN:-}" ]; then
    echo "== baseline $BASELINE_BIN (in memory)"
    "$BASELINE_BIN" dataset gt --dataset "$work" -k "$K" --out "$work/gt-baseline.hdf5" -q
    # Reported, not required: an older build may predate a change of the distance arithmetic
    # that reorders exact ties.
    "$py" - "$work" <<'PY'
import sys, h5py, numpy as np
work = sys.argv[1]
a = h5py.File(f"{work}/gt.hdf5")["neighbors"][:]
b = h5py.File(f"{work}/gt-baseline.hdf5")["neighbors"][:]
rows = int((a != b).any(axis=1).sum())
sets = sum(set(x) != set(y) for x, y in zip(a, b))
print(f"baseline vs current: {rows} of {len(a)} neighbour lists differ in order, {sets} as sets")
PY
  fi

  echo "== faiss-cpu IndexFlatL2"
  "$py" - "$work" "$K" "$D" <<'PY'
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
# Where the sets differ, who is right? Float64 distances of the ids only one side returned:
# ragdbeval's are exact when none of its own is farther than any of faiss's (up to the f32
# rounding of the final comparison, relative 1e-6).
worse = 0
differing = [i for i, (a, b) in enumerate(zip(ours, ids)) if set(a) != set(b)]
for i in differing:
    q = xq[i].astype(np.float64)
    d64 = lambda s: np.sqrt(((xb[sorted(s)].astype(np.float64) - q) ** 2).sum(axis=1))
    only_ours, only_faiss = set(ours[i]) - set(ids[i]), set(ids[i]) - set(ours[i])
    if d64(only_ours).max() > d64(only_faiss).min() * (1 + 1e-6):
        worse += 1
print(f"queries whose sets differ: {len(differing)}; of those, ragdbeval farther in float64: {worse}")
PY
done
