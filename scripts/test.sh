#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: system packages, toolchain, build, tests.
# Benches are compiled and run once each in test mode, so they cannot rot.
#
#   ./scripts/test.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
ragdbeval_pick_toolchain
ragdbeval_system_deps
cd "$RAGDBEVAL_ROOT"
echo "ragdbeval: toolchain ${RUSTUP_TOOLCHAIN:-default} ($(rustc --version)), target dir $CARGO_TARGET_DIR" >&2
# Release profile for tests too: the engines' index builds are far too slow unoptimised, and
# the benchmark binary and the tests then share one build of every dependency.
cargo test --release --locked --all-targets "$@"
