#!/usr/bin/env bash
# The proxy's work per request, two builds compared: user-space instructions and cycles per
# request (`perf stat` on the proxy process), which vary far less than CPU time on a shared
# VM. The proxy runs alone on CPU 1; a Python origin (scripts/work/origin.py) and client
# (scripts/work/client.py: 16 threads, 320 warm-up requests, then 2,400 measured) share
# CPU 0. The builds alternate for ROUNDS rounds on each path:
#   https-new   CONNECT + TLS + one GET per connection (the client offers its last
#               session, as HTTP clients' TLS stacks do; the count resumed is checked)
#   https-keep  one intercepted TLS connection per client thread, GETs on it
#   http-new    an absolute-form GET per connection
#
#   scripts/work-per-request.sh BEFORE_BIN AFTER_BIN ROUNDS [PATH...]   (default: all three)
#
# Needs perf (Debian linux-perf) and taskset. Not part of the test command.
set -euo pipefail
usage="usage: $0 BEFORE_BIN AFTER_BIN ROUNDS [https-new|https-keep|http-new ...]"
[ $# -ge 3 ] || { echo "$usage" >&2; exit 2; }
[[ $3 =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive number; $usage" >&2; exit 2; }
before=$(realpath "$1")
after=$(realpath "$2")
rounds=$3
shift 3
paths=("$@")
((${#paths[@]})) || paths=(https-new https-keep http-new)
for p in "${paths[@]}"; do
  case $p in https-new | https-keep | http-new) ;; *) echo "unknown path $p; $usage" >&2; exit 2 ;; esac
done
cd "$(dirname "$0")/.."
n_per=150
conc=16

# shellcheck source=work/lib.sh
. scripts/work/lib.sh

one() ( # BIN PATH -> "instructions cycles" per request; a subshell, so its trap is its own
  bin=$1
  path=$2
  pair "$bin" "$path" || exit 1
  "${client[@]}" 20 "$conc" "$path" >/dev/null
  perf stat -x, -e instructions:u,cycles:u -p "$proxy_pid" -o "$dir/stat" &
  perf=$!
  pids+=("$perf")
  sleep 0.3 # perf attaches
  "${client[@]}" "$n_per" "$conc" "$path" >"$dir/client"
  kill -INT "$perf"
  wait "$perf" 2>/dev/null || true
  grep -q "errors=0 " "$dir/client" || { echo "client errors: $(cat "$dir/client")" >&2; exit 1; }
  if [ "$path" = https-new ] && ! grep -q "resumed=$((n_per * conc - conc)) " "$dir/client"; then
    echo "TLS sessions not all resumed: $(cat "$dir/client")" >&2
    exit 1
  fi
  awk -F, -v n=$((n_per * conc)) '
    /instructions|cycles/ {
      if ($1 !~ /^[0-9]+$/) { print "perf could not count " $3 ": " $1 > "/dev/stderr"; exit 1 }
      printf "%d ", $1 / n
    }
    END { print "" }' "$dir/stat"
)

echo "| path | round | before instructions | after | before cycles | after |"
echo "|---|--:|--:|--:|--:|--:|"
for path in "${paths[@]}"; do
  for r in $(seq "$rounds"); do
    b=$(one "$before" "$path")
    a=$(one "$after" "$path")
    read -r bi bc <<<"$b"
    read -r ai ac <<<"$a"
    echo "| $path | $r | $bi | $ai | $bc | $ac |"
  done
done
