#!/usr/bin/env bash
# Harness memory: with the `exact` engine on a generated 1M × 128 dataset (or a dataset you
# name), peak RSS must stay <= 1.5 × the vector bytes + 200 MB. The dataset is held once and
# shared by every phase (the exact engine references it instead of copying).
#
#   ./scripts/memory_check.sh                         # gen:uniform 1M × 128, 100 queries
#   DATASET=sift1m ./scripts/memory_check.sh          # needs the file (downloads it)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DATASET=${DATASET:-gen:uniform:n=1000000,dim=128,queries=100,seed=1}
MAX_QUERIES=${MAX_QUERIES:-100}
"$here/ragdbeval" --version >/dev/null
bin="${CARGO_TARGET_DIR:-$HOME/.cache/ragdbeval/target}/release/ragdbeval"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

/usr/bin/time -v "$bin" bench --db exact --dataset "$DATASET" --max-queries "$MAX_QUERIES" \
  --gt-k 10 --warmup 0 -q --out "$out" --name mem 2> "$out/time.txt" >/dev/null
peak_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out/time.txt")
read -r train dim < <(python3 -c "import json;d=json.load(open('$out/mem.json'))['dataset'];print(d['train'],d['dim'])")
vector_bytes=$((train * dim * 4))
limit=$((vector_bytes * 3 / 2 + 200 * 1024 * 1024))
peak=$((peak_kb * 1024))
printf 'dataset %s: %d × %d, vectors %.1f MB\n' "$DATASET" "$train" "$dim" "$(echo "$vector_bytes/1048576" | bc -l)"
printf 'peak RSS %.1f MB, limit (1.5 × vectors + 200 MB) %.1f MB\n' "$(echo "$peak/1048576" | bc -l)" "$(echo "$limit/1048576" | bc -l)"
if [ "$peak" -le "$limit" ]; then echo "PASS"; else echo "FAIL"; exit 1; fi
