# Sourced by the other scripts: picks a Rust toolchain new enough for ragdbeval,
# points cargo at a build cache outside the clone, and installs the system
# libraries the build links against. Safe to source more than once.
#
# Why a toolchain search: qdrant-edge 0.9 needs Rust >= 1.96 (`debug_assert_matches!`).
# A current stable satisfies that; on machines whose stable is older we use an
# installed nightly that is new enough. Set RAGDBEVAL_TOOLCHAIN to force one.

RAGDBEVAL_MIN_RUST="1.96"

# rustup's default install puts cargo in ~/.cargo/bin; non-login shells may lack it on PATH.
if ! command -v cargo >/dev/null 2>&1 && [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
RAGDBEVAL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

_ragdbeval_rustc_ok() { # $1 = toolchain name; true if its rustc >= RAGDBEVAL_MIN_RUST
  local v
  v=$(rustup run "$1" rustc --version 2>/dev/null | awk '{print $2}') || return 1
  [ -n "$v" ] || return 1
  local major minor want_major want_minor
  major=${v%%.*}; minor=${v#*.}; minor=${minor%%.*}
  want_major=${RAGDBEVAL_MIN_RUST%%.*}; want_minor=${RAGDBEVAL_MIN_RUST#*.}
  [ "$major" -gt "$want_major" ] || { [ "$major" -eq "$want_major" ] && [ "$minor" -ge "$want_minor" ]; }
}

ragdbeval_pick_toolchain() {
  command -v rustup >/dev/null 2>&1 || return 0 # plain cargo: Cargo.toml's rust-version checks it
  local tc
  for tc in ${RAGDBEVAL_TOOLCHAIN:-} stable $(rustup toolchain list 2>/dev/null | awk '/nightly/{print $1}'); do
    if _ragdbeval_rustc_ok "$tc"; then
      export RUSTUP_TOOLCHAIN="$tc"
      return 0
    fi
  done
  echo "error: ragdbeval needs Rust >= $RAGDBEVAL_MIN_RUST; no installed toolchain is new enough." >&2
  echo "       Run 'rustup update stable' (or set RAGDBEVAL_TOOLCHAIN to a toolchain you have)." >&2
  return 1
}

ragdbeval_system_deps() {
  # hdf5-metno links Debian's libhdf5 through pkg-config; the Chroma adapter reads its
  # collection's segment from chroma.sqlite3 with the sqlite3 command (read-only).
  if pkg-config --exists hdf5 2>/dev/null && command -v sqlite3 >/dev/null 2>&1; then return 0; fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: libhdf5 development files, pkg-config and sqlite3 are needed (e.g. libhdf5-dev)." >&2
    return 1
  fi
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "ragdbeval: installing libhdf5-dev, pkg-config and sqlite3 with apt-get" >&2
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libhdf5-dev pkg-config sqlite3 >&2
}

# Debian's Chromium, for the test that opens the report page headless (tests/it/report.rs).
ragdbeval_test_browser() {
  command -v chromium >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 || { echo "ragdbeval: no apt-get: install chromium for the page test" >&2; return 0; }
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "ragdbeval: installing chromium with apt-get (the report page test)" >&2
  ($sudo apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >&2
}

# A build cache outside the clone: a fresh clone reuses it, a fresh machine builds from scratch.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ragdbeval/target}"
