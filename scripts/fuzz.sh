#!/usr/bin/env bash
# Runs every fuzz target in tests/fuzz.rs for FUZZ_SECS seconds each (default 60), one at
# a time, in release mode, and prints the executions each reached. Not part of the test
# command, which runs the same targets for a fixed, small number of executions.
#   FUZZ_SECS=600 FUZZ_SEED=42 ./scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export FUZZ_SECS="${FUZZ_SECS:-60}"
export FUZZ_SEED="${FUZZ_SEED:-$(date +%s)}"
echo "==> fuzz targets, ${FUZZ_SECS} s each, FUZZ_SEED=${FUZZ_SEED} (rerun with it to reproduce a failure)"
cargo test --release --test fuzz -- --nocapture --test-threads=1 2>&1 | grep -oE "fuzz [a-z_]+: .*|panicked.*|test result.*|FAILED.*|input:.*"
