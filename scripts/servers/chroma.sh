#!/usr/bin/env bash
# Chroma as a real server for `ragdbeval bench --db chroma`.
#
#   scripts/servers/chroma.sh start   # installs chromadb into the project venv if needed,
#                                     # starts `chroma run` on a free port, prints its URL
#   scripts/servers/chroma.sh url     # prints the URL of the running server
#   scripts/servers/chroma.sh stop    # stops it by PID
#   scripts/servers/chroma.sh install # installs the server's wheel into .venv, starts nothing
#
# State lives in $RAGDBEVAL_SERVER_DIR/chroma (default /tmp/ragdbeval-servers/chroma):
# `pid`, `url`, `version` (the chromadb release), `log` and the persist directory `data`
# (where the adapter measures each collection's footprint). `start` is idempotent: with a server
# already running it prints its URL. CHROMA_VERSION (e.g. 1.5.9) pins the chromadb release
# that pip installs when the venv has none yet (an installed one is kept as it is).
set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# The network here reaches package registries only; Chroma's telemetry (posthog) would
# retry and log failures on every call. Exported so the server process inherits it.
export ANONYMIZED_TELEMETRY=False

state=$(servers_state chroma)
pidfile="$state/pid"

# True when the heartbeat of $1 answers with HTTP 200.
chroma_heartbeat() {
  python3 - "$1" <<'EOF' 2>/dev/null
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1] + "/api/v2/heartbeat", timeout=2) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
EOF
}

cmd_install() {
  servers_venv "chromadb${CHROMA_VERSION:+==$CHROMA_VERSION}"
}

cmd_start() {
  servers_url chroma 2>/dev/null && return 0
  # A stale pid file from a server that died: clean it so it cannot name a reused PID.
  rm -f "$pidfile" "$state/url"

  cmd_install
  local chroma="$RAGDBEVAL_VENV/bin/chroma"
  if [ ! -x "$chroma" ]; then
    echo "chroma: $chroma not found after installing chromadb" >&2
    return 1
  fi

  # The HTTP API reports its own API version (1.0.0), not the release: keep the installed
  # release next to the URL so that the adapter can record what was benchmarked.
  "$RAGDBEVAL_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("chromadb"))' \
    >"$state/version" 2>/dev/null || rm -f "$state/version"

  local port url
  port=$(servers_free_port)
  url="http://127.0.0.1:$port"
  mkdir -p "$state/data"
  # setsid: the server gets its own session, so a Ctrl-C in the caller's terminal does not
  # reach it; it is stopped only by `stop` (by PID).
  setsid "$chroma" run --path "$state/data" --host 127.0.0.1 --port "$port" \
    >"$state/log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  servers_await chroma "$port" "$url" "$pidfile" chroma_heartbeat
}

servers_main chroma "$@"
