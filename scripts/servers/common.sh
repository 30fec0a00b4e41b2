# Shared helpers for the server scripts (sourced). Servers run on 127.0.0.1 only, on free
# ports, and are stopped by PID. Their state lives under $RAGDBEVAL_SERVER_DIR/<name>/
# (default /tmp/ragdbeval-servers): `pid`, `url`, `log`, data directories.

RAGDBEVAL_ROOT="${RAGDBEVAL_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
RAGDBEVAL_VENV="${RAGDBEVAL_VENV:-$RAGDBEVAL_ROOT/.venv}"
RAGDBEVAL_SERVER_DIR="${RAGDBEVAL_SERVER_DIR:-/tmp/ragdbeval-servers}"

# Creates the project-local venv if needed and pip-installs the given requirements into it
# when they are missing. Prints nothing on success.
servers_venv() {
  if [ ! -x "$RAGDBEVAL_VENV/bin/python" ]; then
    if ! python3 -m venv "$RAGDBEVAL_VENV" >&2; then
      # Debian's python3 ships venv/ensurepip separately.
      rm -rf "$RAGDBEVAL_VENV"
      echo "servers: installing python3-venv with apt-get" >&2
      apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
      python3 -m venv "$RAGDBEVAL_VENV" >&2
    fi
  fi
  local missing=()
  local req
  local name pinned installed
  for req in "$@"; do
    name=${req%%[<>=]*}
    installed=$("$RAGDBEVAL_VENV/bin/python" -m pip show "$name" 2>/dev/null | awk '/^Version:/ {print $2}' || true)
    # `NAME==VERSION` must be that version: an earlier install of another one is replaced.
    pinned=""
    [[ "$req" == *==* ]] && pinned=${req##*==}
    if [ -z "$installed" ] || { [ -n "$pinned" ] && [ "$installed" != "$pinned" ]; }; then
      missing+=("$req")
    fi
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "servers: pip install ${missing[*]} into $RAGDBEVAL_VENV" >&2
    "$RAGDBEVAL_VENV/bin/python" -m pip install -q --disable-pip-version-check "${missing[@]}" >&2
  fi
}

# site-packages directory of the venv.
servers_site_packages() {
  "$RAGDBEVAL_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'
}

# A free TCP port on 127.0.0.1.
servers_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Waits until 127.0.0.1:$1 accepts connections, at most $2 seconds (default 60).
servers_wait_port() {
  local port=$1 limit=${2:-60} i
  for ((i = 0; i < limit * 10; i++)); do
    if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "servers: nothing listens on 127.0.0.1:$port after ${limit}s" >&2
  return 1
}

# Waits for a server just started with its pid in PIDFILE: its port open (at most 120 s), then
# CHECK URL true (polled for at most 60 s while the process lives, since the port can open
# before the server serves). Then writes URL beside PIDFILE (`url`) and prints it; otherwise
# shows the end of its log, stops it and returns 1.
#   servers_await NAME PORT URL PIDFILE CHECK
servers_await() {
  local name=$1 port=$2 url=$3 pidfile=$4 check=$5 state i
  state=$(dirname "$pidfile")
  if servers_wait_port "$port" 120; then
    for ((i = 0; i < 600; i++)); do
      if "$check" "$url"; then
        echo "$url" >"$state/url"
        echo "$url"
        return 0
      fi
      kill -0 "$(cat "$pidfile")" 2>/dev/null || break
      sleep 0.1
    done
    echo "$name: $url did not pass its check ($check); last lines of $state/log:" >&2
  else
    echo "$name: server did not open its port; last lines of $state/log:" >&2
  fi
  tail -n 20 "$state/log" >&2 || true
  servers_stop_pidfile "$pidfile"
  return 1
}

# The state directory of server $1 (created).
servers_state() {
  mkdir -p "$RAGDBEVAL_SERVER_DIR/$1"
  echo "$RAGDBEVAL_SERVER_DIR/$1"
}

# Stops the server whose pid file is $1: TERM, wait up to 20 s, then KILL.
servers_stop_pidfile() {
  local pidfile=$1 pid i
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

# True when server $1 has a URL and its pid file names a live process.
servers_running() {
  local state="$RAGDBEVAL_SERVER_DIR/$1"
  [ -f "$state/pid" ] && [ -f "$state/url" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null
}

# Prints the URL of server $1 when it runs; else says how to start it and fails.
servers_url() {
  if servers_running "$1"; then
    cat "$RAGDBEVAL_SERVER_DIR/$1/url"
  else
    echo "$1: not running (scripts/servers/$1.sh start)" >&2
    return 1
  fi
}

# Stops server $1 by its pid file and forgets its URL.
servers_stop() {
  servers_stop_pidfile "$RAGDBEVAL_SERVER_DIR/$1/pid"
  rm -f "$RAGDBEVAL_SERVER_DIR/$1/url"
}

# The verbs of a server script whose server is one process with a pid file: server $1, verb
# $2. The script defines `cmd_start` and `cmd_install`.
servers_main() {
  case "${2:-}" in
    start) cmd_start ;;
    stop) servers_stop "$1" ;;
    url) servers_url "$1" ;;
    install) cmd_install ;;
    *)
      echo "usage: scripts/servers/$1.sh start|stop|url|install" >&2
      exit 2
      ;;
  esac
}
