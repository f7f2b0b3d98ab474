#!/usr/bin/env bash
# Fuzz rlock's parsers of outside input with libFuzzer (clang,
# -fsanitize=fuzzer,address,undefined): the URL parser, Redis replies as the
# library reads them, and lock/channel names. Builds the targets of
# tests/fuzz into their own build directory (never the gcc build), runs each
# for a bounded time from the seed corpus in tests/fuzz/corpus/<target>/,
# and fails on any crash, leak, sanitizer report or timeout.
#
#   scripts/fuzz.sh [SECONDS]     seconds per target (default 30)
#   RL_FUZZ_BUILD=DIR             build directory (default build-fuzz/)
#   RL_FUZZ_TARGETS="url reply"   a subset of the targets
#
# Crashing inputs are kept in $RL_FUZZ_BUILD/artifacts/<target>/. The last
# line is the summary: "fuzz.sh: N passed, M failed".
set -euo pipefail

seconds=${1:-30}
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "usage: $0 [SECONDS]" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ -f $here/lib.sh ]]; then
    # shellcheck disable=SC2034 # read by lib.sh
    RL_LOG_TAG=fuzz.sh
    # shellcheck source=scripts/lib.sh
    source "$here/lib.sh"
    rl_install_deps
else
    RL_ROOT=$(cd "$here/.." && pwd)
fi
cd "$RL_ROOT"

build=${RL_FUZZ_BUILD:-$RL_ROOT/build-fuzz}
targets=${RL_FUZZ_TARGETS:-url reply resp names}

cmake -S tests/fuzz -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DRLOCK_WERROR=ON
cmake --build "$build" -j "$(nproc)"

passed=0
failed=0
summary=()
for t in $targets; do
    exe=$build/fuzz_$t
    seeds=tests/fuzz/corpus/$t
    work=$build/corpus/$t
    art=$build/artifacts/$t
    log=$build/fuzz_$t.log
    [[ -x $exe ]] || { echo "fuzz.sh: no target $t" >&2; failed=$((failed + 1)); continue; }
    mkdir -p "$work" "$art"
    printf '\n==== fuzz_%s for %ss ====\n' "$t" "$seconds"
    # New inputs go to the work corpus; the seeds in the tree stay as they are.
    status=0
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
        "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$art/" "$work" "$seeds" >"$log" 2>&1 || status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    crashes=$(find "$art" -type f | wc -l)
    tail -n 4 "$log"
    if ((status == 0 && crashes == 0)); then
        passed=$((passed + 1))
        summary+=("fuzz_$t: ${execs:-?} execs, 0 crashes, ok")
    else
        failed=$((failed + 1))
        summary+=("fuzz_$t: ${execs:-?} execs, $crashes crash file(s), exit $status: FAILED (log $log)")
        grep -m 20 -E 'ERROR|SUMMARY|runtime error|==[0-9]+==' "$log" >&2 || true
    fi
done

printf '\n'
printf '  %s\n' "${summary[@]}"
printf 'fuzz.sh: %d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
