# Shared by scripts/work-per-request.sh and scripts/pgo.sh: an origin (scripts/work/origin.py)
# on CPU 0 and a flakestorm proxy on CPU 1 in front of it, for scripts/work/client.py.
# Source it from the repository's root; the callers set `set -euo pipefail`. With
# WORK_PIN=0 (a one-CPU machine, where CPU 1 does not exist) nothing is pinned.
if [ "${WORK_PIN:-1}" = 1 ]; then
  cpu0=(taskset -c 0)
  cpu1=(taskset -c 1)
else
  cpu0=()
  cpu1=()
fi

# Waits until FILE holds PATTERN, as long as process PID lives (at most 30 s).
wait_for() {
  local file=$1 pattern=$2 pid=$3 i
  for i in $(seq 600); do
    grep -q "$pattern" "$file" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "gave up waiting for '$pattern' in $file" >&2
  return 1
}

# start_pair BIN PATH DIR: starts the origin (HTTPS unless PATH is http-new) and `BIN serve`
# with their files in DIR; appends both to the caller's `pids` array and sets `proxy_pid`,
# `control` (the control plane's address) and `client` (the client's command line, without
# its N_PER CONC PATH arguments). A caller's `under` array, if set, is the command BIN runs
# under (pgo.sh's tracer).
start_pair() {
  local bin=$1 path=$2 dir=$3 oargs=() port
  [ "$path" = http-new ] || oargs=("$PWD/tests/fixtures/origin.pem" "$PWD/tests/fixtures/origin.key")
  "${cpu0[@]}" python3 scripts/work/origin.py "${oargs[@]}" >"$dir/origin.port" 2>"$dir/origin.err" &
  pids+=($!)
  wait_for "$dir/origin.port" . "$!" || { cat "$dir/origin.err" >&2; return 1; }
  printf 'proxy:\n  listen: "127.0.0.1:0"\n  upstream_ca_file: "%s"\ncontrol:\n  listen: "127.0.0.1:0"\nca:\n  dir: "%s"\n' \
    "$PWD/tests/fixtures/test-ca.pem" "$dir/certs" >"$dir/flakestorm.yaml" || return 1
  RUST_LOG=warn "${cpu1[@]}" ${under+"${under[@]}"} "$bin" serve -c "$dir/flakestorm.yaml" >"$dir/out" 2>"$dir/err" &
  proxy_pid=$!
  pids+=("$proxy_pid")
  # The control line is said after the proxy's.
  wait_for "$dir/out" "control listening on" "$proxy_pid" || { cat "$dir/err" >&2; return 1; }
  port=$(grep "proxy listening on" "$dir/out" | sed 's/.*:\([0-9]*\)$/\1/')
  control=$(grep "control listening on" "$dir/out" | sed 's/.* listening on //')
  client=("${cpu0[@]}" python3 scripts/work/client.py "$port" "$(cat "$dir/origin.port")" "$dir/certs/ca.pem")
}

# pair BIN PATH: start_pair in a new temporary `dir`, which goes at the caller's exit with
# every process in `pids`. Call it in a subshell: the EXIT trap it sets is that shell's.
pair() {
  dir=$(mktemp -d) || return 1
  pids=()
  trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
  start_pair "$1" "$2" "$dir"
}
