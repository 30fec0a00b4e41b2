#!/usr/bin/env bash
# ragdbeval's closed loop against pgbench -M prepared on one PostgreSQL + pgvector server
# (issue 18): the same table, HNSW index, queries, ef_search and k, at 1 and 2 clients, the
# two sides alternating in short slices; prints each round's QPS, client CPU per query and
# median ratio, then the mean ratio and its spread over the rounds (benches/pgvector_client.rs).
#
#   ./scripts/pgvector_vs_pgbench.sh
#   ROUNDS=3 PAIRS=6 SLICE_S=2 N=50000 DIM=50 ./scripts/pgvector_vs_pgbench.sh
#
# Starts a local server (scripts/servers/pgvector.sh) unless PGVECTOR_URL names one, and uses
# the pgbench of the same wheel unless PGBENCH names another.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"
ragdbeval_pick_toolchain
ragdbeval_system_deps
cd "$RAGDBEVAL_ROOT"
export PGBENCH=${PGBENCH:-$("$here/servers/pgvector.sh" bindir)/pgbench}
if [ -z "${PGVECTOR_URL:-}" ]; then
  PGVECTOR_URL=$("$here/servers/pgvector.sh" start)
  export PGVECTOR_URL
  trap '"$here/servers/pgvector.sh" stop >/dev/null 2>&1 || true' EXIT
fi
cargo bench --locked --bench pgvector_client
