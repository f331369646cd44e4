#!/usr/bin/env bash
# The proxy's work per request, two builds compared: user-space instructions and cycles per
# request (`perf stat` on the proxy process), which vary far less than CPU time on a shared
# VM. The proxy runs alone on CPU 1; a Python origin (scripts/work/origin.py) and client
# (scripts/work/client.py: 16 threads, 320 warm-up requests, then 2,400 measured) share
# CPU 0. The builds alternate for ROUNDS rounds on each path:
#   https-new   CONNECT + TLS (sessions resumed) + one GET per connection
#   https-keep  one intercepted TLS connection per client thread, GETs on it
#   http-new    an absolute-form GET per connection
#
#   scripts/work-per-request.sh BEFORE_BIN AFTER_BIN [ROUNDS] [PATHS...]
#
# Needs perf (Debian linux-perf) and taskset. Not part of the test command.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$1
after=$2
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
paths=("${@:-https-new https-keep http-new}")
root=$PWD
n_per=150
conc=16

one() { # BIN PATH -> "instructions cycles" per request
  local bin=$1 path=$2 dir oargs=() opid ppid port oport
  dir=$(mktemp -d)
  [ "$path" = http-new ] || oargs=("$root/tests/fixtures/origin.pem" "$root/tests/fixtures/origin.key")
  taskset -c 0 python3 scripts/work/origin.py "${oargs[@]}" >"$dir/origin.port" &
  opid=$!
  until [ -s "$dir/origin.port" ]; do sleep 0.05; done
  oport=$(cat "$dir/origin.port")
  printf 'proxy:\n  listen: "127.0.0.1:0"\n  upstream_ca_file: "%s"\ncontrol:\n  listen: "127.0.0.1:0"\nca:\n  dir: "%s"\n' \
    "$root/tests/fixtures/test-ca.pem" "$dir/certs" >"$dir/flakestorm.yaml"
  RUST_LOG=warn taskset -c 1 "$bin" serve -c "$dir/flakestorm.yaml" >"$dir/out" 2>"$dir/err" &
  ppid=$!
  until grep -q "proxy listening on" "$dir/out" 2>/dev/null; do sleep 0.05; done
  port=$(grep "proxy listening on" "$dir/out" | sed 's/.*:\([0-9]*\)$/\1/')
  local client=(taskset -c 0 python3 scripts/work/client.py "$port" "$oport" "$dir/certs/ca.pem")
  "${client[@]}" 20 "$conc" "$path" >/dev/null
  perf stat -x, -e instructions:u,cycles:u -p "$ppid" -o "$dir/stat" &
  local perf=$!
  sleep 0.3
  "${client[@]}" "$n_per" "$conc" "$path" >"$dir/client"
  kill -INT "$perf"
  wait "$perf" 2>/dev/null || true
  grep -q "errors=0" "$dir/client" || { echo "client errors: $(cat "$dir/client")" >&2; exit 1; }
  kill "$ppid" "$opid" 2>/dev/null
  wait "$ppid" "$opid" 2>/dev/null || true
  awk -F, -v n=$((n_per * conc)) '/instructions|cycles/ {printf "%d ", $1 / n} END {print ""}' "$dir/stat"
  rm -rf "$dir"
}

echo "| path | round | before instructions | after | before cycles | after |"
echo "|---|--:|--:|--:|--:|--:|"
for path in ${paths[*]}; do
  for r in $(seq "$rounds"); do
    read -r bi bc < <(one "$before" "$path")
    read -r ai ac < <(one "$after" "$path")
    echo "| $path | $r | $bi | $ai | $bc | $ac |"
  done
done
