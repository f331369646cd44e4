#!/usr/bin/env bash
# Soak (not part of the test command): a release `flakestorm serve` with ~10% tool faults on
# intercepted HTTPS traffic to a local origin, 200 concurrent keep-alive connections for
# SOAK_SECS (default 600), then SOAK_IDLE_SECS (default 60) idle. Checks 0 unintended errors,
# that the proxy stays up, and that RSS at the end is within 10% of its level after warm-up;
# prints RSS after warm-up, at the end and after the idle period (benches/soak/main.rs).
#   SOAK_SECS=60 scripts/soak.sh        # a short run
# Other knobs: SOAK_CONNS (200), SOAK_WARMUP_SECS (min(60, SOAK_SECS/5)).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each connection is a client socket plus an upstream one, in the proxy and in this driver.
ulimit -n "$(( $(ulimit -Hn) < 65536 ? $(ulimit -Hn) : 65536 ))" 2>/dev/null || true
exec cargo bench --locked --bench soak
