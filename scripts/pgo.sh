#!/usr/bin/env bash
# A profile-guided `dist` build (issue #30): builds flakestorm instrumented, trains it on
# the proxy's paths (scripts/work: intercepted HTTPS keep-alive and new connections, plain
# HTTP, 1 KiB answers) and on `flakestorm demo` (LLM providers' answers, faults, attacks,
# runs, reports), then builds it again with that profile, which tells LLVM what to inline,
# how to lay out branches, and which code (never run) to build for size instead of speed.
#
#   scripts/pgo.sh [OUT]      OUT defaults to target/pgo/flakestorm
#
# Needs llvm-profdata from `rustup component add llvm-tools`, python3 and valgrind. About
# three times as long as `cargo build --profile dist`: each of the two builds compiles every
# crate (the flags differ), and the code order links the optimized one again.
# deploy/Dockerfile builds the image's binary with it. Not part of the test command.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/pgo/flakestorm}
host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata
[ -x "$profdata" ] || { echo "pgo.sh: no $profdata; run: rustup component add llvm-tools" >&2; exit 2; }
command -v python3 >/dev/null || { echo "pgo.sh: python3 is not installed" >&2; exit 2; }
command -v valgrind >/dev/null ||
  { echo "pgo.sh: valgrind is not installed (apt install valgrind); it finds the functions that run, for the code order" >&2; exit 2; }
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

serve_once() { # N: N requests on each of 16 connections through the proxy start_pair
  # started, the control plane's probes, then a clean exit
  "${client[@]}" "$1" 16 "$path" >"$dir/client"
  grep -q "errors=0 " "$dir/client" || { echo "client errors: $(cat "$dir/client")" >&2; return 1; }
  # A sidecar's probes and scrapes: their code is run (and laid out) as the proxy's is.
  python3 -c 'import sys, urllib.request
for p in ("healthz", "readyz", "metrics"):
    urllib.request.urlopen(f"http://{sys.argv[1]}/{p}", timeout=30).read()' "$control" || return 1
  # The profile (and callgrind's trace) is written when the process exits: a clean
  # shutdown, not a kill.
  kill -TERM "$proxy_pid"
  for _ in $(seq 300); do kill -0 "$proxy_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$proxy_pid" 2>/dev/null && { echo "pgo.sh: the proxy did not exit in 30 s" >&2; return 1; }
  wait "$proxy_pid"
}

train_path() ( # BIN PATH: 1,600 requests through the proxy, then 160 after a restart
  bin=$1
  path=$2
  pair "$bin" "$path" || exit 1
  serve_once 100 || exit 1
  # The same files again: this start loads the CA and the store the first one made, as a
  # sidecar with a persistent volume or a mounted CA starts.
  start_pair "$bin" "$path" "$dir" || exit 1
  serve_once 10
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
flags="-Cprofile-use=$work/flakestorm.profdata -Cllvm-args=-no-pgo-warn-mismatch \
  -Clink-arg=-Wl,-z,keep-text-section-prefix -Clink-arg=-Wl,-z,pack-relative-relocs"
build "$flags" "$work/use"
bin=$work/use/$host/dist/flakestorm

# Code order (docs/benchmarks.md, "Sidecar cost, fourth pass"): the kernel maps a binary's
# code in pieces of up to 128 KiB (the page cache's folios), so the 4.4 MiB of functions a
# sidecar runs, spread over 14.6 MiB, kept 7.3 MiB of it resident after start. Callgrind
# names every function the optimized build runs, std's and the C libraries' too (which the
# profile does not count), on the training's paths and probes; the build is linked again
# with them first, together.
if ! readelf -p .comment "$bin" 2>/dev/null | grep -q "Linker: LLD"; then
  echo "pgo.sh: $bin was not linked by LLD, which alone takes a symbol order; code order skipped" >&2
else
  rm -rf "$work/trace"
  mkdir -p "$work/trace"
  for workers in 1 2; do
    for path in https-keep https-new http-new; do
      echo "pgo.sh: tracing $path, $workers scheduler thread(s)" >&2
      under=(valgrind --tool=callgrind --demangle=no --dump-instr=no --compress-strings=no
        --callgrind-out-file="$work/trace/$path-$workers-%p.out")
      TOKIO_WORKER_THREADS=$workers train_path "$bin" "$path"
    done
  done
  unset under
  python3 scripts/work/order.py "$bin" "$work/trace"/*.out >"$work/order.txt"
  echo "pgo.sh: linking again, the functions that ran first" >&2
  # Only the binary's own crate is built again (its link does the LTO); the order names
  # the same symbols, as the flags and crates are the same.
  RUSTFLAGS="${RUSTFLAGS:-} $flags" cargo rustc --locked --profile dist --target "$host" \
    --target-dir "$work/use" --bin flakestorm -- \
    "-Clink-arg=-Wl,--symbol-ordering-file=$work/order.txt" -Clink-arg=-Wl,--no-warn-symbol-ordering >&2
fi
install -D -m 0755 "$bin" "$out"
echo "pgo.sh: $out" >&2
