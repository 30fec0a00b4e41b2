#!/usr/bin/env bash
# Filtered ground truth against unfiltered ground truth over the points that pass.
#
# Issue 12's target: the exact truth of Q queries over N × D points under a filter passing a
# fraction S of the points must cost no more than an unfiltered truth over those N·S points.
# Both sides use generated uniform data (same generator, same dimension and depth):
#   - filtered:   `dataset gt --runbook build-search --filter label:S` over N points (queries
#                 grouped by label, each group searched over its N·S passing points), the time
#                 it prints for the filtered truth alone;
#   - unfiltered: `dataset gt` over N·S points with the same Q queries' count, the time it
#                 prints for the top-k computation alone.
# Each side runs RUNS times, interleaved, in a fresh cache directory (no cached truth is
# reused); compare the best times. Defaults: 10k queries, 1M × 128, 1 %, k = 100.
#
#   ./scripts/filtered_gt_timing.sh
#   N=100000 Q=1000 ./scripts/filtered_gt_timing.sh
set -euo pipefail
N=${N:-1000000}
Q=${Q:-10000}
D=${D:-128}
K=${K:-100}
S=${S:-0.01}
RUNS=${RUNS:-2}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin=${RAGDBEVAL_BIN:-$("$here/ragdbeval" --version >/dev/null && echo "${CARGO_TARGET_DIR:-$HOME/.cache/ragdbeval/target}/release/ragdbeval")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passing=$(python3 -c "print(round($N * $S))")

for run in $(seq "$RUNS"); do
  rm -rf "$work/cache"
  # The dataset's own (unfiltered) truth is computed while loading and timed separately: the
  # second line is the filtered truth alone.
  RAGDBEVAL_DATA_DIR="$work/cache" "$bin" dataset gt -q \
    --dataset "gen:uniform:n=$N,dim=$D,queries=$Q,seed=1" -k "$K" \
    --runbook build-search --filter "label:$S" | sed -n 's/^filtered ground truth/filtered   (run '"$run"'): filtered ground truth/p'
  rm -rf "$work/cache"
  RAGDBEVAL_DATA_DIR="$work/cache" "$bin" dataset gt -q \
    --dataset "gen:uniform:n=$passing,dim=$D,queries=$Q,seed=1" -k "$K" \
    --out "$work/unfiltered.hdf5" | sed -n 's/^ground truth:/unfiltered (run '"$run"'): ground truth over as many points as pass:/p'
done
