#!/usr/bin/env bash
# A profile-guided `dist` build (issue #30): builds flakestorm instrumented, trains it on
# the proxy's paths (scripts/work: intercepted HTTPS keep-alive and new connections, plain
# HTTP, 1 KiB answers) and on `flakestorm demo` (LLM providers' answers, faults, attacks,
# runs, reports), then builds it again with that profile, which tells LLVM what to inline,
# how to lay out branches, and which code (never run) to build for size instead of speed.
#
#   scripts/pgo.sh [OUT]      OUT defaults to target/pgo/flakestorm
#
# Needs llvm-profdata from `rustup component add llvm-tools` and python3. About twice as
# long as `cargo build --profile dist` (each build compiles every crate: the flags differ).
# deploy/Dockerfile builds the image's binary with it. Not part of the test command.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/pgo/flakestorm}
host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata
[ -x "$profdata" ] || { echo "pgo.sh: no $profdata; run: rustup component add llvm-tools" >&2; exit 2; }
command -v python3 >/dev/null || { echo "pgo.sh: python3 is not installed" >&2; exit 2; }
# Pinned as the benchmarks run it when CPUs 0 and 1 are ours (a build node's CPU set may
# be others) and taskset is there.
command -v taskset >/dev/null && taskset -c 0,1 true 2>/dev/null || export WORK_PIN=0
# shellcheck source=work/lib.sh
. scripts/work/lib.sh
work=$PWD/target/pgo
raw=$work/raw
rm -rf "$raw"
mkdir -p "$raw"

# --target: RUSTFLAGS then reach the binary's crates only, not build scripts or proc macros.
build() { # RUSTFLAGS TARGET_DIR
  RUSTFLAGS="${RUSTFLAGS:-} $1" cargo build --locked --profile dist --target "$host" --target-dir "$2" >&2
}

train_path() ( # BIN PATH: 1,600 requests through the instrumented proxy, which then exits
  bin=$1
  path=$2
  pair "$bin" "$path" || exit 1
  "${client[@]}" 100 16 "$path" >"$dir/client"
  grep -q "errors=0 " "$dir/client" || { echo "client errors: $(cat "$dir/client")" >&2; exit 1; }
  # The profile is written when the process exits: a clean shutdown, not a kill.
  kill -TERM "$proxy_pid"
  for _ in $(seq 300); do kill -0 "$proxy_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$proxy_pid" 2>/dev/null && { echo "pgo.sh: the proxy did not exit in 30 s" >&2; exit 1; }
  wait "$proxy_pid"
)

echo "pgo.sh: instrumented build" >&2
build "-Cprofile-generate=$raw" "$work/gen"
bin=$work/gen/$host/dist/flakestorm
# Both schedulers (main.rs): one thread on one CPU, as a sidecar runs; workers on more.
for workers in 1 2; do
  for path in https-keep https-new http-new; do
    echo "pgo.sh: training on $path, $workers scheduler thread(s)" >&2
    TOKIO_WORKER_THREADS=$workers train_path "$bin" "$path"
  done
done
echo "pgo.sh: training on the demo" >&2
"$bin" demo >/dev/null
"$profdata" merge -o "$work/flakestorm.profdata" "$raw"
echo "pgo.sh: optimized build" >&2
# Cargo sees the flags, not the profile they name: with a fresh profile at the same path
# it would keep crates built with the last one. So every crate is built again.
rm -rf "$work/use"
# A function changed since the profile was taken is built as without one: no warning each.
# Two link options, each measured on this same source and profile (docs/benchmarks.md,
# "Sidecar cost, third pass"): DT_RELR relocations (pack-relative-relocs; glibc 2.36+,
# Debian 12) take 8 KiB where RELA ones take 600 KiB, all read, so resident, at start; and
# the profile's hot and never-run functions in sections of their own
# (keep-text-section-prefix) leave 0.4 MiB less of the code resident after start.
build "-Cprofile-use=$work/flakestorm.profdata -Cllvm-args=-no-pgo-warn-mismatch \
  -Clink-arg=-Wl,-z,keep-text-section-prefix -Clink-arg=-Wl,-z,pack-relative-relocs" "$work/use"
install -D -m 0755 "$work/use/$host/dist/flakestorm" "$out"
echo "pgo.sh: $out" >&2
