#!/usr/bin/env bash
# Fuzzes everything a peer or a file can feed coopcache (fuzz/, cargo-fuzz
# and libFuzzer; docs/reliability.md, section Fuzzing, lists the targets).
#
#   scripts/fuzz.sh short          every target for FUZZ_SHORT_TIME seconds (CI)
#   scripts/fuzz.sh long [RUNS]    every target to RUNS executions (default
#                                  10,000,000), at most FUZZ_MAX_TIME seconds each
#   scripts/fuzz.sh build          only install what is missing and build
#
# Environment:
#   FUZZ_TARGETS     targets to run, space-separated (default: all)
#   FUZZ_JOBS        targets run at once (default: the number of cores)
#   FUZZ_SHORT_TIME  seconds per target in `short` (default 10)
#   FUZZ_MAX_TIME    seconds per target in `long`, 0 for no cap (default 1500:
#                    a target too slow to reach RUNS in 25 minutes stops there
#                    and its line says `capped`)
#
# CI does not run this: it replays every target's corpus, and seeded
# mutations of it, through the same functions on stable Rust
# (`cargo test -p coopcache-fuzz`, fuzz/src/replay.rs).
#
# Installs nightly Rust (minimal profile) and cargo-fuzz if missing, builds
# every target once (release, debug assertions and overflow checks on, no
# sanitizer: the code under test is safe Rust, and the overflow checks
# catch what ASan would not), then runs each from its seeds in
# fuzz/corpus/TARGET (read only) plus the corpus it grows in
# fuzz/corpus-work/TARGET (not committed). Prints per target: executions,
# seconds, executions per second, libFuzzer's final cov/ft figures and
# crashes; a crashing input is kept in fuzz/artifacts/TARGET/. Exits 1 if
# any target crashed, timed out on one input or ran out of memory.
set -euo pipefail

mode=${1:-short}
runs=${2:-10000000}
root=$(cd "$(dirname "$0")/.." && pwd)
fuzz="$root/fuzz"
jobs=${FUZZ_JOBS:-$(nproc)}
short_time=${FUZZ_SHORT_TIME:-10}
max_time=${FUZZ_MAX_TIME:-1500}

case "$mode" in
short | long | build) ;;
*)
    echo "usage: $0 short | long [RUNS] | build" >&2
    exit 2
    ;;
esac

install() {
    if ! cargo +nightly --version >/dev/null 2>&1; then
        echo "== installing nightly Rust"
        rustup toolchain install nightly --profile minimal
    fi
    if ! cargo fuzz --version >/dev/null 2>&1; then
        echo "== installing cargo-fuzz"
        cargo install cargo-fuzz --locked
    fi
    echo "== $(rustc +nightly --version); $(cargo fuzz --version)"
}

build() {
    echo "== building the fuzz targets"
    local start=$SECONDS
    (cd "$fuzz" && cargo +nightly fuzz build --sanitizer none --features libfuzzer)
    echo "== built in $((SECONDS - start)) s"
}

targets() {
    if [[ -n "${FUZZ_TARGETS:-}" ]]; then
        echo "$FUZZ_TARGETS"
    else
        (cd "$fuzz" && cargo +nightly fuzz list)
    fi
}

# Runs one target; writes its summary line to $results/TARGET.
run_one() {
    # The fuzz crate is a member of the main workspace: its binaries land in
    # the workspace's target directory.
    local t=$1 bin="$root/target/x86_64-unknown-linux-gnu/release/$1"
    local work="$fuzz/corpus-work/$t" art="$fuzz/artifacts/$t" log="$logs/$t.log"
    mkdir -p "$work" "$art" "$fuzz/corpus/$t"
    local limit=(-max_total_time="$short_time")
    if [[ $mode == long ]]; then
        limit=(-runs="$runs")
        [[ $max_time != 0 ]] && limit+=(-max_total_time="$max_time")
    fi
    local before start rc=0
    before=$(find "$art" -type f | wc -l)
    start=$(date +%s.%N)
    "$bin" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$art/" "$work" "$fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
    local secs execs last cov ft crashes status
    secs=$(awk -v now="$(date +%s.%N)" -v start="$start" 'BEGIN { print now - start }')
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | grep ' cov: ' | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    crashes=$(($(find "$art" -type f | wc -l) - before))
    status=ok
    if ((rc != 0 || crashes > 0)); then
        status="FAILED (exit $rc, see $log)"
    elif [[ $mode == long ]] && ((${execs:-0} < runs)); then
        status="capped at ${max_time} s"
    fi
    printf '%s\t%s\t%.0f\t%s\t%s\t%s\t%s\n' "$t" "${execs:-0}" "$secs" \
        "${cov:-?}" "${ft:-?}" "$crashes" "$status" >"$results/$t"
}

install
build
[[ $mode == build ]] && exit 0

logs="$root/target/fuzz-logs"
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
mkdir -p "$logs"
start=$SECONDS
all=$(targets)
echo "== fuzzing $(wc -w <<<"$all") targets, $jobs at a time ($mode)"
for t in $all; do
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
    echo "   $t"
    run_one "$t" &
done
wait

printf '\n%-20s %12s %8s %10s %6s %7s %7s  %s\n' target executions seconds 'exec/s' cov ft crashes status
failed=0
for t in $all; do
    IFS=$'\t' read -r name execs secs cov ft crashes status <"$results/$t"
    printf '%-20s %12s %8s %10s %6s %7s %7s  %s\n' "$name" "$execs" "$secs" \
        "$((execs / (secs > 0 ? secs : 1)))" "$cov" "$ft" "$crashes" "$status"
    [[ $status == FAILED* ]] && failed=1
done
echo "== $mode run took $((SECONDS - start)) s after the build; logs in $logs"
exit $failed
