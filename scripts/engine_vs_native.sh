#!/usr/bin/env bash
# ragdbeval's closed loop against the engine's fastest native client on one server:
# the same collection, queries, search parameter and k, at 1 and 2 clients, the two sides
# alternating in short slices (ABBA). Prints each round's QPS, client CPU per query and QPS
# ratio, then per client count the mean ratio and its spread over the rounds.
#
#   ./scripts/engine_vs_native.sh pgvector     # against pgbench -M prepared (the wheel's)
#   ./scripts/engine_vs_native.sh redis        # against the tightest redis-crate VSIM loop
#   ./scripts/engine_vs_native.sh chroma       # against a minimal ureq loop
#   ./scripts/engine_vs_native.sh milvus       # against a minimal tonic loop
#   QDRANT_URL=http://127.0.0.1:6334 ./scripts/engine_vs_native.sh qdrant
#                                              # against a minimal qdrant-client loop
#   ./scripts/engine_vs_native.sh all          # those with local servers, then qdrant
#                                              # when QDRANT_URL is set
#   ROUNDS=3 PAIRS=12 SLICE_S=2 N=50000 DIM=50 ./scripts/engine_vs_native.sh redis
#
# The engines are those whose folder has a comparison, adapters/<module>/client_bench.rs (run by
# benches/client_overhead.rs with ENGINE=<engine>, in the build of the engine's feature). An engine gets a
# local server from scripts/servers/<engine>.sh unless <ENGINE>_URL (PGVECTOR_URL, REDIS_URL,
# CHROMA_URL) names one; an engine without a script (qdrant) needs its URL (QDRANT_URL, its gRPC
# port), and `all` skips it without one.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
}
engines=()
for engine in $(python3 "$here/engines.py" servers); do
  module=${engine//-/_}
  [ ! -f "$here/../adapters/$module/client_bench.rs" ] || engines+=("$engine")
done
[ $# -eq 1 ] || usage
case "$1" in
  -h | --help) usage ;;
  all) ;;
  *)
    if ! printf '%s\n' "${engines[@]}" | grep -qx -- "$1"; then
      echo "engine_vs_native.sh: unknown engine \`$1\` (${engines[*]} or all)" >&2
      exit 2
    fi
    ;;
esac

ragdbeval_pick_toolchain
ragdbeval_system_deps
cd "$RAGDBEVAL_ROOT"

started=()
stop_servers() {
  for engine in "${started[@]}"; do
    "$here/servers/$engine.sh" stop >/dev/null 2>&1 || true
  done
}
trap stop_servers EXIT

# Runs one engine's comparison, starting its local server when its URL variable is unset.
compare() {
  local engine=$1 var
  var="$(echo "$engine" | tr 'a-z-' 'A-Z_')_URL"
  if [ -z "${!var:-}" ]; then
    if [ ! -x "$here/servers/$engine.sh" ]; then
      echo "engine_vs_native.sh: $engine needs $var (its server's URL); no script here starts one" >&2
      return 2
    fi
    export "$var=$("$here/servers/$engine.sh" start)"
    started+=("$engine")
  fi
  if [ "$engine" = pgvector ]; then
    export PGBENCH=${PGBENCH:-$("$here/servers/pgvector.sh" bindir)/pgbench}
  fi
  ENGINE=$engine cargo bench --locked --bench client_overhead \
    --no-default-features --features "$(python3 "$here/engines.py" feature "$engine")"
}

if [ "$1" = all ]; then
  # The engines with a script first, then those whose server is given by their URL.
  later=()
  for engine in "${engines[@]}"; do
    if [ -x "$here/servers/$engine.sh" ]; then compare "$engine"; else later+=("$engine"); fi
  done
  for engine in "${later[@]}"; do
    var="$(echo "$engine" | tr 'a-z-' 'A-Z_')_URL"
    if [ -n "${!var:-}" ]; then compare "$engine"; else echo "$engine: skipped, $var is not set"; fi
  done
else
  compare "$1"
fi
