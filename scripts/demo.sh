#!/usr/bin/env bash
# Builds rlock and runs the workers example (4 processes x 4 threads moving
# money between 8 accounts under rlock locks) against a throwaway redis-server.
set -euo pipefail

RL_LOG_TAG=demo.sh
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$RL_ROOT"

rl_install_deps
rl_build build
[[ -x build/examples/workers ]] || rl_die "build/examples/workers was not built"
rl_redis_start

status=0
build/examples/workers --url "$RL_TEST_URL" --procs 4 --threads 4 --jobs 200 --accounts 8 ||
    status=$?
printf 'demo.sh: workers exited with status %d\n' "$status"
exit "$status"
