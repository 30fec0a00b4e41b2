#!/usr/bin/env bash
# Filtered ground truth against unfiltered ground truth over the points that pass.
#
# Target: the exact truth of Q queries over N × D points under a filter passing a
# fraction S of the points must cost no more than an unfiltered truth over those N·S points.
# Both sides use generated uniform data (same generator, same dimension and depth):
#   - filtered:   `dataset gt --runbook build-search --filter label:S` over N points (queries
#                 grouped by label, each group searched over its N·S passing points), the time
#                 it prints for computing the filtered truth (not for hashing the cache key and
#                 writing the cache, which the unfiltered side's time does not hold either);
#   - unfiltered: `dataset gt` over N·S points with the same number of queries, the time it
#                 prints for the top-k computation alone.
# The N-point dataset is generated once (with its own unfiltered truth, which is not timed)
# and written as HDF5; then RUNS rounds alternate the two sides, each in a fresh cache
# directory (no cached truth is reused). Prints every time, the medians and their ratio
# (filtered / unfiltered; the target is at most 1). Defaults: 10k queries, 1M × 128, 1 %,
# k = 100, 5 rounds.
#
#   ./scripts/filtered_gt_timing.sh
#   N=100000 Q=1000 RUNS=3 ./scripts/filtered_gt_timing.sh
set -euo pipefail
N=${N:-1000000}
Q=${Q:-10000}
D=${D:-128}
K=${K:-100}
S=${S:-0.01}
RUNS=${RUNS:-5}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin=${RAGDBEVAL_BIN:-$("$here/ragdbeval" --version >/dev/null && echo "${CARGO_TARGET_DIR:-$HOME/.cache/ragdbeval/target}/release/ragdbeval")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passing=$(python3 -c "print(round($N * $S))")

echo "preparing $N × $D uniform points and $Q queries (their unfiltered truth is not timed)"
RAGDBEVAL_DATA_DIR="$work/cache" "$bin" dataset gt -q \
  --dataset "gen:uniform:n=$N,dim=$D,queries=$Q,seed=1" -k "$K" --out "$work/base.hdf5" >/dev/null
rm -rf "$work/cache"

filtered=()
unfiltered=()
for run in $(seq "$RUNS"); do
  rm -rf "$work/cache"
  line=$(RAGDBEVAL_DATA_DIR="$work/cache" "$bin" dataset gt -q --dataset "$work/base.hdf5" \
    -k "$K" --runbook build-search --filter "label:$S" | grep '^filtered ground truth')
  secs=$(sed -n 's/.*(computed in \([0-9.]*\) s on.*/\1/p' <<<"$line")
  filtered+=("$secs")
  echo "round $run: filtered   $secs s  ($line)"
  rm -rf "$work/cache"
  line=$(RAGDBEVAL_DATA_DIR="$work/cache" "$bin" dataset gt -q \
    --dataset "gen:uniform:n=$passing,dim=$D,queries=$Q,seed=1" -k "$K" \
    --out "$work/unfiltered.hdf5" | grep '^ground truth:')
  secs=$(sed -n 's/.* in \([0-9.]*\) s on.*/\1/p' <<<"$line")
  unfiltered+=("$secs")
  echo "round $run: unfiltered $secs s  (over as many points as pass: $line)"
done
python3 - "${filtered[*]}" "${unfiltered[*]}" <<'PY'
import statistics, sys
f = [float(x) for x in sys.argv[1].split()]
u = [float(x) for x in sys.argv[2].split()]
mf, mu = statistics.median(f), statistics.median(u)
print(f"median filtered {mf:.3f} s, median unfiltered over the passing points {mu:.3f} s: "
      f"ratio {mf / mu:.2f} (target ≤ 1.00)")
PY
