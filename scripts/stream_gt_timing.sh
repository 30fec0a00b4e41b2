#!/usr/bin/env bash
# Streaming ground truth against static ground truth (target: at most 2×), on generated data:
# a 1M × 128 base, 100k streamed inserts and deletes, 10k searches, against the static truth
# of 10k queries over 1.1M points. See benches/stream_gt.rs for what is timed.
#
#   ./scripts/stream_gt_timing.sh
#   N=100000 W=10000 S=1000 RUNS=3 ./scripts/stream_gt_timing.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
source scripts/env.sh
ragdbeval_pick_toolchain >/dev/null
exec cargo bench --bench stream_gt
