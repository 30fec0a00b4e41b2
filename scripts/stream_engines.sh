#!/usr/bin/env bash
# The example streaming runbook (datasets/runbooks/stream.toml) on every engine `ragdbeval
# engines` lists (which ones, and with what settings: scripts/every_engine.sh), each on data of
# its conformance distance (its config.toml). Prints one
# line per stream step: recall (the streaming rule), stale hits, searches per second, search
# p99, points written per second, and how soon sampled writes were seen (p50 of puts and
# deletes).
#
#   ./scripts/stream_engines.sh
#   N=50000 DIM=96 ./scripts/stream_engines.sh
set -euo pipefail
N=${N:-20000}
DIM=${DIM:-64}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/every_engine.sh"
every_engine_start stream_engines.sh

run() { # engine
  local engine=$1 distance args
  distance=$(every_engine_meta "$engine" distance)
  mapfile -t args < <(engine_args "$engine")
  args+=(--dataset "gen:clustered:n=$N,dim=$DIM,queries=500,distance=$distance,seed=5"
         --runbook "$every_engine_root/datasets/runbooks/stream.toml" -k 10 -q --recreate
         --out "$work" --name "$engine")
  "$bin" bench "${args[@]}" >/dev/null
}
for engine in "${engines[@]}"; do
  # An engine whose conformance table says it refuses stream steps (and why) is passed over.
  refused=$(every_engine_meta "$engine" no_stream)
  if [ -n "$refused" ]; then
    echo "stream_engines.sh: $engine skipped: $refused" >&2
    continue
  fi
  run "$engine"
done

python3 - "$work" <<'PY'
import json, pathlib, sys
print(f"{'engine':12} {'step':>4} {'recall':>7} {'stale':>5} {'QPS':>7} {'p99 ms':>7} {'writes/s':>8} {'put seen p50 ms':>15} {'delete gone p50 ms':>18} {'not seen':>8} {'round p50 ms':>12}")
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    r = json.loads(path.read_text())
    for c in r["configs"]:
        for s in c["steps"]:
            if s.get("phase") != "stream":
                continue
            f = s["freshness"]
            print(f"{r['engine']['name']:12} {s['runbook_step']:>4} {s['recall']:>7.4f} {s['stale_hits']:>5} "
                  f"{s['qps']:>7.0f} {s['latency']['p99_ms']:>7.2f} {s['write_points_per_s']:>8.0f} "
                  f"{f['put_delay']['p50_ms']:>15.3f} {f['delete_delay']['p50_ms']:>18.3f} {f['not_seen']:>8} "
                  f"{f['probe_round_p50_ms']:>12.3f}")
PY
