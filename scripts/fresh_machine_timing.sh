#!/usr/bin/env bash
# Times one of the README's two commands as a new user on a fresh machine of this kind meets
# it: a fresh clone, no build cache, no cargo registry, no .venv, no pip or npm cache, and the
# Debian packages the commands install removed again. Prints the wall time; the command's own
# output goes to a log beside the clone.
#
#   ./scripts/fresh_machine_timing.sh first     # ./scripts/ragdbeval bench
#   ./scripts/fresh_machine_timing.sh test      # ./scripts/test.sh (CI=true, as .ci/run)
#
# It changes this machine: it removes libhdf5-dev, sqlite3 and chromium (the commands install
# them again), and keeps the Rust toolchains (rustup's, as on a fresh machine of this kind). The
# clone is of this checkout's HEAD, in a temporary directory with its own empty CARGO_HOME and
# HOME: no build cache, pip or npm cache, and this user's own caches stay as they are.
set -euo pipefail
case "${1:-}" in
  first) command=(./scripts/ragdbeval bench) ;;
  test) command=(env CI=true ./scripts/test.sh) ;;
  *) sed -n '2,13p' "$0"; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work=$(mktemp -d /tmp/ragdbeval-fresh.XXXXXX)
git clone -q "$root" "$work/ragdbeval"

DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq libhdf5-dev sqlite3 chromium >/dev/null 2>&1 || true
DEBIAN_FRONTEND=noninteractive apt-get autoremove -y -qq >/dev/null 2>&1 || true
apt-get clean
rm -rf /tmp/ragdbeval-servers

cargo_home="$work/cargo-home"
mkdir -p "$cargo_home" "$work/home"
# rustup's proxies stay on PATH; the registry, git checkouts and installed tools do not.
export CARGO_HOME="$cargo_home" PATH="$HOME/.cargo/bin:$PATH" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
# An empty home: ~/.cache (the build cache, pip's) and ~/.npm start empty. A pyenv Python
# keeps its root.
[ ! -d "$HOME/.pyenv" ] || export PYENV_ROOT="${PYENV_ROOT:-$HOME/.pyenv}"
export HOME="$work/home"
unset CARGO_TARGET_DIR XDG_CACHE_HOME
cd "$work/ragdbeval"
start=$(date +%s)
status=0
"${command[@]}" >"$work/log" 2>&1 || status=$?
end=$(date +%s)
echo "fresh_machine_timing: ${command[*]}: $((end - start)) s ($(( (end - start) / 60 )) min $(( (end - start) % 60 )) s), exit $status; log $work/log"
exit "$status"
