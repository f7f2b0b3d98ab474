#!/bin/sh
# Prove the checker can fail: build rlnemesis against a scratch copy of the
# library with one defect injected (a one-line change, never in src/ itself),
# then run seeds until a run reports a violation.
#
#   tests/nemesis/inject.sh <defect> <first seed> <max seeds> [queue|tls|sem|semf|sets|redlock|spread]
#
# With "queue", only the seeds that draw the queue profile (nm_plan.c: one
# fair or read-write name, single-thread processes asking again at once)
# are run, and counted; with "tls", only the seeds that run over TLS; with
# "sem", only the seeds that draw a semaphore ("semf": a fenced one); with
# "sets", those that draw sets; with "redlock", those over Redlock; with
# "spread", those that draw Redlock's spread fault (redlock_spread).
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
#   semover   a semaphore grants N + 1 permits (sem_acquire.lua: a new hold
#             refused only past N + 1)
#   nogiveback  a set that fails keeps its first member (lockset.c
#             give_back: every member taken but the first given back)
#   sameslot  a fenced semaphore hold's slots are chosen without the live
#             holds' (lib/sem_slots.lua): the lowest k, whoever has them
#   spreadover  Redlock's spread places our field beside another owner's
#             (renew.lua: the key need not be free), and whether or not a
#             majority vouches for the hold (redlock.c rl__redlock_spread_count);
#             the nemesis does not catch it (README.md), it_redlock's
#             unit_scripts tests do
#   nospread  Redlock's spread never places (renew.lua: the placing branch
#             never taken): a hold granted by a bare majority stays there
set -eu
defect=$1; from=$2; max=$3; only=${4:-}
case $only in
queue) only=' queue ' ;;
tls) only='+tls ' ;;
sem) only='sem(' ;;
semf) only='sem(f' ;;
sets) only=' sets=' ;;
redlock) only=' redlock' ;;
spread) only='redlock_spread' ;;
'') ;;
*) echo "inject.sh: the filter is queue, tls, sem, semf, sets, redlock or spread, not $only" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/rlnemesis-inject-$defect-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
(cd "$top" && git ls-files -z | xargs -0 cp --parents -t "$scratch")
# inject FILE LINES SED-EXPR: apply the change to the scratch copy of FILE;
# exactly LINES lines must differ afterwards, or the tree moved under the
# pattern and the defect would be injected in part or not at all.
inject() {
    sed -i "$3" "$scratch/$1"
    n=$(diff "$top/$1" "$scratch/$1" | grep -c '^>' || true)
    if [ "$n" -ne "$2" ]; then
        echo "inject.sh: $defect changed $n lines of $1, not $2: the pattern no longer matches" >&2
        exit 2
    fi
}
case $defect in
noflag) inject src/holds.c 1 's|now >= atomic_load_explicit(&h->expiry_ms, memory_order_relaxed)|(now < 0 \&\& now >= atomic_load_explicit(\&h->expiry_ms, memory_order_relaxed))|';;
noincr) inject src/lua/acquire.lua 1 "s|token = redis.call('incr', KEYS\[2\])|token = tonumber(redis.call('get', KEYS[2]) or '1')|";;
nodelay) inject src/lua/acquire.lua 1 "s|^  local delay = tonumber(ARGV\[6\])|  local delay = nil|";;
nofair) inject src/lua/fair_acquire.lua 1 "s|  if h and h ~= ARGV\[2\] then wait = until_ms - now end|  if false and h ~= ARGV[2] then wait = until_ms - now end|";;
nofifo) inject src/lua/lib/fair_look.lua 1 "s|local h = redis.call('zrange', KEYS\[2\], i, i)\[1\]|local h = redis.call('zrevrange', KEYS[2], i, i)[1]|";;
drift0) inject src/holds.c 1 "s|^    return lease_ms / 100 + 2;|    return lease_ms * 0;|";;
noreader) inject src/lua/rw_acquire.lua 2 "s|^\\( *\\)if latest then wait = latest - now end|\\1if false then wait = latest - now end|";;
wdblock) inject src/renew.c 1 "s|if (!pfd\[j\].revents \&\& g|if (ready < (int)np \&\& g|";;
stalerenew) inject src/redlock.c 1 "s|if (sent_ms > h->nodes\[i\].learned) {|if (sent_ms > h->nodes[i].learned \|\| 1) {|";;
semover) inject src/lua/sem_acquire.lua 1 "s|^if s.used + want > size then|if s.used + want > size + 1 then|";;
sameslot) inject src/lua/lib/sem_slots.lua 1 "s|^      if taken then for x in|      if taken and false then for x in|";;
spreadover) inject src/lua/renew.lua 1 "s|^  elseif place and ARGV\[n + 1 + i\] ~= '' and redis.call('exists', KEYS\[i\]) == 0 then|  elseif place then|"
            inject src/redlock.c 1 's#^    if (h->releasing || atomic_load(&h->lost) || atomic_load(&h->expiry_ms) <= now)$#    if (h->releasing || atomic_load(\&h->lost))#';;
nospread) inject src/lua/renew.lua 1 "s|^  elseif place and ARGV\[n + 1 + i\] ~= '' and redis.call('exists', KEYS\[i\]) == 0 then|  elseif false then|";;
nogiveback) inject src/lockset.c 1 "s|^    while (taken-- > 0)$|    while (taken-- > 1)|";;
*) echo "unknown defect $defect" >&2; exit 2;;
esac
cmake -S "$scratch" -B "$scratch/build" -DCMAKE_C_COMPILER=gcc -DRLOCK_BUILD_TESTS=ON \
      -DRLOCK_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$scratch/build" -j2 --target rlnemesis >/dev/null
nm="$scratch/build/tests/nemesis/rlnemesis"
i=0; s=$((from - 1))
while [ "$i" -lt "$max" ]; do
    s=$((s + 1))
    if [ -n "$only" ] && ! "$nm" plan "$s" | grep -qF -- "$only"; then continue; fi
    i=$((i + 1))
    if ! "$nm" run --seed "$s"; then
        echo "inject.sh: $defect caught by seed $s after $i seeds"; exit 0
    fi
done
echo "inject.sh: $defect not caught in $max seeds"; exit 1
