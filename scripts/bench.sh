#!/usr/bin/env bash
# The benchmark command: proxy overhead, direct vs through flakestorm, on loopback
# (benches/proxy/), and the sidecar figures against nginx (apt install nginx-light).
# Measures the shipped build (scripts/pgo.sh: the profile-guided `dist` build, as
# deploy/Dockerfile builds it) unless FLAKESTORM_BIN names another binary. Refreshes the bench:proxy section of
# docs/benchmarks.md; run it on an otherwise idle machine (the report says how busy other
# processes kept the CPU).
# Extra arguments go to the bench: `scripts/bench.sh --quick` is a smoke run that writes
# nothing; `--sidecar` runs only the sidecar figures and writes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${FLAKESTORM_BIN:-}" ]; then
  scripts/pgo.sh
  export FLAKESTORM_BIN=$PWD/target/pgo/flakestorm
fi
exec cargo bench --locked --bench proxy -- "$@"
