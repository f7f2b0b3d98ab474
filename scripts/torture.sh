#!/usr/bin/env bash
# rlock's torture run: every fault-injection scenario of tests/fault in its
# long form (RL_TORTURE=1: more rounds, longer runs, more processes), each
# against redis-servers it starts itself. Prints each scenario's verdict line
# and ends with "torture.sh: N passed, M failed".
#
#   RL_TORTURE_BUILD=DIR          build directory (default build-torture/)
#   RL_TORTURE_SCENARIOS="a b"    a subset (names: build-torture/tests/fault/rlfault list)
#   RL_SOAK_SECONDS=N             length of the soak (default 180 here)
#   RL_TORTURE_CMAKE_ARGS="..."   extra cmake arguments (e.g. a sanitizer build)
#   RL_REDLOCK_STRICT=1           redlock_pause also requires what a known bug
#                                 breaks (see tests/fault/sc_redlock.c)
#
# The Sentinel scenarios (sentinel_failover, sentinel_failover_noack,
# sentinel_restart_early) run on a primary, two replicas and three sentinels
# of their own: three failovers, each killed node restarted and rejoining as
# a replica.
#
# The Redlock scenarios (redlock_kill, redlock_majority, redlock_pause,
# redlock_restart_empty, redlock_contention) run here too, each on five
# redis-servers of its own: more processes, more rounds, longer phases.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ -f $here/lib.sh ]]; then
    # shellcheck disable=SC2034 # read by lib.sh
    RL_LOG_TAG=torture.sh
    # shellcheck source=scripts/lib.sh
    source "$here/lib.sh"
    rl_install_deps
else
    RL_ROOT=$(cd "$here/.." && pwd)
    rl_build() {
        local dir=$1
        shift
        cmake -S "$RL_ROOT" -B "$dir" -DRLOCK_WERROR=ON "$@"
        cmake --build "$dir" -j "$(nproc)"
    }
fi
cd "$RL_ROOT"

build=${RL_TORTURE_BUILD:-$RL_ROOT/build-torture}
# shellcheck disable=SC2086 # word splitting of the extra arguments is wanted
rl_build "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRLOCK_BUILD_TESTS=ON \
    -DRLOCK_BUILD_EXAMPLES=OFF ${RL_TORTURE_CMAKE_ARGS:-}
rlfault=$build/tests/fault/rlfault
[[ -x $rlfault ]] || { echo "torture.sh: $rlfault was not built" >&2; exit 1; }

export RL_TORTURE=1
export RL_SOAK_SECONDS=${RL_SOAK_SECONDS:-180}
scenarios=${RL_TORTURE_SCENARIOS:-$("$rlfault" list)}

passed=0
failed=0
verdicts=()
for s in $scenarios; do
    printf '\n==== %s (long form) ====\n' "$s"
    start=$SECONDS
    status=0
    out=$("$rlfault" "$s" 2> >(sed "s/^/  /" >&2)) || status=$?
    printf '%s\n' "$out"
    line=$(grep '^scenario=' <<<"$out" | tail -1 || true)
    [[ -n $line ]] || line="scenario=$s result=FAIL (no verdict, exit status $status)"
    if ((status == 0)) && [[ $line == *result=PASS ]]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
    verdicts+=("$line  [$((SECONDS - start))s]")
done

printf '\n'
printf '%s\n' "${verdicts[@]}"
printf 'torture.sh: %d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
