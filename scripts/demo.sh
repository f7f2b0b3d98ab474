#!/usr/bin/env bash
# Builds rlock and runs the workers example (4 processes x 4 threads moving
# money between 8 accounts under rlock locks) against a throwaway redis-server,
# or with --cluster against a throwaway Redis Cluster of 3 masters.
#
#   scripts/demo.sh [--cluster]
#   RL_DEMO_CLUSTER=1       same as --cluster
#   RL_DEMO_BUILD_DIR=DIR   build tree (default: build/ in the repo)
set -euo pipefail

RL_LOG_TAG=demo.sh
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$RL_ROOT"

cluster=${RL_DEMO_CLUSTER:-0}
build_dir=${RL_DEMO_BUILD_DIR:-build}
for arg in "$@"; do
    case $arg in
        --cluster) cluster=1 ;;
        -h | --help)
            printf 'usage: scripts/demo.sh [--cluster]\n'
            exit 0
            ;;
        *) rl_die "unknown argument '$arg' (usage: scripts/demo.sh [--cluster])" ;;
    esac
done

rl_install_deps
rl_build "$build_dir"
workers=$build_dir/examples/workers
[[ -x $workers ]] || rl_die "$workers was not built"
if [[ $cluster == 1 ]]; then
    rl_cluster_start 3
    url=$RL_CLUSTER_URL
else
    rl_redis_start
    url=$RL_TEST_URL
fi

status=0
"$workers" --url "$url" --procs 4 --threads 4 --jobs 200 --accounts 8 || status=$?
printf 'demo.sh: workers exited with status %d\n' "$status"
exit "$status"
