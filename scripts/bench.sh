#!/usr/bin/env bash
# rlock's benchmark: builds rlbench (Release), starts a throwaway
# redis-server, measures Redis itself (PING round trip, redis-benchmark
# EVALSHA rate at each client count), starts a throwaway Redis Cluster of 3
# masters and 5 independent Redlock masters, then runs the workloads of
# rlbench (tests/bench/wl_*.c; spread and watchdog on the cluster too, each
# right after its single-server run, with ratios; solo_redlock and
# contend_redlock on Redlocks of 3 and 5 masters beside the single server,
# with ratios), and last the TLS leg: solo_tls, contend_tls, watchdog_tls and
# storm_tls on a redis-server that rlbench starts itself with a TLS port
# beside its plain one (certificates made by openssl), each TLS figure with
# its ratio to the plain port's in the same run. The semaphore-and-set
# leg (solo_sem, contend_sem, set4; --only sem alone) times a semaphore's
# permits and a set of 4 names against the plain lock in the same run. Prints one key=value line
# per workload, writes a CSV and, when gnuplot is installed, a PNG of the
# contention curve.
#
# Targets are reported as target=... met=yes/no; they never change the exit
# status. The script fails only on errors (build, Redis, a failed rlock call).
#
#   RL_BENCH_BUILD_DIR=DIR   build tree (default: build-bench/ in the repo)
#   RL_BENCH_OUT=DIR         where the CSV and PNG go (default: DIR/results)
#   RL_BENCH_SECONDS=S       length of each contend step (default 3; spread 2/3 of it)
#   RL_BENCH_CLUSTER=0       no cluster: skip spread_cluster and watchdog_cluster
#   RL_BENCH_REDLOCK=0       no Redlock masters: skip solo_redlock and
#                            contend_redlock
#   RL_BENCH_TLS=0           no TLS leg (it needs redis-server built with TLS
#                            and the openssl command)
#   RL_BENCH_SEM=0           no semaphore-and-set leg (solo_sem, contend_sem,
#                            set4)
#   RL_BENCH_PROFILE=1       afterwards, profile solo, contend W=4 and (with
#                            Redlock) solo_redlock with callgrind and print
#                            the hottest functions
#   Extra arguments go to rlbench (e.g. --only solo,contend; --only tls for
#   the TLS leg alone; --tls-kill-ms 250 for a harsher storm).
set -euo pipefail

RL_LOG_TAG=bench.sh
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$RL_ROOT"

build_dir=${RL_BENCH_BUILD_DIR:-$RL_ROOT/build-bench}
out_dir=${RL_BENCH_OUT:-$build_dir/results}
seconds=${RL_BENCH_SECONDS:-3}
clients=(1 2 4 8 16 32)

# ---------------------------------------------------------------------------
rl_install_deps
command -v redis-benchmark >/dev/null 2>&1 || rl_die "redis-benchmark not found (package redis-tools)"

# Release build of the library and of rlbench (the test tree builds it).
mkdir -p "$build_dir"
rl_log "building rlbench (Release) in $build_dir (log: $build_dir/build.log)"
if ! { cmake -S "$RL_ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
           -DRLOCK_WERROR=ON -DRLOCK_BUILD_EXAMPLES=OFF -DRLOCK_BUILD_TESTS=ON &&
       cmake --build "$build_dir" -j "$(nproc)" --target rlbench; } >"$build_dir/build.log" 2>&1; then
    tail -n 40 "$build_dir/build.log" >&2
    rl_die "build failed"
fi
bench=$build_dir/tests/bench/rlbench
[[ -x $bench ]] || rl_die "$bench was not built"

rl_redis_start
port=$RL_TEST_REDIS_PORT
cli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }

# ---------------------------------------------------------------------------
# Redis itself: EVALSHA of a trivial script, with each client count the
# workloads use. rlbench measures the PING round trip itself.
sha=$(cli script load 'return 1' | tr -d '\r')
[[ $sha =~ ^[0-9a-f]{40}$ ]] || rl_die "SCRIPT LOAD failed: $sha"
rb=()
for c in "${clients[@]}"; do
    n=$((c == 1 ? 50000 : 100000))
    rate=$(redis-benchmark -h 127.0.0.1 -p "$port" -c "$c" -n "$n" -q evalsha "$sha" 0 2>&1 |
           tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -n 1 | cut -d' ' -f1)
    [[ -n $rate ]] || rl_die "redis-benchmark -c $c gave no rate"
    rl_log "redis-benchmark evalsha -c $c: $rate/s"
    rb+=("$c:$rate")
done
rb_arg=$(IFS=,; echo "${rb[*]}")
cli flushall >/dev/null

# ---------------------------------------------------------------------------
# The cluster, started after the baseline so that its idle nodes do not
# weigh on it.
cluster_args=()
if [[ ${RL_BENCH_CLUSTER:-1} != 0 ]]; then
    rl_cluster_start 3
    cluster_args=(--cluster-url "$RL_CLUSTER_URL")
fi
# The Redlock masters, likewise: 5 of them, the first 3 make the N=3 Redlock.
redlock_args=()
if [[ ${RL_BENCH_REDLOCK:-1} != 0 ]]; then
    rl_redlock_start 5
    redlock_args=(--redlock-url "$RL_REDLOCK_URL")
fi

# The TLS leg: rlbench starts its own server (plain port + TLS port).
tls_args=()
if [[ ${RL_BENCH_TLS:-1} != 0 ]]; then
    command -v openssl >/dev/null 2>&1 || rl_die "openssl not found (the TLS leg makes its certificates with it; RL_BENCH_TLS=0 skips it)"
else
    tls_args=(--tls 0)
fi

# The semaphore-and-set leg: in rlbench, unless skipped.
sem_args=()
[[ ${RL_BENCH_SEM:-1} != 0 ]] || sem_args=(--sem 0)

# ---------------------------------------------------------------------------
mkdir -p "$out_dir"
stamp=$(date +%Y%m%d-%H%M%S)
csv=$out_dir/bench-$stamp.csv
png=$out_dir/bench-$stamp.png
rl_log "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(redis-server --version | cut -d' ' -f3)"
t0=$SECONDS
status=0
"$bench" --url "$RL_TEST_URL" "${cluster_args[@]}" "${redlock_args[@]}" "${tls_args[@]}" "${sem_args[@]}" --csv "$csv" \
    --rb "$rb_arg" --seconds "$seconds" "$@" || status=$?
rl_log "rlbench took $((SECONDS - t0)) s (exit status $status)"
echo "csv=$csv"

# ---------------------------------------------------------------------------
# The contention curve: acquisitions/s and p99 wait against W.
if command -v gnuplot >/dev/null 2>&1 && grep -qE '^contend(_mp)?,' "$csv"; then
    data=$out_dir/bench-$stamp.dat
    # Columns of the CSV: workload,procs,threads,n,seconds,rate_s,...,p99_us (9th)
    awk -F, '$1 == "contend"    { print $3, $6, $9 / 1000 > "'"$data"'.1" }
             $1 == "contend_mp" { print $3, $6, $9 / 1000 > "'"$data"'.mp" }' "$csv"
    touch "$data.1" "$data.mp"
    term=png
    gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1 && term=pngcairo
    gnuplot <<EOF || rl_log "gnuplot failed; no plot"
set terminal $term size 900,560
set output '$png'
set title 'rlock contention: W threads, one lock, 1 ms hold + 1 ms think'
set xlabel 'W (threads in total)'
set logscale x 2
set xtics (1,2,4,8,16,32)
set ylabel 'acquisitions/s'
set y2label 'p99 wait (ms)'
set y2tics
set ytics nomirror
set yrange [0:*]
set y2range [0:*]
set key below
set grid
plot '$data.1'  using 1:2 axes x1y1 with linespoints lw 2 title 'acq/s, 1 process', \
     '$data.mp' using 1:2 axes x1y1 with linespoints lw 2 title 'acq/s, up to 4 processes', \
     '$data.1'  using 1:3 axes x1y2 with linespoints dt 2 title 'p99 wait, 1 process', \
     '$data.mp' using 1:3 axes x1y2 with linespoints dt 2 title 'p99 wait, up to 4 processes'
EOF
    rm -f "$data.1" "$data.mp"
    [[ -s $png ]] && echo "png=$png"
else
    rl_log "gnuplot not installed (or no contend rows): no plot"
fi

# ---------------------------------------------------------------------------
# Optional profile of the solo and contend paths (instructions, callgrind).
if [[ ${RL_BENCH_PROFILE:-0} == 1 && $status == 0 ]]; then
    command -v valgrind >/dev/null 2>&1 || rl_die "valgrind not found"
    profiled=(solo contend)
    ((${#redlock_args[@]} == 0)) || profiled+=(solo_redlock)
    for w in "${profiled[@]}"; do
        cli flushall >/dev/null
        args=(--only "$w" --solo-n 2000)
        [[ $w == contend ]] && args+=(--contend-w 4 --seconds 2)
        [[ $w == solo_redlock ]] && args+=("${redlock_args[@]}")
        prof=$out_dir/callgrind-$w-$stamp.out
        rl_log "profiling $w under callgrind -> $prof"
        valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$prof.%p" \
            "$bench" --url "$RL_TEST_URL" "${args[@]}" >/dev/null 2>"$prof.log" ||
            rl_die "callgrind run of $w failed (see $prof.log)"
        for f in "$prof".*; do
            [[ $f == *.log ]] && continue
            printf '\n---- %s: %s\n' "$w" "$f"
            # The work of a run (librlock's functions, inclusive), then what
            # the library calls most (snprintf, RESP encoding, syscalls...).
            callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
                grep -E 'PROGRAM TOTALS|librlock' | head -n 25 || true
            printf -- '-- callees of the rl_lock_* calls\n'
            callgrind_annotate --inclusive=yes --tree=calling "$f" 2>/dev/null |
                awk '/\* .*:(rl_lock_try_acquire|rl_lock_release|run_change|rl__client_owner) \[/ { p = 1 }
                     p && /^$/ { p = 0 } p' | head -n 60 || true
        done
    done
fi

exit "$status"
