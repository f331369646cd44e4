#!/usr/bin/env bash
# Runs every fuzz target of tests/fuzz.rs for a fixed budget, one at a time, in release
# mode under `nice`, and prints per target: executions, inputs its parser accepted,
# crashes and the time taken. Not part of the test command, which runs the same targets
# for a fixed, small number of executions (a few seconds in all).
#
# Budget (one of):
#   FUZZ_SECS=N           N seconds per target (default 60)
#   FUZZ_BUDGET=nightly   each target's seconds from NIGHTLY below (about 37 min in all):
#                         set so that each reaches 1,000,000 executions or more on the
#                         2-core machine with 1.6x or more to spare (docs/benchmarks.md)
#   FUZZ_RUNS=N           exactly N executions per target (deterministic for a seed)
# Other knobs:
#   FUZZ_SEED=S           the seed (default: the time); printed, and in each crash's note
#   FUZZ_TARGETS="a b"    only these targets
#   FUZZ_WORKERS=N        proxy_heads: connections at once (default 4)
#   FUZZ_NICE=N           niceness of the runs (default 10)
#
# A crash (a panic in a target's check) does not stop its target: each distinct crash's
# input is saved to $CARGO_TARGET_DIR/fuzz-crashes (default target/fuzz-crashes) as
# <target>-<id>.bin, with a .txt holding the panic, the seed and the command that replays
# it (FUZZ_REPLAY=<file> FUZZ_REPLAY_SEED=<n> cargo test --release --test fuzz -- --exact
# <target>). Every target still runs; the script exits 1 if any crashed or failed.
#   FUZZ_BUDGET=nightly ./scripts/fuzz.sh
#   FUZZ_SECS=600 FUZZ_SEED=42 FUZZ_TARGETS=config ./scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(framer llm_rewriters request_rewriters mcp_messages config run_bodies tapes sessions
    reports certificates proxy_heads)
# Seconds per target in the nightly budget; measured rates are in docs/benchmarks.md.
declare -A NIGHTLY=(
    [framer]=60 [llm_rewriters]=60 [request_rewriters]=60 [mcp_messages]=60 [config]=600
    [run_bodies]=480
    [tapes]=60 [sessions]=120 [reports]=240 [certificates]=60 [proxy_heads]=480
)
GOAL=1000000

read -r -a targets <<<"${FUZZ_TARGETS:-${TARGETS[*]}}"
export FUZZ_SEED="${FUZZ_SEED:-$(date +%s)}"
target_dir="${CARGO_TARGET_DIR:-target}"
logs="$target_dir/fuzz-logs"
mkdir -p "$logs"
nice_n="${FUZZ_NICE:-10}"

budget_of() {
    if [[ -n "${FUZZ_RUNS:-}" ]]; then
        echo "${FUZZ_RUNS} runs"
    elif [[ "${FUZZ_BUDGET:-}" == nightly ]]; then
        echo "${NIGHTLY[$1]:?no nightly budget for $1} s"
    else
        echo "${FUZZ_SECS:-60} s"
    fi
}

echo "==> building the fuzz targets (release)"
nice -n "$nice_n" cargo test --release --test fuzz --no-run -q
echo "==> FUZZ_SEED=${FUZZ_SEED} (rerun with it to reproduce), logs in $logs"

failed=0
rows=()
for t in "${targets[@]}"; do
    budget=$(budget_of "$t")
    secs=""
    [[ "$budget" == *" s" ]] && secs="${budget% s}"
    log="$logs/$t.log"
    started=$SECONDS
    status=ok
    if ! FUZZ_SECS="$secs" nice -n "$nice_n" cargo test --release --test fuzz -q -- \
        --exact "$t" --nocapture --test-threads=1 >"$log" 2>&1; then
        status=FAILED
        failed=1
    fi
    took=$((SECONDS - started))
    line=$(grep -E "^fuzz $t: [0-9]+ executions" "$log" | tail -1 || true)
    execs=$(sed -nE 's/^fuzz [a-z_]+: ([0-9]+) executions.*/\1/p' <<<"$line")
    parsed=$(sed -nE 's/.*, ([0-9]+) parsed.*/\1/p' <<<"$line")
    crashes=$(sed -nE 's/.*, ([0-9]+) crashes$/\1/p' <<<"$line")
    goal=""
    if [[ -n "$execs" && "${FUZZ_BUDGET:-}" == nightly && "$execs" -lt "$GOAL" ]]; then
        goal=" (below 1M)"
    fi
    row=$(printf "%-18s %-10s %12s %10s %8s %7ss  %s%s" "$t" "$budget" "${execs:-?}" \
        "${parsed:--}" "${crashes:-?}" "$took" "$status" "$goal")
    echo "$row"
    grep -E "crash saved to|^  FUZZ_REPLAY=|panicked at" "$log" | awk '!seen[$0]++' | head -20 || true
    rows+=("$row")
done

echo
printf "%-18s %-10s %12s %10s %8s %8s  %s\n" target budget executions parsed crashes took status
printf "%s\n" "${rows[@]}"
echo "FUZZ_SEED=${FUZZ_SEED}"
exit "$failed"
