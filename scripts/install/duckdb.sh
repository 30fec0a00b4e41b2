#!/usr/bin/env bash
# Installs what the `duckdb` engine (cargo feature `duckdb`) needs, from package registries,
# into $RAGDBEVAL_DUCKDB_DIR (default .deps/duckdb in the clone):
#   lib/libduckdb.so       DuckDB 1.5.5, from npm's @duckdb/node-bindings-linux-x64 (build.rs
#                          links it with the binaries' run-time search path set to lib/)
#   vss.duckdb_extension   DuckDB's vss extension (HNSW) for 1.5.5, from PyPI's
#                          duckdb-extension-vss, loaded with LOAD at run time
# Idempotent: a second run with everything in place prints the directory and does nothing.
# Prints the directory on stdout. With RAGDBEVAL_DUCKDB_DIR set, build with the same value and
# point RAGDBEVAL_DUCKDB_VSS at its vss.duckdb_extension.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${RAGDBEVAL_DUCKDB_DIR:-$root/.deps/duckdb}"
duckdb_version="1.5.5"
npm_package="@duckdb/node-bindings-linux-x64@1.5.5-r.5"
vss_package="duckdb-extension-vss==$duckdb_version"

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "duckdb: the prebuilt DuckDB library installed here is for Linux x86_64 only" >&2
  exit 1
fi
mkdir -p "$dir/lib"
stamp="$dir/installed-$duckdb_version"
if [ -f "$stamp" ] && [ -f "$dir/lib/libduckdb.so" ] && [ -f "$dir/vss.duckdb_extension" ]; then
  echo "$dir"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "duckdb: npm pack $npm_package" >&2
(cd "$tmp" && npm pack --silent "$npm_package" >/dev/null)
mkdir "$tmp/npm"
tar -xzf "$tmp"/*.tgz -C "$tmp/npm"
so=$(find "$tmp/npm" -name libduckdb.so | head -n1)
if [ -z "$so" ]; then
  echo "duckdb: $npm_package has no libduckdb.so" >&2
  exit 1
fi
cp "$so" "$dir/lib/libduckdb.so"

echo "duckdb: pip download $vss_package" >&2
python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  -d "$tmp/pip" "$vss_package" >&2
whl=$(find "$tmp/pip" -name '*.whl' | head -n1)
python3 - "$whl" "$dir/vss.duckdb_extension" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith("vss.duckdb_extension"))
    with z.open(name) as src, open(sys.argv[2], "wb") as dst:
        dst.write(src.read())
PY
touch "$stamp"
echo "$dir"
