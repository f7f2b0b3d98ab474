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
#                            exported symbols, file layers and sizes, luacheck.
#   scripts/test.sh --full   the CI form (.ci/run; CI=true implies it; about
#                            45 minutes): the same, then every test again
#                            under ASan+UBSan and under TSan (one at a time),
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
#   RL_CTEST_JOBS=N   tests at once in the gcc pass (default 4); the sanitizer
#                     passes run one at a time
#
# The last line is the summary: "test.sh: N passed, M failed".
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

# Sanitizer settings for every run below. die_after_fork=0: the library is
# meant to be used in a child after fork() (it restarts its threads there).
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 die_after_fork=0"

# ---------------------------------------------------------------------------
# Steps: a banner, a timing, a count. A failure inside a step stops the script
# (set -e); the exit hook then reports the step and prints the summary.

passed=0
failed=0
skipped=0
current=
step_t0=0
timings=()

step_begin() {
    current=$1
    step_t0=$SECONDS
    printf '\n==== %s ====\n' "$current"
}

step_end() {
    local took=$((SECONDS - step_t0))
    timings+=("$(printf '%-48s %5ds  ok' "$current" "$took")")
    printf '==== %s: ok (%ds) ====\n' "$current" "$took"
    passed=$((passed + 1))
    current=
}

step_skip() {
    timings+=("$(printf '%-48s %6s  skipped (%s)' "$1" - "$2")")
    printf '\n==== %s: skipped (%s) ====\n' "$1" "$2"
    skipped=$((skipped + 1))
}

summary() {
    local line
    if [[ -n $current ]]; then
        timings+=("$(printf '%-48s %5ds  FAILED' "$current" "$((SECONDS - step_t0))")")
        printf '\n==== %s: FAILED (exit status %d) ====\n' "$current" "$RL_EXIT_STATUS"
        failed=$((failed + 1))
    elif ((RL_EXIT_STATUS != 0)); then
        failed=$((failed + 1))
    fi
    printf '\n'
    for line in "${timings[@]}"; do
        printf '  %s\n' "$line"
    done
    printf 'test.sh: total %ds, %d skipped\n' "$SECONDS" "$skipped"
    printf 'test.sh: %d passed, %d failed\n' "$passed" "$failed"
}
# Registered first, so it runs last: after the redis-server is stopped.
rl_on_exit summary

# A clean keyspace for each suite, so one suite's leftovers cannot touch the next.
flush_redis() {
    redis-cli -h 127.0.0.1 -p "$RL_TEST_REDIS_PORT" flushall >/dev/null
}

# run_ctest DIR JOBS
run_ctest() {
    flush_redis
    ctest --test-dir "$1" --output-on-failure --no-tests=error --timeout 600 -j "$2"
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

step_begin "1 install dependencies"
rl_install_deps
step_end

step_begin "2 build (gcc) into build/"
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
    step_begin "5 ASan+UBSan (clang)"
    sanitizer_build build-asan \
        "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
    run_ctest build-asan 1
    step_end

    step_begin "6 TSan (clang)"
    sanitizer_build build-tsan "-fsanitize=thread -fno-omit-frame-pointer"
    run_ctest build-tsan 1
    step_end
fi

step_begin "7 examples: valgrind, then workers on a cluster"
absent=0
for ex in minimal workers long_job fencing leader; do
    if [[ ! -x build/examples/$ex ]]; then
        printf '\n!!!!!!!!\n!!!! build/examples/%s is MISSING: it must exist before landing\n!!!!!!!!\n\n' "$ex" >&2
        absent=1
    fi
done
[[ $absent == 0 ]] || rl_die "examples missing (see above)"
flush_redis
valgrind_run build/examples/workers --url "$RL_TEST_URL" \
    --procs 2 --threads 2 --jobs 20 --accounts 4
flush_redis
valgrind_run build/examples/long_job --url "$RL_TEST_URL"
flush_redis
valgrind_run build/examples/fencing --url "$RL_TEST_URL" --lease-ms 1000
flush_redis
out=$(valgrind_run build/examples/minimal "$RL_TEST_URL" readme:minimal)
printf '%s\n' "$out"
grep -q 'working on step 2 under readme:minimal' <<<"$out" ||
    rl_die "examples/minimal did not do its work"
# The README quotes examples/minimal.c; the two must not drift apart.
sed -n '/^<!-- examples\/minimal.c -->$/,/^```$/p' README.md | sed '1,2d;$d' |
    diff -u examples/minimal.c - || rl_die "README's copy of examples/minimal.c differs from the file"
# The same program on a Redis Cluster of 3 masters: locks spread over them,
# the example's data followed to its slot's master (MOVED). A short run.
rl_cluster_start 3
printf -- '-- %s on %s\n' build/examples/workers "$RL_CLUSTER_URL"
build/examples/workers --url "$RL_CLUSTER_URL" --procs 2 --threads 2 --jobs 20 --accounts 4
printf -- '-- %s on %s\n' build/examples/fencing "$RL_CLUSTER_URL"
build/examples/fencing --url "$RL_CLUSTER_URL"
rl_cluster_stop
step_end

if ((!full)); then
    step_skip "8 packaging (install, find_package, pkg-config, subproject, .deb)" "--full"
else
    step_begin "8 packaging (install, find_package, pkg-config, subproject, .deb)"
    # The README's install build (Release: -O3 warns where -O2 does not).
    rl_build build-release -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release \
        -DRLOCK_BUILD_TESTS=OFF -DRLOCK_BUILD_EXAMPLES=OFF
    bash tests/packaging/check.sh build
    # Installs the packages on this system, then purges them (root or sudo).
    bash tests/packaging/deb.sh build-deb
    step_end
fi

step_begin "9 exported symbols of librlock.so; no circle of files in src/ nor src/tools/; sizes; luacheck"
[[ -f build/librlock.so ]] || rl_die "build/librlock.so not found"
symbols=$(nm -D --defined-only build/librlock.so | awk '{ print $NF }' | sort -u)
printf '%s\n' "$symbols" | sed 's/^/  /'
# Public symbols are rl_*; rl__* is the internal prefix and must stay hidden.
[[ -n $symbols ]] || rl_die "librlock.so exports nothing"
internal=$(grep -E '^rl__' <<<"$symbols" || true)
[[ -z $internal ]] || rl_die "librlock.so exports internal rl__ symbols: ${internal//$'\n'/ }"
bad=$(grep -v -E '^rl_' <<<"$symbols" || true)
[[ -z $bad ]] || rl_die "librlock.so exports symbols outside rl_*: ${bad//$'\n'/ }"
grep -x rl_version <<<"$symbols" >/dev/null || rl_die "rl_version is not exported"
# Dependencies between the files of src/ point one way (STYLE.md).
bash scripts/layers.sh src || rl_die "files of src/ call each other in a circle (see above)"
bash scripts/layers.sh src/tools rt_ ||
    rl_die "files of src/tools/ call each other in a circle (see above)"
# Files and functions a reader can hold in mind (issue 22).
bash scripts/sizes.sh || rl_die "a file or function of src/ is over its size limit (see above)"
# The Lua scripts as Redis receives them, their includes expanded by the
# build (src/lua/README.md).
[[ -f build/lua/acquire.lua ]] || rl_die "build/lua/acquire.lua not found"
luacheck --no-color --codes --config src/lua/.luacheckrc build/lua ||
    rl_die "luacheck finds fault with the Lua scripts of src/lua/ (see above)"
step_end

if ((!full)); then
    step_skip "10 fuzz (libFuzzer)" "--full"
else
    step_begin "10 fuzz (libFuzzer, ${RL_FUZZ_SECONDS:-30} s per target)"
    bash scripts/fuzz.sh "${RL_FUZZ_SECONDS:-30}"
    step_end
fi

if ((!full)); then
    step_skip "11 Debian 13: hiredis 1.2, Redis 8.0, Valkey 8.1, .deb" "--full"
else
    step_begin "11 Debian 13: hiredis 1.2, Redis 8.0, Valkey 8.1, .deb (scripts/trixie.sh)"
    # A debootstrap root in build-trixie/ (needs root and Debian's mirror);
    # the unit and integration tests 2 at once in each leg (each test starts
    # servers of its own on ports of RL_TEST_PORTS).
    RL_CTEST_JOBS=2 bash scripts/trixie.sh
    step_end
fi
