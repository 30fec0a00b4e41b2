#!/usr/bin/env bash
# Every engine `ragdbeval engines` lists (which ones: scripts/every_engine.sh) on one dataset,
# each with its default parameter set and the default runbook (build, search, writes; RUNBOOK
# names another), then one report of them all side by side: OUT/index.html, OUT/report.md,
# OUT/results.csv, and the result files in OUT/results/. The data is angular because Redis vector sets compare by
# cosine only. An engine whose run fails is named on stderr and left out of the report; the
# exit status is then 1.
#
#   ./scripts/side_by_side.sh                       # into report-engines/
#   DATASET=gen:clustered:n=50000,dim=96,distance=angular ./scripts/side_by_side.sh /tmp/cmp
#   DATASET=jeopardy-10k RUNBOOK=build-search ./scripts/side_by_side.sh /tmp/jeopardy
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/every_engine.sh"
out=${1:-report-engines}
dataset=${DATASET:-gen:clustered:n=20000,dim=64,queries=500,distance=angular,seed=5}
runbook=${RUNBOOK:-default}
every_engine_start side_by_side.sh
mkdir -p "$out/results"

failed=()
for engine in "${engines[@]}"; do
  args=(bench --db "$engine" --dataset "$dataset" --runbook "$runbook" -k 10 -q --recreate
        --out "$out/results" --name "$engine")
  [ -z "${url[$engine]:-}" ] || args+=(--url "${url[$engine]}")
  echo "side_by_side.sh: $engine" >&2
  if ! "$bin" "${args[@]}" >/dev/null; then
    echo "side_by_side.sh: $engine failed (its error is above)" >&2
    failed+=("$engine")
  fi
done
"$bin" report "$out"/results/*.json --out "$out"
"$bin" report "$out"/results/*.json --format markdown
if [ ${#failed[@]} -gt 0 ]; then
  echo "side_by_side.sh: failed: ${failed[*]}" >&2
  exit 1
fi
