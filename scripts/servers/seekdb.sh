#!/usr/bin/env bash
# OceanBase seekdb 1.4 (vector indexes through VSAG, MySQL protocol) for
# `ragdbeval bench --db seekdb`.
#
#   scripts/servers/seekdb.sh start   # installs the server if needed, starts it, prints its URL
#   scripts/servers/seekdb.sh url     # prints the URL of the running server
#   scripts/servers/seekdb.sh stop    # stops it by PID
#   scripts/servers/seekdb.sh install # installs the server's wheel into .venv, starts nothing
#
# Where the server comes from: the PyPI wheel `pylibseekdb` ships the `seekdb` server binary
# (it needs only libc and the libaio bundled beside it).
#
# Why embedded mode: started with a port, seekdb listens on 0.0.0.0 whatever its
# `bind_address` says. Started with `--embedded` it opens no TCP port at all, only the unix
# socket `data/run/sql.sock` (MySQL protocol, user root, no password), so the URL is
# mysql://root@localhost/ragdbeval?socket=<that path>. An embedded server exits once no client
# holds a shared lock on `data/run/seekdb.clients`: a `flock -s … sleep` started beside it
# holds one for the server's life (its pid in `holder`).
#
# The data directory is emptied at every start (a benchmark server holds throw-away data); its
# data file and log disk are pre-allocated, so they are sized here: 1 GB of data file growing
# as needed, 2 GB of redo log, 2 GB of memory for the server.
#
# State lives in $RAGDBEVAL_SERVER_DIR/seekdb (default /tmp/ragdbeval-servers/seekdb): `pid`,
# `holder`, `url`, `log`, `data`.
set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

VERSION=1.4.0.post1
PYMYSQL=1.2.4
state=$(servers_state seekdb)
pidfile="$state/pid"

# The server binary inside the wheel, installed if needed.
seekdb_binary() {
  servers_venv "pylibseekdb==$VERSION" "PyMySQL==$PYMYSQL"
  local bin
  bin="$(servers_site_packages)/pylibseekdb/seekdb"
  if [ ! -f "$bin" ]; then
    echo "seekdb: pylibseekdb is installed but $bin is missing" >&2
    return 1
  fi
  [ -x "$bin" ] || chmod +x "$bin"
  echo "$bin"
}

# True when the server at socket $1 answers a query (the socket opens during bootstrap).
seekdb_answers() {
  "$RAGDBEVAL_VENV/bin/python" - "$1" <<'EOF' 2>/dev/null
import sys, pymysql
try:
    c = pymysql.connect(unix_socket=sys.argv[1], user="root", connect_timeout=2)
    with c.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS ragdbeval")
    c.close()
except Exception:
    sys.exit(1)
EOF
}

cmd_install() {
  seekdb_binary >/dev/null
}

cmd_stop() {
  servers_stop seekdb
  servers_stop_pidfile "$state/holder"
}

cmd_start() {
  servers_url seekdb 2>/dev/null && return 0
  cmd_stop
  local bin data socket url i
  bin=$(seekdb_binary)
  data="$state/data"
  rm -rf "$data"
  mkdir -p "$data/run"
  : >"$data/run/seekdb.clients"
  # setsid and closed stdio: neither process outlives its caller's terminal or holds its pipes.
  setsid flock -s "$data/run/seekdb.clients" sleep infinity </dev/null >/dev/null 2>&1 9>&- &
  echo $! >"$state/holder"
  setsid "$bin" --embedded --nodaemon --base-dir "$data" \
    --parameter datafile_size=1G --parameter log_disk_size=2G --parameter memory_limit=2G \
    </dev/null >"$state/log" 2>&1 9>&- &
  echo $! >"$pidfile"
  socket="$data/run/sql.sock"
  url="mysql://root@localhost/ragdbeval?socket=$socket"
  # Bootstrap takes about half a minute on 2 cores.
  for ((i = 0; i < 1800; i++)); do
    if [ -S "$socket" ] && seekdb_answers "$socket"; then
      echo "$url" >"$state/url"
      echo "$url"
      return 0
    fi
    kill -0 "$(cat "$pidfile")" 2>/dev/null || break
    sleep 0.1
  done
  echo "seekdb: the server did not answer on $socket; last lines of $state/log:" >&2
  tail -n 20 "$state/log" >&2 || true
  cmd_stop
  return 1
}

case "${1:-}" in
  start | stop | url | install)
    # One start/stop at a time per state directory: parallel tests may all call `start`.
    exec 9>"$state/lock"
    flock 9
    case "$1" in
      start) cmd_start ;;
      stop) cmd_stop ;;
      url) servers_url seekdb ;;
      install) cmd_install ;;
    esac
    ;;
  *)
    echo "usage: scripts/servers/seekdb.sh start|stop|url|install" >&2
    exit 2
    ;;
esac
