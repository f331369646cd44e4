#!/usr/bin/env bash
# A flame graph of the proxy on the intercepted path: runs the proxy benchmark's sidecar
# figures (`cargo bench --bench proxy -- --sidecar`: nginx origin, the proxy alone on CPU 1,
# intercepted HTTPS keep-alive at c = 16 first) and samples the proxy process with perf for
# 6 s of that load, with DWARF call graphs from the release profile's line tables.
#
#   scripts/flamegraph.sh [BINARY] [OUT.svg] [TITLE]
#
# BINARY defaults to a fresh scripts/pgo.sh build (the image's build). Needs perf
# (Debian linux-perf), nginx (nginx-light) and inferno (`cargo install inferno`). Not part
# of the test command.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-}
out=${2:-target/flamegraph.svg}
title=${3:-flakestorm proxy, intercepted HTTPS keep-alive c=16}
# Checked before the build, which takes long.
for tool in perf inferno-collapse-perf inferno-flamegraph nginx; do
  command -v "$tool" >/dev/null || { echo "flamegraph.sh: $tool is not installed" >&2; exit 2; }
done
if [ -z "$bin" ]; then
  scripts/pgo.sh
  bin=$PWD/target/pgo/flakestorm
fi
# Built first, so the wait below for the proxy is not spent compiling the bench.
cargo bench --locked --bench proxy --no-run
work=$(mktemp -d)
bench=
# A bench left behind on failure would go on running its rounds: it runs in a process
# group of its own (setsid), which the trap ends whole, the proxy and nginx with it.
trap '[ -n "$bench" ] && kill -- -"$bench" 2>/dev/null; rm -rf "$work"' EXIT
FLAKESTORM_BIN=$bin setsid cargo bench --locked --bench proxy -- --sidecar >"$work/bench.log" 2>&1 &
bench=$!
pid=
for _ in $(seq 1 600); do
  pid=$(pgrep -f -- "$bin serve" | head -1 || true)
  [ -n "$pid" ] && break
  sleep 0.1
done
[ -n "$pid" ] || { echo "flamegraph.sh: the proxy did not start" >&2; cat "$work/bench.log" >&2; exit 1; }
# Past the start and the warm-up, inside the c = 16 runs.
sleep 3
perf record -e cpu-clock -F 1999 --call-graph dwarf,16384 -o "$work/perf.data" -p "$pid" -- sleep 6 >/dev/null 2>&1
wait "$bench" || { bench=; cat "$work/bench.log" >&2; exit 1; }
bench=
perf script -i "$work/perf.data" 2>/dev/null | inferno-collapse-perf | sed -E 's/::h[0-9a-f]{16}//g' >"$work/folded"
inferno-flamegraph --minwidth 0.3 --title "$title" <"$work/folded" >"$out"
# FOLDED=path keeps the collapsed stacks (for inferno-diff-folded, or counting by frame).
[ -n "${FOLDED:-}" ] && cp "$work/folded" "$FOLDED"
echo "wrote $out"
