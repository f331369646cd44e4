#!/usr/bin/env bash
# The benchmark command: proxy overhead, direct vs through flakestorm, on loopback
# (benches/proxy/). Refreshes the bench:proxy section of docs/benchmarks.md; run it on an
# otherwise idle machine (the report says how busy other processes kept the CPU).
# Extra arguments go to the bench: `scripts/bench.sh --quick` is a smoke run that writes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench --locked --bench proxy -- "$@"
