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
#
# scripts/torture.sh --nemesis [--seeds N] [--from S] [--jobs J]
#   runs the nemesis (tests/nemesis/README.md) instead: N seeds (default
#   2000) from S (default 0x10000) in J streams at once (default 4; a run is
#   mostly waiting, a stream uses a tenth of a core). Each run prints its
#   summary line; the end prints the totals (seeds, operations, faults,
#   violations by invariant), the runs of each (deployment, kind) pair, the
#   replay command of every failed seed, and "torture.sh: nemesis N seeds,
#   M with violations, K could not run".
#
# scripts/torture.sh --rates [PROBE...]
#   pass rates instead: scripts/rates.sh (each scenario and isolation probe
#   RL_RATES_RUNS times in the build RL_RATES_BUILD; see there).
set -euo pipefail

if [[ ${1:-} == --rates ]]; then
    shift
    exec bash "$(dirname "${BASH_SOURCE[0]}")/rates.sh" "$@"
fi

mode=scenarios
nm_seeds=2000
nm_from=0x10000
nm_jobs=4
while (($#)); do
    case $1 in
    --nemesis) mode=nemesis ;;
    --seeds) nm_seeds=${2:?--seeds N}; shift ;;
    --from) nm_from=${2:?--from S}; shift ;;
    --jobs | -j) nm_jobs=${2:?--jobs J}; shift ;;
    *) echo "usage: torture.sh [--nemesis [--seeds N] [--from S] [--jobs J]]" >&2; exit 2 ;;
    esac
    shift
done

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

# The nemesis: J streams of consecutive seeds, then the totals.
nemesis() {
    local rlnemesis=$build/tests/nemesis/rlnemesis logs=$build/nemesis-logs
    local per=$(((nm_seeds + nm_jobs - 1) / nm_jobs)) k from n pids=() status=0
    [[ -x $rlnemesis ]] || { echo "torture.sh: $rlnemesis was not built" >&2; return 1; }
    rm -rf "$logs" && mkdir -p "$logs"
    for ((k = 0; k < nm_jobs; k++)); do
        from=$((nm_from + k * per))
        n=$((nm_seeds - k * per < per ? nm_seeds - k * per : per))
        ((n > 0)) || break
        ("$rlnemesis" run --seeds "$n" --from "$from" 2>"$logs/stream$k.err" |
            tee "$logs/stream$k.out" | grep --line-buffered '^nemesis seed=' || true) &
        pids+=($!)
    done
    for k in "${pids[@]}"; do wait "$k"; done
    cat "$logs"/stream*.out | awk -v want="$nm_seeds" '
        /^nemesis seed=/ {
            runs++
            dep = $3
            for (i = 4; i <= NF; i++) {
                split($i, kv, "=")
                if (kv[1] == "ops" || kv[1] == "faults") tot[kv[1]] += kv[2]
                if (i > 4 && $i ~ /^[a-z]+=[0-9]+$/ && seen_v) viol[kv[1]] += kv[2]
                if ($i == "violations:") seen_v = 1
            }
            seen_v = 0
            if ($NF == "FAIL") { failed++; bad[failed] = $2 }
            names = $4; sub(/^names=/, "", names)
            n = split(names, parts, "),")
            delete once
            for (j = 1; j <= n; j++) { fam = parts[j]; sub(/\(.*/, "", fam); once[fam] = 1 }
            for (fam in once) pair[dep " " fam]++
        }
        END {
            printf "\nnemesis totals: seeds=%d ops=%d faults=%d violations:", runs, tot["ops"], tot["faults"]
            for (v in viol) printf " %s=%d", v, viol[v]
            printf "\nruns by (deployment, kind):"
            for (p in pair) printf " [%s]=%d", p, pair[p]
            printf "\n"
            for (j = 1; j <= failed; j++) { sub(/^seed=/, "", bad[j]); printf "replay: rlnemesis run --seed %s\n", bad[j] }
            printf "torture.sh: nemesis %d seeds, %d with violations, %d could not run\n", runs, failed, want - runs
            exit (failed > 0 || runs < want) ? 1 : 0
        }' || status=1
    return "$status"
}
if [[ $mode == nemesis ]]; then
    nemesis
    exit
fi

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
