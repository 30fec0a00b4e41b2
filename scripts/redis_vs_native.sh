#!/usr/bin/env bash
# ragdbeval's closed loop against the tightest `redis`-crate loop on one Redis 8 server's vector
# set (issue 18): the same key, queries, EF and k, at 1 and 2 clients, the two sides
# alternating in short slices; prints each round's QPS, client CPU per query and median ratio,
# then the mean ratio and its spread over the rounds (benches/redis_client.rs).
#
#   ./scripts/redis_vs_native.sh
#   ROUNDS=3 PAIRS=6 SLICE_S=2 N=50000 DIM=50 ./scripts/redis_vs_native.sh
#
# Starts a local server (scripts/servers/redis.sh) unless REDIS_URL names one.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"
ragdbeval_pick_toolchain
ragdbeval_system_deps
cd "$RAGDBEVAL_ROOT"
if [ -z "${REDIS_URL:-}" ]; then
  REDIS_URL=$("$here/servers/redis.sh" start)
  export REDIS_URL
  trap '"$here/servers/redis.sh" stop >/dev/null 2>&1 || true' EXIT
fi
cargo bench --locked --bench redis_client
