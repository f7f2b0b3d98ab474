#!/usr/bin/env bash
# rlock's test command. Installs what it needs with apt-get (scripts/lib.sh,
# rl_install_deps: root or sudo), starts its own redis-servers, and runs
# from any directory.
#
#   scripts/test.sh          after a change, or on a new machine (about 6
#                            minutes on 2 cores): build with gcc -Werror, the
#                            unit, integration and fault-scenario tests and
#                            the nemesis's short form (ctest, 4 at once: each
#                            test starts servers of its own), the examples
#                            under valgrind and on a Redis Cluster, the
#                            exported symbols, module layers and sizes, luacheck.
#   scripts/test.sh --full   the CI form (.ci/run; CI=true implies it; about
#                            45 minutes): the same, then every test again
#                            under ASan+UBSan and under TSan (2 at once),
#                            the installed package, rlock as a subproject and
#                            the Debian packages (installed with apt-get and
#                            purged again), fuzzing, and in a Debian 13 root
#                            (debootstrap, build-trixie/) the build, the unit
#                            and integration tests against Redis 8.0 and then
#                            Valkey 8.1, and the .deb packages
#                            (scripts/trixie.sh).
#
#   RL_FUZZ_SECONDS=N seconds per fuzz target (default 30)
#   RL_TEST_PORTS=LO-HI  ports of every server started (default 20000-29999)
#   RL_CTEST_JOBS=N   tests at once in the gcc pass (default 4)
#   RL_SAN_JOBS=N     tests at once in each sanitizer pass (default 2: a test
#                     mostly waits on its servers; 2 at once keep the load of
#                     these passes near 1.5 on 2 cores and halve their time)
#
# The last line is the summary: "test.sh: N passed, M failed". N and M count
# every ctest test of every pass (gcc, ASan+UBSan, TSan, and Debian 13's
# legs, read from ctest --output-junit), and each other check as one: a
# build, an example run, a packaging check, the symbols, each layers check,
# the sizes, luacheck, each fuzz target. A step that fails outside any check
# (installing, starting a server) counts one failure. The first failure
# stops the run; the exit status is non-zero whenever M is.
set -euo pipefail

RL_LOG_TAG=test.sh
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$RL_ROOT"

full=0
[[ ${CI:-} == true ]] && full=1
for arg in "$@"; do
    case $arg in
    --full) full=1 ;;
    *) echo "usage: scripts/test.sh [--full]" >&2; exit 2 ;;
    esac
done
ctest_jobs=${RL_CTEST_JOBS:-4}
san_jobs=${RL_SAN_JOBS:-2}

# Sanitizer settings for every run below. die_after_fork=0: the library is
# meant to be used in a child after fork() (it restarts its threads there).
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 die_after_fork=0"

# ---------------------------------------------------------------------------
# Steps and checks. A step is a banner and a timing; inside it, each check
# counts one passed or failed (ctest, each of its tests). A failure inside a
# step stops the script (set -e); the exit hook then reports the step and
# prints the summary.

passed=0
failed=0
skipped=0
current=
step_t0=0
step_p0=0
step_f0=0
timings=()

step_begin() {
    current=$1
    step_t0=$SECONDS
    step_p0=$passed
    step_f0=$failed
    printf '\n==== %s ====\n' "$current"
}

# "N passed[, M failed]" of the step so far.
step_counts() {
    local p=$((passed - step_p0)) f=$((failed - step_f0))
    printf '%d passed' "$p"
    ((f == 0)) || printf ', %d failed' "$f"
}

step_end() {
    local took=$((SECONDS - step_t0))
    timings+=("$(printf '%-48s %5ds  ok (%s)' "$current" "$took" "$(step_counts)")")
    printf '==== %s: ok (%ds, %s) ====\n' "$current" "$took" "$(step_counts)"
    current=
}

step_skip() {
    timings+=("$(printf '%-48s %6s  skipped (%s)' "$1" - "$2")")
    printf '\n==== %s: skipped (%s) ====\n' "$1" "$2"
    skipped=$((skipped + 1))
}

# check NAME CMD...: runs CMD as one check. A failure counts one and returns
# CMD's status, which stops the script (set -e). CMD runs in a condition, so
# set -e does not apply inside it: a function given here returns its first
# failure itself.
check() {
    local name=$1 rc=0
    shift
    "$@" || rc=$?
    if ((rc == 0)); then
        passed=$((passed + 1))
        printf -- '-- ok: %s\n' "$name"
        return 0
    fi
    failed=$((failed + 1))
    printf -- '-- FAILED: %s (exit status %d)\n' "$name" "$rc" >&2
    return "$rc"
}

# counted NAME CMD...: runs a script that ends with "<name>: N passed, M
# failed" (fuzz.sh, trixie.sh) and adds its counts; without that line, one
# check by CMD's status.
counted() {
    local name=$1 log rc=0 line p f
    shift
    log=$(mktemp "${TMPDIR:-/tmp}/rlock-test-counted.XXXXXX")
    "$@" 2>&1 | tee "$log" || rc=$?
    line=$(grep -E '^[a-z.]+: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1 || true)
    rm -f -- "$log"
    if [[ -n $line ]]; then
        read -r p f < <(sed -E 's/^[a-z.]+: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/' <<<"$line")
        ((rc == 0 || f > 0)) || f=1
        passed=$((passed + p))
        failed=$((failed + f))
        printf -- '-- %s: %d passed, %d failed\n' "$name" "$p" "$f"
        return "$rc"
    fi
    check "$name" test "$rc" -eq 0
}

summary() {
    local line
    if [[ -n $current ]]; then
        # A step that failed outside its checks counts one failure.
        ((failed > step_f0)) || failed=$((failed + 1))
        timings+=("$(printf '%-48s %5ds  FAILED (%s)' "$current" "$((SECONDS - step_t0))" \
            "$(step_counts)")")
        printf '\n==== %s: FAILED (exit status %d) ====\n' "$current" "$RL_EXIT_STATUS"
    elif ((RL_EXIT_STATUS != 0 && failed == 0)); then
        failed=$((failed + 1))
    fi
    printf '\n'
    for line in "${timings[@]}"; do
        printf '  %s\n' "$line"
    done
    printf 'test.sh: total %ds, %d steps skipped\n' "$SECONDS" "$skipped"
    printf 'test.sh: %d passed, %d failed\n' "$passed" "$failed"
    # The status follows the count, whatever ended the run.
    ((failed == 0)) || ((RL_EXIT_STATUS != 0)) || RL_EXIT_STATUS=1
}
# Registered first, so it runs last: after the redis-server is stopped.
rl_on_exit summary

# A clean keyspace for each suite, so one suite's leftovers cannot touch the next.
flush_redis() {
    redis-cli -h 127.0.0.1 -p "$RL_TEST_REDIS_PORT" flushall >/dev/null
}

# run_ctest DIR JOBS: every test of DIR's ctest, each one counted (from its
# --output-junit file); a run that counts none (ctest failed before any test)
# counts one failure.
run_ctest() {
    local junit=$RL_ROOT/$1/ctest-junit.xml rc=0 p f
    flush_redis
    rm -f -- "$junit"
    ctest --test-dir "$1" --output-on-failure --no-tests=error --timeout 600 -j "$2" \
        --output-junit "$junit" || rc=$?
    read -r p f < <(rl_junit_counts "$junit")
    ((rc == 0 || f > 0)) || f=$((f + 1))
    passed=$((passed + p))
    failed=$((failed + f))
    printf -- '-- ctest %s: %d passed, %d failed\n' "$1" "$p" "$f"
    return "$rc"
}

# Flags for both compiling and linking, so executables get the runtimes.
sanitizer_build() {
    local dir=$1 flags=$2
    rl_build "$dir" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DRLOCK_BUILD_TESTS=ON -DRLOCK_BUILD_EXAMPLES=ON \
        "-DCMAKE_C_FLAGS=$flags" \
        "-DCMAKE_EXE_LINKER_FLAGS=$flags" \
        "-DCMAKE_SHARED_LINKER_FLAGS=$flags"
}

valgrind_run() {
    printf -- '-- valgrind %s\n' "$*"
    valgrind --error-exitcode=1 --leak-check=full \
        --errors-for-leak-kinds=definite,indirect \
        --trace-children=yes --child-silent-after-fork=no \
        --num-callers=30 "$@"
}

# ---------------------------------------------------------------------------

# Examples under valgrind on the throwaway server; minimal's output read,
# and the README's copy of it compared with the file.
examples_built() {
    local ex absent=0
    for ex in minimal workers long_job fencing leader; do
        if [[ ! -x build/examples/$ex ]]; then
            printf '\n!!!!!!!!\n!!!! build/examples/%s is MISSING: it must exist before landing\n!!!!!!!!\n\n' "$ex" >&2
            absent=1
        fi
    done
    return "$absent"
}

minimal_works() {
    local out
    flush_redis
    out=$(valgrind_run build/examples/minimal "$RL_TEST_URL" readme:minimal) || return 1
    printf '%s\n' "$out"
    grep -q 'working on step 2 under readme:minimal' <<<"$out" ||
        { rl_log "examples/minimal did not do its work"; return 1; }
}

# The README quotes examples/minimal.c; the two must not drift apart.
readme_minimal_same() {
    sed -n '/^<!-- examples\/minimal.c -->$/,/^```$/p' README.md | sed '1,2d;$d' |
        diff -u examples/minimal.c - ||
        { rl_log "README's copy of examples/minimal.c differs from the file"; return 1; }
}

# valgrind_example NAME ARGS...: on a clean keyspace.
valgrind_example() {
    flush_redis
    valgrind_run "build/examples/$1" "${@:2}"
}

on_cluster() {
    printf -- '-- %s on %s\n' "$1" "$RL_CLUSTER_URL"
    "$1" --url "$RL_CLUSTER_URL" "${@:2}"
}

# Public symbols are rl_*; rl__* is the internal prefix and must stay hidden.
symbols_ok() {
    local symbols internal bad
    [[ -f build/librlock.so ]] || { rl_log "build/librlock.so not found"; return 1; }
    symbols=$(nm -D --defined-only build/librlock.so | awk '{ print $NF }' | sort -u)
    printf '%s\n' "$symbols" | sed 's/^/  /'
    [[ -n $symbols ]] || { rl_log "librlock.so exports nothing"; return 1; }
    internal=$(grep -E '^rl__' <<<"$symbols" || true)
    [[ -z $internal ]] ||
        { rl_log "librlock.so exports internal rl__ symbols: ${internal//$'\n'/ }"; return 1; }
    bad=$(grep -v -E '^rl_' <<<"$symbols" || true)
    [[ -z $bad ]] || { rl_log "librlock.so exports symbols outside rl_*: ${bad//$'\n'/ }"; return 1; }
    grep -x rl_version <<<"$symbols" >/dev/null || { rl_log "rl_version is not exported"; return 1; }
}

# The Lua scripts as Redis receives them, their includes expanded by the
# build (src/lua/README.md).
# src/ still has its circles (issue 33: the client's state below every
# module); until they are cut, no module may join one (29: the 28 found by
# the first run of this check, and renew_calls.c, split out of renew.c).
src_layers_ok() {
    local n
    n=$({ bash scripts/layers.sh src || true; } | tee /dev/stderr |
        awk '/^circle of/ { n += $3 } END { print n + 0 }')
    ((n <= 29)) || { rl_log "$n modules of src/ are in circles, more than the 29 known"; return 1; }
}

luacheck_ok() {
    [[ -f build/lua/acquire.lua ]] || { rl_log "build/lua/acquire.lua not found"; return 1; }
    luacheck --no-color --codes --config src/lua/.luacheckrc build/lua
}

# ---------------------------------------------------------------------------

step_begin "1 install dependencies"
rl_install_deps
step_end

step_begin "2 build (gcc) into build/"
check "build (gcc -Werror)" \
    rl_build build -DCMAKE_C_COMPILER=gcc -DRLOCK_BUILD_TESTS=ON -DRLOCK_BUILD_EXAMPLES=ON
step_end

step_begin "3 start a throwaway redis-server"
rl_redis_start
printf 'RL_TEST_URL=%s\n' "$RL_TEST_URL"
step_end

step_begin "4 ctest (gcc, $ctest_jobs at once)"
run_ctest build "$ctest_jobs"
step_end

if ((!full)); then
    step_skip "5 ASan+UBSan (clang)" "--full"
    step_skip "6 TSan (clang)" "--full"
else
    step_begin "5 ASan+UBSan (clang, $san_jobs at once)"
    check "build (ASan+UBSan)" sanitizer_build build-asan \
        "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
    run_ctest build-asan "$san_jobs"
    step_end

    step_begin "6 TSan (clang, $san_jobs at once)"
    check "build (TSan)" sanitizer_build build-tsan "-fsanitize=thread -fno-omit-frame-pointer"
    run_ctest build-tsan "$san_jobs"
    step_end
fi

step_begin "7 examples: valgrind, then workers on a cluster"
check "examples built" examples_built
check "workers (valgrind)" valgrind_example workers --url "$RL_TEST_URL" \
    --procs 2 --threads 2 --jobs 20 --accounts 4
check "long_job (valgrind)" valgrind_example long_job --url "$RL_TEST_URL"
check "fencing (valgrind)" valgrind_example fencing --url "$RL_TEST_URL" --lease-ms 1000
check "minimal (valgrind)" minimal_works
check "README's examples/minimal.c" readme_minimal_same
# The same program on a Redis Cluster of 3 masters: locks spread over them,
# the example's data followed to its slot's master (MOVED). A short run.
rl_cluster_start 3
check "workers on a cluster" on_cluster build/examples/workers \
    --procs 2 --threads 2 --jobs 20 --accounts 4
check "fencing on a cluster" on_cluster build/examples/fencing
rl_cluster_stop
step_end

if ((!full)); then
    step_skip "8 packaging (install, find_package, pkg-config, subproject, .deb)" "--full"
else
    step_begin "8 packaging (install, find_package, pkg-config, subproject, .deb)"
    # The README's install build (Release: -O3 warns where -O2 does not).
    check "build (Release, the README's install build)" \
        rl_build build-release -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release \
        -DRLOCK_BUILD_TESTS=OFF -DRLOCK_BUILD_EXAMPLES=OFF
    check "installed package and subproject (tests/packaging/check.sh)" \
        bash tests/packaging/check.sh build
    # Installs the packages on this system, then purges them (root or sudo).
    check "Debian packages (tests/packaging/deb.sh)" bash tests/packaging/deb.sh build-deb
    step_end
fi

step_begin "9 exported symbols; module layers; sizes; luacheck"
check "exported symbols" symbols_ok
# Modules reach each other one way, by any name they use (scripts/layers.sh).
check "layers of src/tools/" bash scripts/layers.sh src/tools
check "layers of tests/common/" bash scripts/layers.sh tests/common
check "layers of src/ (no module joins the known circles)" src_layers_ok
# Files and functions a reader can hold in mind (issue 22).
check "sizes of files and functions" bash scripts/sizes.sh
check "luacheck" luacheck_ok
step_end

if ((!full)); then
    step_skip "10 fuzz (libFuzzer)" "--full"
else
    step_begin "10 fuzz (libFuzzer, ${RL_FUZZ_SECONDS:-30} s per target)"
    counted "fuzz.sh" bash scripts/fuzz.sh "${RL_FUZZ_SECONDS:-30}"
    step_end
fi

if ((!full)); then
    step_skip "11 Debian 13: hiredis 1.2, Redis 8.0, Valkey 8.1, .deb" "--full"
else
    step_begin "11 Debian 13: hiredis 1.2, Redis 8.0, Valkey 8.1, .deb (scripts/trixie.sh)"
    # A debootstrap root in build-trixie/ (needs root and Debian's mirror);
    # the unit and integration tests 2 at once in each leg (each test starts
    # servers of its own on ports of RL_TEST_PORTS); trixie.sh's closing line
    # counts their tests.
    counted "trixie.sh" env RL_CTEST_JOBS=2 bash scripts/trixie.sh
    step_end
fi
