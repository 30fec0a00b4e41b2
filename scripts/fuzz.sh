#!/usr/bin/env bash
# Runs the fuzz targets in fuzz/ (cargo-fuzz, libFuzzer, AddressSanitizer) and fails if any
# input makes one crash, panic, abort, time out or exceed the memory limit.
#
#   scripts/fuzz.sh                      every target for 20 s
#   scripts/fuzz.sh --dev                the same, built without optimisation (what
#                                        scripts/test.sh runs: the build takes half the CPU,
#                                        which a 20 s pass gains more from than from speed)
#   scripts/fuzz.sh --jobs 2             two targets at a time (one core each)
#   scripts/fuzz.sh --seeds-only         start from the committed seeds alone, new inputs
#                                        thrown away (a short pass stays as short as asked:
#                                        the scratch corpus grows with every run)
#   scripts/fuzz.sh --seconds 300        every target for 5 minutes
#   scripts/fuzz.sh --runs 1000000 runbook texmex
#                                        1M executions of two targets
#
# New inputs go to a scratch corpus (under the build cache), seeded from fuzz/corpus/<target>,
# which stays as committed, and for `params` from every engine folder's config.toml. A crashing
# input is written to fuzz/artifacts/<target>/ and the script exits non-zero; reproduce it with
# `cargo fuzz run <target> <file>` in fuzz/.
# Needs a nightly toolchain (sanitizers); installs cargo-fuzz if it is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"
ragdbeval_pick_toolchain
ragdbeval_system_deps

limit=(-max_total_time=20)
build=(-O)
jobs=1
seeds_only=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) limit=(-max_total_time="$2"); shift 2 ;;
    --runs) limit=(-runs="$2"); shift 2 ;;
    --dev) build=(--dev); shift ;;
    --jobs) jobs="$2"; shift 2 ;;
    --seeds-only) seeds_only=1; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: --jobs takes a whole number of targets at a time (1 or more), got '$jobs'" >&2
  exit 2
fi

if ! rustc --version | grep -q nightly; then
  echo "error: fuzzing needs a nightly toolchain (sanitizers); have $(rustc --version)" >&2
  exit 2
fi
# Its own target dir, for cargo-fuzz's install too: the instrumented build must not evict the
# normal one's artifacts, nor hold its lock.
export CARGO_TARGET_DIR="${RAGDBEVAL_FUZZ_TARGET_DIR:-$HOME/.cache/ragdbeval/fuzz-target}"
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "ragdbeval: installing cargo-fuzz" >&2
  # Unoptimised: it only drives cargo and libFuzzer, and builds in half the CPU.
  cargo install cargo-fuzz --locked --version 0.13.2 --debug >&2
fi

cd "$RAGDBEVAL_ROOT/fuzz"
# The committed fuzz/Cargo.lock decides what is fuzzed: refuse to resolve afresh (which would
# rewrite it and fuzz whatever the registry serves that day).
if ! cargo metadata --locked --format-version 1 >/dev/null; then
  echo "error: fuzz/Cargo.lock is not current; run 'cargo metadata --format-version 1 >/dev/null' in fuzz/ and commit it" >&2
  exit 2
fi
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo fuzz list)
cargo fuzz build "${build[@]}" >&2
scratch="$CARGO_TARGET_DIR/corpus"
if [ -n "$seeds_only" ]; then
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/ragdbeval-fuzz.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
fi
mkdir -p "$scratch/params"
for config in "$RAGDBEVAL_ROOT"/adapters/*/config.toml; do
  cp "$config" "$scratch/params/$(basename "$(dirname "$config")").toml"
done
# One target: libFuzzer on one core, its output to stderr or, beside other targets, to a log.
fuzz_one() {
  local t=$1
  mkdir -p "$scratch/$t" "corpus/$t"
  echo "ragdbeval: fuzzing $t (${limit[*]})" >&2
  # -rss_limit_mb: an input that makes a parser allocate beyond what its bytes justify is a
  # finding, not a slow run. -timeout: per input, a hang is a finding.
  cargo fuzz run "${build[@]}" "$t" "$scratch/$t" "corpus/$t" -- \
    "${limit[@]}" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -max_len=65536 \
    -print_final_stats=1 >&2
}
if [ "$jobs" -eq 1 ]; then
  for t in "${targets[@]}"; do fuzz_one "$t"; done
else
  # Targets side by side, each with its own log; a failed one's log is printed at the end.
  for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    (set +e; fuzz_one "$t" 2>"$scratch/$t.log"; echo $? >"$scratch/$t.status") &
  done
  wait
  failed=()
  for t in "${targets[@]}"; do
    echo "ragdbeval: $t: $(grep -m1 '^Done ' "$scratch/$t.log" || echo 'no run summary')" >&2
    [ "$(cat "$scratch/$t.status")" = 0 ] || failed+=("$t")
  done
  for t in "${failed[@]}"; do
    echo "ragdbeval: fuzz target $t failed; the end of its log:" >&2
    tail -n 40 "$scratch/$t.log" >&2
  done
  [ ${#failed[@]} -eq 0 ] || exit 1
fi
echo "ragdbeval: fuzzing passed: ${targets[*]}" >&2
