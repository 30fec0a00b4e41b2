#!/usr/bin/env bash
# A dataset larger than the memory ragdbeval may use: ground truth and an exact benchmark of
# N × D float32 vectors (default 4M × 768, 12 GB) inside a memory cgroup of LIMIT (default
# 4 GB).
#
# The base is a big-ann `.fbin` file, which ragdbeval memory-maps: the kernel pages rows in as
# they are read and, under the cgroup's limit, drops clean pages instead of failing. The limit
# is a cgroup v1 memory controller (/sys/fs/cgroup/memory, writable as root), not an
# address-space ulimit, which would count the mapping itself.
#
# Steps, each inside the cgroup, each reporting wall time, the process's peak RSS (file pages
# of the map included) and the cgroup's peak usage (page cache included):
#   1. `ragdbeval dataset gt --runbook build-search`: the exact top-K of Q queries, cached;
#   2. `ragdbeval bench --db exact --mode batch`: build (the engine shares the mapped rows),
#      one batch search through the same kernel, scored against the cached truth.
#
#   sudo ./scripts/larger_than_ram.sh                    # 4M × 768, Q=1000, 4 GB
#   N=400000 D=768 Q=200 LIMIT=1G ./scripts/larger_than_ram.sh
#   KEEP=1 ./scripts/larger_than_ram.sh                  # keep the generated files
#
# WORK (default a directory under the cache) holds the data: it needs N × D × 4 bytes free.
set -euo pipefail
N=${N:-4000000}
D=${D:-768}
Q=${Q:-1000}
K=${K:-100}
LIMIT=${LIMIT:-4G}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/ragdbeval"
work=${WORK:-$cache/larger-than-ram-${N}x${D}}
bin=${RAGDBEVAL_BIN:-$("$here/ragdbeval" --version >/dev/null && echo "${CARGO_TARGET_DIR:-$cache/target}/release/ragdbeval")}

cgroot=/sys/fs/cgroup/memory
if [ ! -w "$cgroot" ]; then
  echo "larger_than_ram: $cgroot is not writable: run as root on a machine with the cgroup v1 memory controller" >&2
  exit 2
fi
need=$((N * D * 4 + Q * D * 4))
free=$(df --output=avail -B1 "$(dirname "$work")" 2>/dev/null | tail -1 || echo 0)
if [ ! -f "$work/base.fbin" ] && [ "$free" -lt $((need + (1 << 30))) ]; then
  echo "larger_than_ram: $need bytes needed for the data in $work, $free free; set WORK= elsewhere" >&2
  exit 2
fi

# The data: numpy writes it in slices, so generating needs no more memory than one slice.
# Clustered Gaussians (256 centres) rather than uniform noise, so that neighbours mean something.
py="$here/../.venv/bin/python"
[ -x "$py" ] || py=python3
if ! "$py" -c 'import numpy' 2>/dev/null; then
  "$py" -m pip install -q numpy
fi
mkdir -p "$work"
if [ ! -f "$work/base.fbin" ] || [ "$(stat -c %s "$work/base.fbin")" -ne $((8 + N * D * 4)) ]; then
  echo "== generating $N × $D float32 base and $Q queries in $work"
  "$py" - "$work" "$N" "$Q" "$D" <<'PY'
import sys, numpy as np
work, n, q, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(16)
centres = rng.normal(0, 1, (256, d)).astype(np.float32)
def write(path, rows):
    with open(path + ".part", "wb") as f:
        np.array([rows, d], dtype="<u4").tofile(f)
        step = 100_000
        for start in range(0, rows, step):
            m = min(step, rows - start)
            x = centres[rng.integers(0, 256, m)] + rng.normal(0, 0.35, (m, d)).astype(np.float32)
            x.astype("<f4").tofile(f)
    import os
    os.replace(path + ".part", path)
write(f"{work}/base.fbin", n)
write(f"{work}/query.fbin", q)
PY
fi
ls -l "$work"

cg="$cgroot/ragdbeval-larger-than-ram-$$"
mkdir "$cg"
cleanup() {
  # Move ourselves out before removing the group.
  echo $$ > "$cgroot/cgroup.procs" 2>/dev/null || true
  rmdir "$cg" 2>/dev/null || true
  if [ -z "${KEEP:-}" ] && [ -z "${WORK:-}" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
echo "$LIMIT" > "$cg/memory.limit_in_bytes"
# No swap for the group where the kernel lets us say so: memory over the limit must be paged
# out as clean file pages, never hidden in swap.
echo 0 > "$cg/memory.swappiness" 2>/dev/null || true
echo "== cgroup $cg: limit $(cat "$cg/memory.limit_in_bytes") bytes"

# Runs "$@" inside the cgroup and prints wall time, peak RSS and the group's peak usage.
in_cgroup() {
  local label=$1
  shift
  echo 0 > "$cg/memory.max_usage_in_bytes" 2>/dev/null || true
  # Drop this dataset's pages from the page cache so each step starts cold, as on a machine
  # whose memory is smaller than the data.
  sync
  echo 1 > /proc/sys/vm/drop_caches 2>/dev/null || true
  local t0 t1 log rc
  log=$(mktemp)
  t0=$(date +%s.%N)
  set +e
  sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec /usr/bin/time -f "peak_rss_kb=%M" "$@"' \
    in-cgroup "$cg" "$@" 2> >(tee "$log" >&2) &
  local pid=$! anon=0 a child
  # The process's own (anonymous) memory, sampled: peak RSS also counts the mapped file
  # pages, which the kernel drops under the limit; this is what ragdbeval itself holds.
  while kill -0 "$pid" 2>/dev/null; do
    for child in $(cat "$cg/cgroup.procs" 2>/dev/null); do
      a=$(awk '/^RssAnon:/ {print $2}' "/proc/$child/status" 2>/dev/null || echo 0)
      [ "${a:-0}" -gt "$anon" ] && anon=$a
    done
    sleep 0.2
  done
  wait "$pid"
  rc=$?
  set -e
  t1=$(date +%s.%N)
  sleep 0.2
  local rss usage fails
  rss=$(grep -o 'peak_rss_kb=[0-9]*' "$log" | tail -1 | cut -d= -f2)
  usage=$(cat "$cg/memory.max_usage_in_bytes")
  fails=$(cat "$cg/memory.failcnt")
  rm -f "$log"
  printf '%-28s exit %s  wall %7.1f s  peak RSS %6.0f MB (anonymous %5.0f MB)  cgroup peak %6.0f MB (limit hits %s)\n' \
    "$label" "$rc" "$(echo "$t1 - $t0" | bc)" "$(echo "${rss:-0} / 1024" | bc)" "$(echo "$anon / 1024" | bc)" \
    "$(echo "$usage / 1048576" | bc)" "$fails" | tee -a "$work/summary.txt"
  return "$rc"
}

: > "$work/summary.txt"
echo "== $N × $D float32 ($(numfmt --to=iec $((N * D * 4)))B), $Q queries, k=$K, memory limit $LIMIT" | tee -a "$work/summary.txt"
# Both steps run in the data directory: the truth cache (datasets/cache) is found by both.
cd "$work"
in_cgroup "dataset gt" "$bin" dataset gt --dataset "$work" --runbook build-search -k "$K" -q
in_cgroup "bench --db exact (batch)" "$bin" bench --db exact --dataset "$work" --runbook build-search \
  --mode batch --warmup 0 -k 10 --name larger-than-ram -q
grep -h '"recall"' "$work"/results/larger-than-ram*.json | head -1 | sed 's/^ */recall: /' || true
echo "== summary"
cat "$work/summary.txt"
