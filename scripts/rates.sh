#!/usr/bin/env bash
# Pass rates, not one green run (issue 32): runs each fault scenario and each
# isolation probe N times in a build of your choice and prints, per probe,
# the runs, the passes, the pass rate and the logs of the failed runs (kept;
# a passed run's log is removed). Ends with "rates: N passed, M failed",
# counting runs; the exit status is non-zero when any run failed.
#
#   scripts/rates.sh [PROBE...]        (also: scripts/torture.sh --rates ...)
#
#   PROBE   a fault scenario (build/tests/fault/rlfault list), an isolation
#           probe (it:... below), "isolation" (the *_node_stopped* scenarios
#           and every it: probe), "fault" (every scenario), or "all" (the
#           default: every scenario and every it: probe)
#   RL_RATES_RUNS=N     runs of each (default 10)
#   RL_RATES_BUILD=DIR  a build configured with -DRLOCK_BUILD_TESTS=ON, made
#                       already: build/ (gcc), build-tsan/, build-asan/, ...
#                       (default build/); nothing is built here
#   RL_RATES_LOGS=DIR   where the logs of failed runs stay (default
#                       DIR/rates-logs, emptied first)
#   RL_TORTURE=1        the scenarios' long forms (as scripts/torture.sh)
#   RL_TEST_PORTS=LO-HI the servers' ports, as for every test
#
# The isolation probes are the integration tests where a stopped or stalled
# node must cost nothing beyond its own work, run alone by name (cmocka's
# filter; the program is in DIR/tests/integration):
#   it:redlock_stopped        it_redlock '*stopped*': a minority down or
#                             stopped; a stopped majority flags in time
#   it:redlock_stalled_node   it_redlock test_stalled_node_delays_nobody
#   it:redlock_fanout_stopped it_redlock_fanout '*stopped*': releases, a
#                             one-shot acquire, a fork child, a client made
#                             and a query with masters stopped
#   it:keeper                 it_keeper: a stopped seed and master 1 cut
#                             every quarter lease cost master 1 nothing
#   it:modes_review_stopped   it_modes_review '*stopped*': a stopped node
#                             without an idle connection delays no fan-out
#
# A run passes when its program exits 0 within its time (a scenario also
# prints result=PASS). Sanitizer options as scripts/test.sh sets them,
# unless set already.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"

runs=${RL_RATES_RUNS:-10}
build=${RL_RATES_BUILD:-build}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "rates.sh: RL_RATES_RUNS=$runs: want a count" >&2; exit 2; }
build=$(cd "$build" 2>/dev/null && pwd) ||
    { echo "rates.sh: no build directory ${RL_RATES_BUILD:-build}" >&2; exit 2; }
rlfault=$build/tests/fault/rlfault
itdir=$build/tests/integration
[[ -x $rlfault ]] || { echo "rates.sh: $rlfault not found: a build with tests, made" >&2; exit 2; }
logs=${RL_RATES_LOGS:-$build/rates-logs}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1 die_after_fork=0}

# it: probes: name, program, cmocka filter.
declare -A it_prog=(
    [it:redlock_stopped]=it_redlock
    [it:redlock_stalled_node]=it_redlock
    [it:redlock_fanout_stopped]=it_redlock_fanout
    [it:modes_review_stopped]=it_modes_review
    [it:keeper]=it_keeper
)
declare -A it_filter=(
    [it:redlock_stopped]='*stopped*'
    [it:redlock_stalled_node]=test_stalled_node_delays_nobody
    [it:redlock_fanout_stopped]='*stopped*'
    [it:modes_review_stopped]='*stopped*'
    [it:keeper]='*'
)
it_probes=(it:redlock_stopped it:redlock_stalled_node it:redlock_fanout_stopped
           it:modes_review_stopped it:keeper)

mapfile -t scenarios < <("$rlfault" list)
probes=()
for arg in "${@:-all}"; do
    case $arg in
    all) probes+=("${scenarios[@]}" "${it_probes[@]}") ;;
    fault) probes+=("${scenarios[@]}") ;;
    isolation)
        for s in "${scenarios[@]}"; do
            [[ $s != *_node_stopped* ]] || probes+=("$s")
        done
        probes+=("${it_probes[@]}") ;;
    it:*)
        [[ -n ${it_prog[$arg]:-} ]] ||
            { echo "rates.sh: no probe $arg (have: ${it_probes[*]})" >&2; exit 2; }
        probes+=("$arg") ;;
    *)
        printf '%s\n' "${scenarios[@]}" | grep -qx -- "$arg" ||
            { echo "rates.sh: no scenario $arg (rlfault list)" >&2; exit 2; }
        probes+=("$arg") ;;
    esac
done

rm -rf -- "$logs"
mkdir -p "$logs"

# run_once PROBE LOG: one run, its output into LOG; status 0 when it passed.
run_once() {
    local probe=$1 log=$2
    if [[ $probe == it:* ]]; then
        # As ctest runs them (TIMEOUT 120), from the program's directory.
        (cd "$itdir" && timeout -k 10 120 "./${it_prog[$probe]}" "${it_filter[$probe]}") \
            >"$log" 2>&1
    else
        timeout -k 10 "$([[ ${RL_TORTURE:-} == 1 ]] && echo 1800 || echo 150)" \
            "$rlfault" "$probe" >"$log" 2>&1 || return
        grep -q '^scenario=.* result=PASS' "$log"
    fi
}

total_pass=0
total_fail=0
rows=()
for probe in "${probes[@]}"; do
    pass=0
    kept=()
    for ((k = 1; k <= runs; k++)); do
        log=$logs/${probe//:/_}.$k.log
        t0=$SECONDS
        if run_once "$probe" "$log"; then
            pass=$((pass + 1))
            rm -f -- "$log"
            printf 'rates: %s run %d/%d: pass (%ds)\n' "$probe" "$k" "$runs" "$((SECONDS - t0))"
        else
            kept+=("$log")
            printf 'rates: %s run %d/%d: FAIL (%ds, log %s)\n' "$probe" "$k" "$runs" \
                "$((SECONDS - t0))" "$log"
            grep -E '^scenario=|ERROR|error:|FAILED' "$log" | tail -n 3 | sed 's/^/    /' || true
        fi
    done
    total_pass=$((total_pass + pass))
    total_fail=$((total_fail + runs - pass))
    rows+=("$(printf '%-32s %4d %6d %7.1f%%  %s' "$probe" "$runs" "$pass" \
        "$(awk -v p="$pass" -v n="$runs" 'BEGIN { print 100 * p / n }')" "${kept[*]:-}")")
done

printf '\nbuild %s, %d run(s) each, load %s\n' "$build" "$runs" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-32s %4s %6s %8s  %s\n' probe runs passed rate 'logs of failed runs'
printf '%s\n' "${rows[@]}"
printf 'rates: %d passed, %d failed\n' "$total_pass" "$total_fail"
((total_fail == 0))
