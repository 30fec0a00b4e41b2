#!/usr/bin/env bash
# Exact ground truth: ragdbeval against the machine's matrix product and faiss-cpu.
#
# Generates N base and Q query vectors of dimension D (uniform, seeded) with numpy, writes
# them as TEXMEX .fvecs, then runs RUNS rounds, each timing in turn:
#   - SGEMM: numpy's (OpenBLAS) product of the same shape into a preallocated output, in
#     blocks (the output of 10k × 1M would be 40 GB), the faster of two blockings (no
#     selection at all: the bound for any exact top-k on this machine);
#   - faiss-cpu IndexFlatL2: `add` + `search` (and `search` alone);
#   - ragdbeval `dataset gt -k K`: the whole process (loading the .fvecs and writing the HDF5
#     included) and the kernel's time as it prints it, with the output written alongside;
#     then `--write-first`, which writes the output's vectors before the kernel starts, for
#     the kernel's time alone (the one held against SGEMM).
# All on all cores, each side after the VM has settled (see `settle`). A round runs the
# sides REPS times in turn and keeps each side's fastest run (one run of a multi-threaded
# process moves by 10-20 % on a shared 2-core machine, and only ever slower). Prints every
# run, then per side the median of the rounds, the two ratios the performance targets name (kernel /
# SGEMM, target ≤ 1.15; whole process / faiss add + search, target ≤ 1.0) and the spread of
# each ratio over the rounds; the second also against faiss's fastest run of all rounds,
# since faiss's own time moves in stretches; then the same ratios from each round's median
# run, for information. RUNS is the number of rounds. Defaults are 10k × 1M × 128, k = 100,
# 3 rounds of 3 runs (the full size takes ~20 minutes; REPS=1 a third of that).
#
#   ./scripts/gt_vs_faiss.sh                # full size (needs ~2.5 GB RAM, a few minutes)
#   N=200000 Q=2000 RUNS=3 ./scripts/gt_vs_faiss.sh
#   REPS=1 ./scripts/gt_vs_faiss.sh        # one run of each side per round
#   MAPPED=1 RUNS=3 ./scripts/gt_vs_faiss.sh   # also the same data as big-ann .fbin, which
#                                              # ragdbeval memory-maps (within 5 %)
#   BASELINE_BIN=/path/to/older/ragdbeval RUNS=3 ./scripts/gt_vs_faiss.sh
#                                              # also an older build on the same data, in the
#                                              # same rounds, first and second in turn (a
#                                              # before/after comparison; REPS even balances it)
set -euo pipefail
N=${N:-1000000}
Q=${Q:-10000}
D=${D:-128}
K=${K:-100}
RUNS=${RUNS:-3}
REPS=${REPS:-3}
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

# Before each timed side: wait until the VM has handed the memory the last process freed back
# to its host. On a VM with free page reporting (virtio-balloon), pages freed in large blocks
# are reported 2-3 s later, by the guest's kernel on the same vCPUs: after SGEMM freed its
# 1 GB output, that work fell into whichever side ran next and slowed it by up to 15 %
# (measured: ragdbeval's kernel 0.54-0.58 s, or 0.60-1.07 s when it came 2-3 s after
# SGEMM). Waits for 3 s without a report, at most 15 s; nothing on a machine without it.
reported=/sys/module/page_reporting/parameters/reported_kib
settle() {
  [ -r "$reported" ] || return 0
  local last quiet=0 waited=0
  last=$(cat "$reported")
  while [ "$quiet" -lt 15 ] && [ "$waited" -lt 75 ]; do
    sleep 0.2
    waited=$((waited + 1))
    if [ "$(cat "$reported")" = "$last" ]; then quiet=$((quiet + 1)); else quiet=0; last=$(cat "$reported"); fi
  done
}
# The kernel-alone run writes to memory when it can: no disk work of its own (or of the last
# run's deleted file) in flight while it is timed.
first_out="$work/gt-first.hdf5"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  shm=$(mktemp -d /dev/shm/ragdbeval-gt.XXXXXX)
  trap 'rm -rf "$work" "$shm"' EXIT
  first_out="$shm/gt-first.hdf5"
fi

all_times="$work/times.txt"
times="$work/rep.txt"
: >"$all_times"
# BASELINE_BIN's run of the same command (output written alongside), settled like ours; the
# two alternate which goes first, run by run.
baseline_run() {
  rm -f "$work/gt-baseline.hdf5"
  settle
  echo "== baseline $BASELINE_BIN (in memory)"
  "$BASELINE_BIN" dataset gt --dataset "$work" -k "$K" --out "$work/gt-baseline.hdf5" -q \
    | tee "$work/baseline.txt"
  echo "baseline $(sed -n 's/^ground truth:.* in \([0-9.]*\) s on.*/\1/p' "$work/baseline.txt")" >>"$times"
}

for run in $(seq 1 "$RUNS"); do
for rep in $(seq 1 "$REPS"); do
  : >"$times"
  settle
  echo "== round $run, run $rep of $REPS: SGEMM (numpy) of the same shape"
  "$py" - "$work" "$D" "$times" <<'PY'
import sys, time, numpy as np
work, d, times = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def fvecs(path):
    a = np.fromfile(path, dtype=np.float32).reshape(-1, d + 1)
    return np.ascontiguousarray(a[:, 1:])
xb, xq = fvecs(f"{work}/bench_base.fvecs"), fvecs(f"{work}/bench_query.fvecs")
# The product's speed depends on how its output is blocked (a 40 GB output cannot be kept):
# whole-query-set blocks of up to 1 GB, and 2048 × 8192 blocks (about 64 MB, the fastest
# shape measured on the 2-core machines this was written on). The faster one is the bound.
def product(qstep, bstep):
    out = np.empty((min(qstep, len(xq)), min(bstep, len(xb))), dtype=np.float32)
    np.matmul(xq[: out.shape[0]], xb[: out.shape[1]].T, out=out)  # warm the output pages
    t = time.perf_counter()
    for q0 in range(0, len(xq), qstep):
        q1 = min(len(xq), q0 + qstep)
        for b0 in range(0, len(xb), bstep):
            b1 = min(len(xb), b0 + bstep)
            np.matmul(xq[q0:q1], xb[b0:b1].T, out=out[: q1 - q0, : b1 - b0])
    return time.perf_counter() - t
shapes = [(len(xq), max(1, (1 << 30) // (4 * len(xq)))), (2048, 8192)]
timed = [(product(q, b), q, b) for q, b in shapes]
for secs, q, b in timed:
    print(f"SGEMM {len(xq)} x {len(xb)} x {d}, output blocks {min(q, len(xq))} x {min(b, len(xb))}: {secs:.3f} s")
secs = min(t for t, _, _ in timed)
open(times, "a").write(f"sgemm {secs}\n")
PY

  # A fresh output, as a user's first run writes it: renaming over the last run's 100 MB file
  # made the kernel free its blocks (70 ms on an ext4 mounted with `discard`), a cost of this
  # loop and not of computing the truth. (Deleted before `settle`, which then waits for the
  # freed pages too.)
  rm -f "$work/gt.hdf5"
  if [ -n "${BASELINE_BIN:-}" ] && [ $((rep % 2)) -eq 0 ]; then baseline_run; fi
  settle
  echo "== round $run, run $rep: ragdbeval ($N base × $Q queries × $D dims, k=$K)"
  start=$(date +%s.%N)
  "$bin" dataset gt --dataset "$work" -k "$K" --out "$work/gt.hdf5" -q | tee "$work/ours.txt"
  end=$(date +%s.%N)
  kernel=$(sed -n 's/^ground truth:.* in \([0-9.]*\) s on.*/\1/p' "$work/ours.txt")
  process=$(python3 -c "print($end - $start)")
  echo "whole process (load, kernel, write): $process s"
  echo "kernel_alongside $kernel" >>"$times"
  echo "process $process" >>"$times"
  # The kernel alone: by default the output's vectors are written on another thread while the
  # truth is computed (the process ends sooner), which takes CPU from the kernel, the more so
  # when the page cache's new pages are fresh from the VM's host (see `--write-first`). The
  # SGEMM above writes into warmed memory; against it the kernel is timed with --write-first.
  rm -f "$first_out"
  settle
  echo "== round $run, run $rep: ragdbeval --write-first (the kernel alone)"
  "$bin" dataset gt --dataset "$work" -k "$K" --out "$first_out" -q --write-first | tee "$work/ours.txt"
  kernel=$(sed -n 's/^ground truth:.* in \([0-9.]*\) s on.*/\1/p' "$work/ours.txt")
  echo "kernel $kernel" >>"$times"
  cmp -s "$work/gt.hdf5" "$first_out" \
    || { echo "the output written first differs from the one written alongside" >&2; exit 1; }
  if [ -n "${MAPPED:-}" ]; then
    echo "== ragdbeval, the same vectors memory-mapped from .fbin"
    "$bin" dataset gt --dataset "$work/fbin" -k "$K" --out "$work/gt-mapped.hdf5" -q
    cmp -s <("$py" -c "import h5py,sys; print(h5py.File(sys.argv[1])['neighbors'][:].tobytes().hex())" "$work/gt.hdf5") \
           <("$py" -c "import h5py,sys; print(h5py.File(sys.argv[1])['neighbors'][:].tobytes().hex())" "$work/gt-mapped.hdf5") \
      && echo "mapped and in-memory neighbours identical" || { echo "mapped and in-memory neighbours DIFFER" >&2; exit 1; }
  fi

  if [ -n "${BASELINE_BIN:-}" ]; then
    [ $((rep % 2)) -eq 0 ] || baseline_run # odd runs: the baseline second, even: first
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

  settle
  echo "== round $run, run $rep: faiss-cpu IndexFlatL2"
  "$py" - "$work" "$K" "$D" "$times" <<'PY'
import sys, time, numpy as np, faiss, h5py
work, k, d, times = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def fvecs(path):
    a = np.fromfile(path, dtype=np.float32).reshape(-1, d + 1)
    return np.ascontiguousarray(a[:, 1:])
xb, xq = fvecs(f"{work}/bench_base.fvecs"), fvecs(f"{work}/bench_query.fvecs")
t0 = time.perf_counter()
index = faiss.IndexFlatL2(d)
index.add(xb)
t = time.perf_counter()
dist, ids = index.search(xq, k)
secs = time.perf_counter() - t
both = time.perf_counter() - t0
print(f"faiss {faiss.__version__}: k={k} for {len(xq)} queries over {len(xb)} x {d}: search {secs:.3f} s, add + search {both:.3f} s on {faiss.omp_get_max_threads()} threads")
open(times, "a").write(f"faiss_search {secs}\nfaiss_all {both}\n")
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
  sed "s/^/$run /" "$times" >>"$all_times"
done
done

python3 - "$all_times" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    run, name, value = line.split()
    runs.setdefault(name, {}).setdefault(int(run), []).append(float(value))
# A round's value is the fastest of its runs, for every side alike: on a shared 2-core VM
# noise only ever slows a run (another tenant, the host's own work), so the fastest run is
# the closest to what the code costs (the practice of Python's timeit and ann-benchmarks).
# Over three runs of this script, with the median of three runs per round one round
# in three moved a ratio by 6-12 % (a stretch that slowed two of three kernel runs from
# 0.55 to 0.64 s while SGEMM held still); the medians are printed too.
fastest = {name: [min(v) for _, v in sorted(by_round.items())] for name, by_round in runs.items()}
medians = {name: [statistics.median(v) for _, v in sorted(by_round.items())]
           for name, by_round in runs.items()}
print("== %d round(s) of %d run(s): each round's fastest run (median of the rounds), and the"
      " median of each round's runs" % (len(fastest["kernel"]), len(runs["kernel"][1])))
for name in [n for n in ("sgemm", "kernel", "kernel_alongside", "baseline", "process", "faiss_search", "faiss_all") if n in fastest]:
    print(f"  {name:16s} {statistics.median(fastest[name]):8.3f} s   "
          f"(fastest {', '.join(f'{v:.3f}' for v in fastest[name])}; "
          f"medians {', '.join(f'{v:.3f}' for v in medians[name])})")
def ratio(a, b, target, rows=fastest, label=""):
    per_round = [x / y for x, y in zip(rows[a], rows[b])]
    m = statistics.median(per_round)
    spread = max(abs(r / m - 1) for r in per_round) * 100
    print(f"  {a} / {b}{label}: {m:.3f} (target {target}; rounds {', '.join(f'{r:.3f}' for r in per_round)}; "
          f"spread ±{spread:.1f} %)")
ratio("kernel", "sgemm", "≤ 1.15")
ratio("process", "faiss_all", "≤ 1.0")
ratio("kernel", "faiss_search", "≤ 1.0")
if "baseline" in fastest:
    # The same kind of run (output written alongside), this build against BASELINE_BIN.
    ratio("kernel_alongside", "baseline", "none: this build / BASELINE_BIN")
# faiss's own time moves in stretches on a shared 2-core VM: at 2k x 200k its search took
# 0.68-0.79 s or 1.10-1.25 s, switching even between two searches in one process, while one
# thread took a steady 1.27 s (2026-11; OMP_WAIT_POLICY, OMP_PROC_BIND and
# OPENBLAS_NUM_THREADS did not keep it fast). A round whose runs all fell in such a stretch
# moves the ratio above with faiss, not with us: against faiss's fastest run of all rounds
# (the best this machine gave faiss) each round's ratio moves only with ragdbeval's time.
best = min(fastest["faiss_all"])
per_round = [x / best for x in fastest["process"]]
m = statistics.median(per_round)
spread = max(abs(r / m - 1) for r in per_round) * 100
print(f"  process / fastest faiss_all ({best:.3f} s): {m:.3f} (target ≤ 1.0; rounds "
      f"{', '.join(f'{r:.3f}' for r in per_round)}; spread ±{spread:.1f} %)")
print("  for information, the same from each round's median run:")
ratio("kernel", "sgemm", "≤ 1.15", medians, " (medians)")
ratio("kernel_alongside", "sgemm", "none", medians, " (medians)")
ratio("process", "faiss_all", "≤ 1.0", medians, " (medians)")
PY
