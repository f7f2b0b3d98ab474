#!/bin/sh
# Prove the checker can fail: build rlnemesis against a scratch copy of the
# library with one defect injected (a one-line change, never in src/ itself),
# then run seeds until a run reports a violation.
#
#   tests/nemesis/inject.sh <defect> <first seed> <max seeds> [queue]
#
# With "queue", only the seeds that draw the queue profile (nm_plan.c: one
# fair or read-write name, single-thread processes asking again at once)
# are run, and counted.
#
# Defects:
#   noflag    rl_interrupted() never sees a lease run out (holds.c: the expiry
#             check of rl__hold_is_lost removed)
#   noincr    the fencing counter is read, not incremented (acquire.lua)
#   nodelay   a hold is written without its lock-delay field (acquire.lua)
#   nofair    a free fair name goes to whoever asks, queue or not (fair_acquire.lua)
#   nofifo    the fair queue serves its newest waiter first (lib/fair_look.lua)
#   drift0    no clock-drift margin: a confirmed lease is credited whole from
#             the moment its command was sent (holds.c: rl__drift_ms)
#   noreader  a new reader ignores a waiting writer's intent (rw_acquire.lua:
#             both places a reader defers to the latest intent)
#   wdblock   the watchdog reads no server's reply until every server has
#             answered or the round's deadline passed, so a stopped one holds
#             up the rest (renew.c read_ready_first)
#   stalerenew  a Redlock renewal confirms a node even when a change of the
#             hold was learned there after it was sent (redlock.c, issue 21)
set -eu
defect=$1; from=$2; max=$3; only=${4:-}
top=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/rlnemesis-inject-$defect-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
(cd "$top" && git ls-files -z | xargs -0 cp --parents -t "$scratch")
case $defect in
noflag)  sed -i 's|now >= atomic_load_explicit(&h->expiry_ms, memory_order_relaxed)|(now < 0 \&\& now >= atomic_load_explicit(\&h->expiry_ms, memory_order_relaxed))|' "$scratch/src/holds.c";;
noincr)  sed -i "s|token = redis.call('incr', KEYS\[2\])|token = tonumber(redis.call('get', KEYS[2]) or '1')|" "$scratch/src/lua/acquire.lua";;
nodelay) sed -i "s|^  local delay = tonumber(ARGV\[6\])|  local delay = nil|" "$scratch/src/lua/acquire.lua";;
nofair)  sed -i "s|  if h and h ~= ARGV\[2\] then wait = until_ms - now end|  if false and h ~= ARGV[2] then wait = until_ms - now end|" "$scratch/src/lua/fair_acquire.lua";;
nofifo)  sed -i "s|local h = redis.call('zrange', KEYS\[2\], i, i)\[1\]|local h = redis.call('zrevrange', KEYS[2], i, i)[1]|" "$scratch/src/lua/lib/fair_look.lua";;
drift0)  sed -i "s|^    return lease_ms / 100 + 2;|    return lease_ms * 0;|" "$scratch/src/holds.c";;
noreader) sed -i "s|^\\( *\\)if latest then wait = latest - now end|\\1if false then wait = latest - now end|" "$scratch/src/lua/rw_acquire.lua";;
wdblock) sed -i "s|if (!pfd\[j\].revents \&\& g|if (ready < (int)np \&\& g|" "$scratch/src/renew.c";;
stalerenew) sed -i "s|if (sent_ms > h->nodes\[i\].learned) {|if (sent_ms > h->nodes[i].learned \|\| 1) {|" "$scratch/src/redlock.c";;
*) echo "unknown defect $defect" >&2; exit 2;;
esac
if (cd "$top" && git ls-files -z | xargs -0 -I{} cmp -s "{}" "$scratch/{}"); then
    echo "inject.sh: the change did not apply" >&2; exit 2
fi
cmake -S "$scratch" -B "$scratch/build" -DCMAKE_C_COMPILER=gcc -DRLOCK_BUILD_TESTS=ON \
      -DRLOCK_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$scratch/build" -j2 --target rlnemesis >/dev/null
nm="$scratch/build/tests/nemesis/rlnemesis"
i=0; s=$((from - 1))
while [ "$i" -lt "$max" ]; do
    s=$((s + 1))
    if [ "$only" = queue ] && ! "$nm" plan "$s" | grep -q ' queue '; then continue; fi
    i=$((i + 1))
    if ! "$nm" run --seed "$s"; then
        echo "inject.sh: $defect caught by seed $s after $i seeds"; exit 0
    fi
done
echo "inject.sh: $defect not caught in $max seeds"; exit 1
