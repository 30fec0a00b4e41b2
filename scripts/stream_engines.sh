#!/usr/bin/env bash
# The example streaming runbook (datasets/runbooks/stream.toml) on every engine `ragdbeval
# engines` lists: the embedded ones, the servers this project's scripts start
# (scripts/servers/<engine>.sh), and a server engine without a script when its <ENGINE>_URL is
# set (qdrant: QDRANT_URL). Each runs with its conformance settings from adapters/<module>/meta.rs: its
# distance, the highest value of its effort sweep and its extra search parameters. Prints one
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
root="$here/.."
bin=${RAGDBEVAL_BIN:-$("$here/ragdbeval" --version >/dev/null && echo "${CARGO_TARGET_DIR:-$HOME/.cache/ragdbeval/target}/release/ragdbeval")}
work=$(mktemp -d)
started=()
cleanup() {
  for s in "${started[@]}"; do "$here/servers/$s.sh" stop >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

declare -A url
engines=()
while read -r engine kind _; do
  if [ "$kind" = "[server]" ]; then
    var=$(echo "${engine}_URL" | tr 'a-z-' 'A-Z_')
    if [ -x "$here/servers/$engine.sh" ]; then
      url[$engine]=$("$here/servers/$engine.sh" start)
      started+=("$engine")
    elif [ -n "${!var:-}" ]; then
      url[$engine]=${!var}
    else
      echo "stream_engines.sh: $engine skipped, $var is not set" >&2
      continue
    fi
  fi
  engines+=("$engine")
done < <("$bin" engines | grep -v '^ ')

# The value of `field: "..."` in an engine's meta.rs.
meta_field() { # module, field
  sed -n "s/^ *$2: \"\([^\"]*\)\".*/\1/p" "$root/adapters/$1/meta.rs"
}

run() { # engine
  local engine=$1 module=${1//-/_} distance sweep extra
  distance=$(meta_field "$module" distance)
  sweep=$(meta_field "$module" effort_sweep)
  local args=(bench --db "$engine" --dataset "gen:clustered:n=$N,dim=$DIM,queries=500,distance=$distance,seed=5"
              --runbook "$root/datasets/runbooks/stream.toml" -k 10 -q --recreate
              --out "$work" --name "$engine")
  [ -n "${url[$engine]:-}" ] && args+=(--url "${url[$engine]}")
  # The highest effort of the sweep: `hnsw_ef=8,32,128` gives hnsw_ef=128.
  [ -n "$sweep" ] && args+=(--search-param "${sweep%%=*}=${sweep##*,}")
  for extra in $(sed -n 's/^ *search_params: &\[\(.*\)\],.*/\1/p' "$root/adapters/$module/meta.rs" | tr -d '" ' | tr ',' ' '); do
    args+=(--search-param "$extra")
  done
  "$bin" "${args[@]}" >/dev/null
}
for engine in "${engines[@]}"; do run "$engine"; done

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
