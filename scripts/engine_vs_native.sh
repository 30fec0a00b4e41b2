#!/usr/bin/env bash
# ragdbeval's closed loop against the engine's fastest native client on one server:
# the same collection, queries, search parameter and k, at 1 and 2 clients, the two sides
# alternating in short slices (ABBA). Prints each round's QPS, client CPU per query and QPS
# ratio, then per client count the mean ratio and its spread over the rounds.
#
#   ./scripts/engine_vs_native.sh pgvector     # against pgbench -M prepared (the wheel's)
#   ./scripts/engine_vs_native.sh redis        # against the tightest redis-crate VSIM loop
#   ./scripts/engine_vs_native.sh chroma       # against a minimal ureq loop
#   QDRANT_URL=http://127.0.0.1:6334 ./scripts/engine_vs_native.sh qdrant
#                                              # against a minimal qdrant-client loop
#   ./scripts/engine_vs_native.sh all          # the three with local servers, then qdrant
#                                              # when QDRANT_URL is set
#   ROUNDS=3 PAIRS=12 SLICE_S=2 N=50000 DIM=50 ./scripts/engine_vs_native.sh redis
#
# Each engine's bench is benches/<engine>_client.rs. pgvector, Redis and Chroma get a local
# server from scripts/servers/ unless PGVECTOR_URL, REDIS_URL or CHROMA_URL names one; no
# script here starts a Qdrant server, so qdrant needs QDRANT_URL (its gRPC port).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
}
[ $# -eq 1 ] || usage
case "$1" in
  pgvector | redis | chroma | qdrant | all) ;;
  -h | --help) usage ;;
  *) echo "engine_vs_native.sh: unknown engine \`$1\` (pgvector, redis, chroma, qdrant or all)" >&2; exit 2 ;;
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
  var="$(echo "$engine" | tr '[:lower:]' '[:upper:]')_URL"
  if [ -z "${!var:-}" ]; then
    if [ "$engine" = qdrant ]; then
      echo "engine_vs_native.sh: qdrant needs QDRANT_URL (a Qdrant server's gRPC URL, e.g. http://127.0.0.1:6334); no script here starts one" >&2
      return 2
    fi
    export "$var=$("$here/servers/$engine.sh" start)"
    started+=("$engine")
  fi
  if [ "$engine" = pgvector ]; then
    export PGBENCH=${PGBENCH:-$("$here/servers/pgvector.sh" bindir)/pgbench}
  fi
  cargo bench --locked --bench "${engine}_client"
}

if [ "$1" = all ]; then
  for engine in pgvector redis chroma; do compare "$engine"; done
  if [ -n "${QDRANT_URL:-}" ]; then compare qdrant; else echo "qdrant: skipped, QDRANT_URL is not set"; fi
else
  compare "$1"
fi
