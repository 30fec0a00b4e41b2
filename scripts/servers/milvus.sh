#!/usr/bin/env bash
# Milvus on 127.0.0.1, from the C++ server inside the milvus-lite wheel.
#
#   scripts/servers/milvus.sh start    # prints http://127.0.0.1:PORT (starts it if needed)
#   scripts/servers/milvus.sh url      # prints the URL of the running server
#   scripts/servers/milvus.sh status   # says whether it runs, and where
#   scripts/servers/milvus.sh stop     # stops it by PID
#   scripts/servers/milvus.sh install # installs the server's wheel into .venv, starts nothing
#
# Why milvus-lite 2.5.1: its manylinux wheel ships `milvus_lite/lib/milvus`, a single-process
# Milvus server (knowhere, the index library of every Milvus) that serves the Milvus gRPC API
# on TCP, so pip gives a real Milvus without Docker. It is a local build: it accepts the index
# types FLAT, IVF_FLAT and AUTOINDEX only (HNSW, IVF_PQ, DISKANN ... are refused), keeps its
# data in one SQLite file, and does not implement GetVersion or CheckHealth. milvus-lite 3.x is
# a different program (Python on faiss) and is not used. A full Milvus (standalone or cluster)
# is used through `--url` instead.
#
# State (pid, url, log, data file) lives in $RAGDBEVAL_SERVER_DIR/milvus (default
# /tmp/ragdbeval-servers). MILVUS_LITE_VERSION overrides the pinned release.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

NAME=milvus
STATE=$(servers_state "$NAME")
VERSION=${MILVUS_LITE_VERSION:-2.5.1}

# True when the recorded server is alive and listens on its port; prints nothing.
milvus_running() {
  [ -f "$STATE/pid" ] && [ -f "$STATE/url" ] || return 1
  kill -0 "$(cat "$STATE/pid")" 2>/dev/null || return 1
  local url port
  url=$(cat "$STATE/url")
  port=${url##*:}
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

# The directory holding the server binary and its shared libraries.
milvus_libdir() {
  servers_venv "milvus-lite==$VERSION"
  local lib
  lib="$(servers_site_packages)/milvus_lite/lib"
  if [ ! -f "$lib/milvus" ]; then
    echo "milvus: milvus-lite is installed but $lib/milvus is missing" >&2
    return 1
  fi
  # Wheels do not always keep the executable bit.
  [ -x "$lib/milvus" ] || chmod +x "$lib/milvus"
  echo "$lib"
}

start() {
  if milvus_running; then
    cat "$STATE/url"
    return 0
  fi
  # A stale pid (crashed or killed server) must not be reused.
  servers_stop_pidfile "$STATE/pid"
  rm -f "$STATE/url"

  local lib port pid
  lib=$(milvus_libdir)
  port=$(servers_free_port)
  echo "$VERSION" >"$STATE/version"
  # A benchmark server holds throw-away data: each start begins with an empty data file.
  rm -f "$STATE/milvus.db"
  # setsid + redirected stdio: the server outlives this script and never holds the caller's
  # pipes open; fd 9 is the start/stop lock, which the server must not keep holding.
  LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" setsid "$lib/milvus" \
    "$STATE/milvus.db" "127.0.0.1:$port" ERROR \
    </dev/null >>"$STATE/log" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$STATE/pid"

  if ! servers_wait_port "$port" 120 || ! kill -0 "$pid" 2>/dev/null; then
    echo "milvus: server did not start; last lines of $STATE/log:" >&2
    tail -n 20 "$STATE/log" >&2 || true
    servers_stop_pidfile "$STATE/pid"
    return 1
  fi
  echo "http://127.0.0.1:$port" >"$STATE/url"
  cat "$STATE/url"
}

stop() {
  servers_stop_pidfile "$STATE/pid"
  rm -f "$STATE/url"
}

url() {
  if milvus_running; then
    cat "$STATE/url"
  else
    echo "milvus: not running (scripts/servers/milvus.sh start)" >&2
    return 1
  fi
}

status() {
  if milvus_running; then
    echo "milvus: running, pid $(cat "$STATE/pid"), $(cat "$STATE/url")"
  else
    echo "milvus: not running"
    return 1
  fi
}

cmd=${1:-}
case "$cmd" in
  start | stop | url | status)
    # One start/stop at a time per state directory: parallel tests may all call `start`.
    exec 9>"$STATE/lock"
    flock 9
    "$cmd"
    ;;
  install) servers_venv "milvus-lite==$VERSION" ;;
  *)
    echo "usage: $0 start|stop|url|status|install" >&2
    exit 2
    ;;
esac
