#!/usr/bin/env bash
# The example streaming runbook (datasets/runbooks/stream.toml) on every engine: exact,
# qdrant-edge and the servers this project's scripts start (pgvector, chroma, redis), plus
# qdrant when QDRANT_URL is set. Prints one line per stream step: recall (the streaming rule),
# stale hits, searches per second, search p99, points written per second, and how soon
# sampled writes were seen (p50 of puts and deletes).
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
for s in pgvector chroma redis; do
  url[$s]=$("$here/servers/$s.sh" start)
  started+=("$s")
done
[ -n "${QDRANT_URL:-}" ] && url[qdrant]=$QDRANT_URL

run() { # engine, distance, extra args...
  local engine=$1 distance=$2; shift 2
  local args=(bench --db "$engine" --dataset "gen:clustered:n=$N,dim=$DIM,queries=500,distance=$distance,seed=5"
              --runbook "$root/datasets/runbooks/stream.toml" -k 10 -q --recreate
              --out "$work" --name "$engine")
  [ -n "${url[$engine]:-}" ] && args+=(--url "${url[$engine]}")
  "$bin" "${args[@]}" "$@" >/dev/null
}
run exact euclidean
run qdrant-edge euclidean --search-param hnsw_ef=128
run pgvector euclidean --search-param ef_search=160 --search-param seqscan=false
run chroma euclidean
run redis angular --search-param ef=160
[ -n "${url[qdrant]:-}" ] && run qdrant euclidean --search-param hnsw_ef=128

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
