/*
 * The Lua scripts: the only code that changes a lock in Redis. Each runs
 * atomically; they are loaded once (SCRIPT LOAD) and called by EVALSHA.
 *
 * Every script that changes a hold is told the count the caller believes
 * it holds (`held`), so a change is applied only to the state the caller
 * saw, and a lost reply can be resolved by reading the count back.
 * Replies are {code, value}; see RL__R_* in rlock_int.h.
 *
 * A hold's value in the lock hash is "<count> <since>": the reentry count,
 * a space, and the holder's CLOCK_REALTIME in ms when the hold was created
 * (count 1). Reentry and a release that leaves count > 0 keep the suffix.
 * A bare "<count>" (older clients, values planted by hand) is accepted
 * everywhere a value is read: only the leading integer counts (RL__COUNT).
 * The suffix is for operators (`rlock list`); nothing decides on it.
 *
 * The rule every script keeps: no command on a key after a command that
 * may have deleted that key (an HDEL or ZREM that may take its last
 * member, a DEL). While a Cluster slot is MIGRATING, its source runs a
 * script only when every declared key is there (else TRYAGAIN or ASK:
 * refused whole, nothing done), and stops it at the first command on a
 * key that is gone ("non local key"), after what it wrote before: the
 * change would be applied and reported failed. So a script reads first,
 * and on each key its writes come before the one that may delete it.
 * (tests/unit/test_scripts.c runs every script as such a source would.)
 */
#include "rlock_int.h"

/*
 * A lease argument is checked before anything is written, and passed on as
 * the number it was checked as: Redis does not undo a script's earlier
 * writes when a later call fails, and a PEXPIRE that fails after an HSET
 * would leave a lock with no expiry at all.
 */
#define RL__LEASE_CHECK(arg, min) \
    "local lease = tonumber(" arg ")\n" \
    "if not lease or lease ~= math.floor(lease) or lease < " #min \
    " or lease > 2147483647 then\n" \
    "  return redis.error_reply('ERR rlock: lease out of range')\n" \
    "end\n"

/* A notice is a courtesy, the change is the fact: a PUBLISH that Redis
 * refuses (an ACL user without channel rights) must not turn an applied
 * change into an error. `arg` says how: 's' SPUBLISH (Cluster: sharded, on
 * the channel's master), '0' none, anything else (or nothing) PUBLISH.
 *
 * The channel comes in ARGV, not KEYS: it is never a key, and while its
 * slot migrates Redis answers a command whose declared keys are not all
 * present with TRYAGAIN, so a release would fail until the migration ends.
 * It shares the lock's hash tag, so SPUBLISH stays on the lock's slot. */
/* The count of a hold's value v ("<count>" or "<count> <since>"), and the
 * suffix a rewrite keeps (" <since>" or ""). */
#define RL__COUNT(v) "tonumber(string.match(" v ", '^%d+'))"
#define RL__SUFFIX(v) "(string.match(" v ", ' .*$') or '')"

#define RL__NOTICE(arg, chan) \
    "if " arg " == 's' then redis.pcall('spublish', " chan ", '0')\n" \
    "elseif " arg " ~= '0' then redis.pcall('publish', " chan ", '0') end\n"

/* The fencing token of a hold's value v ("<count> <since> <token>"), or nil. */
#define RL__TOKEN(v) "tonumber(string.match(" v ", '^%d+ %d+ (%d+)$'))"

/*
 * KEYS[1] lock, and KEYS[2] its fence key when the caller hands out
 * fencing tokens. ARGV lease_ms, owner, held, since (the caller's
 * CLOCK_REALTIME in ms; '0' or left out on reentry), fence ('1': hand out
 * a token), delay_ms (lock-delay; '0' or left out: none). Few calls on the
 * common paths: Redis counts each call a script makes.
 *
 * Fencing: KEYS[2] counts the tokens handed out and never expires; a new
 * hold's token is the third word of its value ("<count> <since> <token>"),
 * so reentry, release and a lost reply's read-back all see it. It is the
 * one script that declares two keys, and only for a fencing client: while
 * a Cluster slot migrates, Redis refuses a script whose declared keys are
 * not all present (TRYAGAIN).
 *
 * Lock-delay lives in the lock's own key, so that every client honours it
 * without a second key: a holder with a delay passes lease + delay as its
 * lease (its own flag still rises at the lease) and marks the hash with a
 * field RL__DELAY_FIELD = <delay_ms>, which is not an owner. Redis itself
 * tells when the lease part has run out: PTTL <= delay (RL__LEASE_OVER).
 * From then on the hold counts as gone for every script (reentry, renewal
 * and release answer "not owner", as they would for an expired key), while
 * the key stays for the rest of the delay. A clean last release (counted,
 * the lease still running) deletes the key; a hold given up as lost (release
 * held 0, or a force-release) leaves the key with only that field for the
 * delay (a tombstone), or for what is left of it when the lease ran out
 * first. To every acquirer the name is simply held until then. Tombstones
 * are announced like releases: a waiter woken asks again and sleeps for the
 * delay left, not for the lease it saw before.
 */
#define RL__DELAY_FIELD "'~delay'"
/* Whether a hold with lock-delay d (nil: none) has run out of lease. */
#define RL__LEASE_OVER(d) "(" d " and redis.call('pttl', KEYS[1]) <= " d ")"

static const char acquire_src[] =
    RL__LEASE_CHECK("ARGV[1]", 1)
    "local held = tonumber(ARGV[3])\n"
    "if held == 0 then\n"
    "  if redis.call('exists', KEYS[1]) == 1 then\n"
    /* Held (or blocked by a delay): by another, or by us through an
     * acquire that was reported failed but applied late. Ours is ours:
     * start the count afresh; unless its lease ran out (a delay runs). */
    "    local got = redis.call('hmget', KEYS[1], ARGV[2], " RL__DELAY_FIELD ")\n"
    "    if not got[1] or " RL__LEASE_OVER("tonumber(got[2])") " then\n"
    "      return {0, redis.call('pttl', KEYS[1])}\n"
    "    end\n"
    "  end\n"
    "  local v = (ARGV[4] and ARGV[4] ~= '0') and ('1 ' .. ARGV[4]) or '1'\n"
    "  local token\n"
    "  if ARGV[5] == '1' and KEYS[2] then\n"
    "    token = redis.call('incr', KEYS[2])\n"
    /* Lua numbers are doubles: past 2^53 tokens would stop rising. */
    "    if token >= 9007199254740992 then\n"
    "      return redis.error_reply('ERR rlock: fencing counter past 2^53')\n"
    "    end\n"
    "    if v == '1' then v = '1 0' end\n"
    "    v = v .. ' ' .. string.format('%d', token)\n"
    "  end\n"
    "  local delay = tonumber(ARGV[6])\n"
    "  if delay and delay > 0 then\n"
    "    redis.call('hset', KEYS[1], ARGV[2], v, " RL__DELAY_FIELD ", delay)\n"
    "  else\n"
    "    redis.call('hset', KEYS[1], ARGV[2], v)\n"
    "  end\n"
    "  redis.call('pexpire', KEYS[1], lease)\n"
    "  if token then return {1, 1, token} end\n"
    "  return {1, 1}\n"
    "end\n"
    "local got = redis.call('hmget', KEYS[1], ARGV[2], " RL__DELAY_FIELD ")\n"
    "local v = got[1]\n"
    "if not v or " RL__LEASE_OVER("tonumber(got[2])") " then return {-1, 0} end\n"
    "local n = " RL__COUNT("v") "\n"
    "if n ~= held then return {-2, n or -1} end\n"
    "redis.call('hset', KEYS[1], ARGV[2], (n + 1) .. " RL__SUFFIX("v") ")\n"
    "redis.call('pexpire', KEYS[1], lease)\n"
    "local token = " RL__TOKEN("v") "\n"
    "if token then return {1, n + 1, token} end\n"
    "return {1, n + 1}\n";

/* A release of the field's value v by a caller holding ARGV[2] (0: the
 * whole field): n, the count it leaves; another count than the caller's
 * is a mismatch, and nothing changes. */
#define RL__RELEASE_COUNT \
    "local n = " RL__COUNT("v") "\n" \
    "local held = tonumber(ARGV[2])\n" \
    "if held > 0 and n ~= held then return {-2, n or -1} end\n" \
    "if held == 0 then n = 1 end\n" \
    "n = n - 1\n"

/* The fair lock's release of one hold of ARGV[1] (v its value), ARGV[3]
 * checked as `lease` (the plain release_src spells the same out, with
 * lock-delay): a count left is written back and ends the script; else
 * `last` says whether the field, which the script deletes last of all,
 * is the lock's last. */
#define RL__RELEASE_DOWN \
    RL__RELEASE_COUNT \
    "if n > 0 then\n" \
    "  redis.call('hset', KEYS[1], ARGV[1], n .. " RL__SUFFIX("v") ")\n" \
    "  if lease > 0 then redis.call('pexpire', KEYS[1], lease) end\n" \
    "  return {1, n}\n" \
    "end\n" \
    "local last = redis.call('hlen', KEYS[1]) == 1\n"

/* KEYS[1] lock; ARGV owner, held (0: drop the whole field), lease_ms (0:
 * leave the expiry alone), the notice and the release channel (see
 * RL__NOTICE; both may be left out for no notice). Only our own field is
 * ever removed: the lock is deleted only when no other owner is left.
 *
 * Lock-delay: a last release of a counted hold (held > 0) whose lease is
 * still running is a clean one: the key goes, and the delay with it. A drop
 * (held 0: a hold lost, given up at shutdown, or an outcome never read
 * back) leaves the tombstone for the delay; a release that comes after the
 * lease ran out (a holder stalled past its check) finds the hold gone, as
 * it would find an expired key, and leaves the rest of the delay. */
static const char release_src[] =
    RL__LEASE_CHECK("ARGV[3]", 0)
    "local got = redis.call('hmget', KEYS[1], ARGV[1], " RL__DELAY_FIELD ")\n"
    "local v, delay = got[1], tonumber(got[2])\n"
    "local over = v and " RL__LEASE_OVER("delay") "\n"
    "if not v or (over and ARGV[2] ~= '0') then\n"
    "  if over then redis.call('hdel', KEYS[1], ARGV[1]) end\n"
    /* Redlock's last release, on a node that never granted us the lock:
     * if the name is free here, say so, for the waiters that listen to
     * this node. */
    "  if ARGV[2] == '0' and ARGV[4] and ARGV[4] ~= '0' and\n"
    "     redis.call('exists', KEYS[1]) == 0 then\n"
    RL__NOTICE("ARGV[4]", "ARGV[5]")
    "  end\n"
    "  return {-1, 0}\n"
    "end\n"
    RL__RELEASE_COUNT
    "if n > 0 then\n"
    "  redis.call('hset', KEYS[1], ARGV[1], n .. " RL__SUFFIX("v") ")\n"
    "  if lease > 0 then redis.call('pexpire', KEYS[1], lease) end\n"
    "  return {1, n}\n"
    "end\n"
    /* Whether ours is the last owner is asked before the delete: once the
     * key is gone, a script may not touch it again while its slot migrates
     * (Redis: "non local key"), and the delete would then be reported as
     * an error. */
    "local last = redis.call('hlen', KEYS[1]) == (delay and 2 or 1)\n"
    "if last and delay and delay > 0 and held == 0 then\n"
    /* A drop: the tombstone, for the delay from now (or what is left of
     * it, when the lease ran out first). */
    "  redis.call('hdel', KEYS[1], ARGV[1])\n"
    "  if not over then redis.call('pexpire', KEYS[1], delay) end\n"
    "elseif last and delay then\n"
    "  redis.call('del', KEYS[1])\n"
    "else\n"
    "  redis.call('hdel', KEYS[1], ARGV[1])\n"
    "end\n"
    "if last and ARGV[4] ~= '0' then\n"
    RL__NOTICE("ARGV[4]", "ARGV[5]")
    "end\n"
    "return {1, 0}\n";

/* KEYS lock1..lockN; ARGV lease_ms, owner1..ownerN. Returns one '1' (still
 * held, lease renewed) or '0' (gone) per pair, joined. A key of the wrong
 * type counts as gone and does not stop the others. (A client with a
 * lock-delay passes its lease plus the delay; a hold whose lease part ran
 * out, PTTL <= delay, counts as gone: its field stays for the rest of the
 * delay only.) */
static const char renew_src[] =
    RL__LEASE_CHECK("ARGV[1]", 1)
    "local out = {}\n"
    "for i = 1, #KEYS do\n"
    "  local r = redis.pcall('hmget', KEYS[i], ARGV[i + 1], " RL__DELAY_FIELD ")\n"
    "  local d = type(r) == 'table' and r[1] and tonumber(r[2])\n"
    "  if d and redis.call('pttl', KEYS[i]) <= d then r = nil end\n"
    "  if type(r) == 'table' and r[1] then\n"
    /* Never shorten. (The client never sends a renewal that could land on
     * a newer hold of the same owner: see the watchdog.) */
    "    if redis.call('pttl', KEYS[i]) < lease then\n"
    "      redis.call('pexpire', KEYS[i], lease)\n"
    "    end\n"
    "    out[i] = '1'\n"
    "  else\n"
    "    out[i] = '0'\n"
    "  end\n"
    "end\n"
    "return table.concat(out)\n";

/* KEYS[1] lock; ARGV[1] "<our uuid>:", the notice and the release channel
 * (see RL__NOTICE). Deletes
 * the lock and reports the thread ids of our own fields it removed, so
 * that exactly those holds are flagged, however the delete interleaved
 * with our own acquisitions: {1, n, tid1..tidn}, or {1, -1} when there
 * were too many to list (then every local hold of the name is flagged).
 * A holder with a lock-delay loses its hold now, but the key keeps its
 * expiry (what is left of the lease, plus the delay) with the tombstone
 * alone in it: the holder learns of the loss at its next renewal, or at its
 * fixed lease's end, and the next holder must not come in before its flag
 * rose and the delay went by after it. A force-release of a tombstone alone
 * deletes it (the operator's way out). */
static const char force_src[] =
    "if redis.call('type', KEYS[1]).ok ~= 'hash' then\n"
    "  if redis.call('exists', KEYS[1]) == 1 then\n"
    "    return redis.error_reply('WRONGTYPE key is not an rlock hash')\n"
    "  end\n"
    "  return {1, 0}\n"
    "end\n"
    "local out = {1, 0}\n"
    "local plen = #ARGV[1]\n"
    "local fields = redis.call('hkeys', KEYS[1])\n"
    "for _, f in ipairs(fields) do\n"
    "  if string.sub(f, 1, plen) == ARGV[1] then\n"
    "    local tid = tonumber(string.sub(f, plen + 1))\n"
    "    if tid then\n"
    "      out[2] = out[2] + 1\n"
    "      out[#out + 1] = tid\n"
    "    end\n"
    "  end\n"
    "end\n"
    "if out[2] > " RL__STR(RL__FORCE_TIDS) " then out = {1, -1} end\n"
    "local delay = tonumber(redis.call('hget', KEYS[1], " RL__DELAY_FIELD "))\n"
    /* Held by an owner with a lock-delay: it loses the hold now, the
     * tombstone stays until the lease it was given, and the delay, are
     * over (never shortened). Only a tombstone: the operator ends the
     * delay. */
    "if delay and delay > 0 and #fields > 1 then\n"
    "  for _, f in ipairs(fields) do\n"
    "    if f ~= " RL__DELAY_FIELD " then redis.call('hdel', KEYS[1], f) end\n"
    "  end\n"
    "  if redis.call('pttl', KEYS[1]) < 0 then\n"
    "    redis.call('pexpire', KEYS[1], delay)\n"
    "  end\n"
    "else\n"
    "  redis.call('del', KEYS[1])\n"
    "end\n"
    RL__NOTICE("ARGV[2]", "ARGV[3]")
    "return out\n";

/* ---- the fair lock (src/fair.c says why it is built this way) ---------
 *
 * KEYS lock, queue, places: the lock hash as above; `queue`, a sorted set
 * of waiting owners scored by order of arrival; `places`, a sorted set of
 * the same owners scored by the Redis time (ms) at which each one's place
 * runs out unless its process renews it. Both share the name's hash tag.
 * Every script passes over the waiters whose place ran out, and drops
 * them, so a dead or stopped process is passed over, and neither set
 * grows from the dead.
 *
 * Each script reads the lock and the queue first (RL__FAIR_LOOK), then
 * writes: the queue's changes in one go (settle: additions, then the one
 * ZREM per set that may empty it), the lock's last (its HDEL may delete
 * it). No key is touched after a command that may have deleted it (see
 * the rule at the top): the scripts before kept dropping places after the
 * lock's field went, and adding after dropping, and were stopped midway
 * while the slot migrated.
 */

/* Redis's own clock, so that every host's waiters are judged alike.
 * (Scripts that read the time need effects replication, asked for before
 * any write; it is the only kind from Redis 7 on.) */
#define RL__FAIR_CLOCK \
    "if redis.replicate_commands then redis.replicate_commands() end\n" \
    "local t = redis.call('time')\n" \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

/* Reads only. `drop`, the waiters to take out: those whose place ran out
 * (a hundred a call at most), and those head() finds queued without a
 * place (a thousand: ZREM takes them as arguments); dead[w] for each.
 * head(skip): the first waiter, other than skip, with a place still
 * running, and when that place runs out. */
#define RL__FAIR_LOOK \
    "local dead, drop = {}, {}\n" \
    "for _, w in ipairs(redis.call('zrangebyscore', KEYS[3], '-inf', '(' .. now, 'LIMIT', 0, 100)) do\n" \
    "  dead[w] = true\n" \
    "  drop[#drop + 1] = w\n" \
    "end\n" \
    "local function head(skip)\n" \
    "  local i = 0\n" \
    "  while true do\n" \
    "    local h = redis.call('zrange', KEYS[2], i, i)[1]\n" \
    "    if not h then return nil, 0 end\n" \
    "    if h ~= skip and not dead[h] then\n" \
    "      local until_ms = redis.call('zscore', KEYS[3], h)\n" \
    "      if until_ms then return h, tonumber(until_ms) end\n" \
    "      dead[h] = true\n" \
    "      if #drop < 1100 then drop[#drop + 1] = h end\n" \
    "    end\n" \
    "    i = i + 1\n" \
    "  end\n" \
    "end\n"

/* The queue's writes, once everything is read: w (nil: none) queued with
 * a place of `place` ms, at the tail unless it is queued with a live place
 * (a repeat only renews the place), the sets kept as long as the longest
 * place; then `drop` and `gone` (nil: none) taken out, one ZREM per set,
 * the last command on it (it may empty the set, and so delete it). */
#define RL__FAIR_SETTLE \
    "local function settle(w, place, gone)\n" \
    "  local out = {}\n" \
    "  for _, x in ipairs(drop) do if x ~= w then out[#out + 1] = x end end\n" \
    "  if gone and gone ~= w then out[#out + 1] = gone end\n" \
    "  if w then\n" \
    "    if dead[w] or not redis.call('zscore', KEYS[2], w) then\n" \
    "      local last = redis.call('zrange', KEYS[2], -1, -1, 'WITHSCORES')\n" \
    "      redis.call('zadd', KEYS[2], (tonumber(last[2]) or 0) + 1, w)\n" \
    "    end\n" \
    "    redis.call('zadd', KEYS[3], now + place, w)\n" \
    "    for i = 2, 3 do\n" \
    "      if redis.call('pttl', KEYS[i]) < place then redis.call('pexpire', KEYS[i], place) end\n" \
    "    end\n" \
    "  end\n" \
    "  if #out > 0 then\n" \
    "    redis.call('zrem', KEYS[2], unpack(out))\n" \
    "    redis.call('zrem', KEYS[3], unpack(out))\n" \
    "  end\n" \
    "end\n"

/* Tell h's process, and only it, that the name is free: on the release
 * channel with ":<its uuid>" appended (an owner is "<uuid>:<tid>"). No
 * h (nil or false): nobody queued, and a plain handle's waiter (another
 * process, another family) may wait on the plain channel, as for a plain
 * release. */
#define RL__FAIR_WAKE(arg, chan) \
    "if h then\n" \
    "  local ch = " chan " .. ':' .. (string.match(h, '^(.*):') or h)\n" \
    RL__NOTICE(arg, "ch") \
    "else\n" \
    RL__NOTICE(arg, chan) \
    "end\n"

/* KEYS lock, queue, places; ARGV lease_ms, owner, held (0), since, place_ms
 * (0: take it if free and nobody waits, but do not queue). Takes the name
 * when it is free and the caller is the first waiter (or none waits);
 * else queues the caller (once: a repeat only renews its place) and
 * reports how long to wait: the holder's PTTL, or the time the first
 * waiter's place has left. */
static const char fair_acquire_src[] =
    RL__LEASE_CHECK("ARGV[1]", 1)
    "local place = tonumber(ARGV[5]) or 0\n"
    RL__FAIR_CLOCK
    RL__FAIR_LOOK
    RL__FAIR_SETTLE
    "local wait\n"
    "if redis.call('exists', KEYS[1]) == 1 then\n"
    "  if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then\n"
    "    wait = redis.call('pttl', KEYS[1])\n"
    "  end\n"
    "else\n"
    "  local h, until_ms = head()\n"
    "  if h and h ~= ARGV[2] then wait = until_ms - now end\n"
    "end\n"
    "if wait then\n"
    "  settle(place > 0 and ARGV[2] or nil, place)\n"
    "  return {0, wait}\n"
    "end\n"
    "redis.call('hset', KEYS[1], ARGV[2], ARGV[4] and ('1 ' .. ARGV[4]) or 1)\n"
    "redis.call('pexpire', KEYS[1], lease)\n"
    "settle(nil, 0, ARGV[2])\n"
    "return {1, 1}\n";

/* KEYS lock, queue, places; ARGV as release_src's, then optionally the
 * next owner and its place_ms. As release_src, but the last release wakes
 * the first waiter's process only, and the caller's place, if it still has
 * one, goes too. The next owner (the thread of this process that waits
 * next) is queued by the same call, saving it its own queueing try: it is
 * the one woken when nobody else waits. */
static const char fair_release_src[] =
    RL__LEASE_CHECK("ARGV[3]", 0)
    RL__FAIR_CLOCK
    "local v = redis.call('hget', KEYS[1], ARGV[1])\n"
    "if not v then return {-1, 0} end\n"
    RL__RELEASE_DOWN
    RL__FAIR_LOOK
    RL__FAIR_SETTLE
    "local nxt, nplace = ARGV[6], tonumber(ARGV[7])\n"
    "if not nplace then nxt = nil end\n"
    "local h\n"
    "if last and ARGV[4] and ARGV[4] ~= '0' then\n"
    "  h = head(ARGV[1]) or nxt\n"
    "end\n"
    "settle(nxt, nplace, ARGV[1])\n"
    "redis.call('hdel', KEYS[1], ARGV[1])\n"
    "if last and ARGV[4] and ARGV[4] ~= '0' then\n"
    RL__FAIR_WAKE("ARGV[4]", "ARGV[5]")
    "end\n"
    "return {1, 0}\n";

/* KEYS lock, queue, places; ARGV owner ("" for none), the notice and the
 * release channel. A waiter that gives up leaves the queue; when the name
 * is free, the (new) first waiter's process is woken. Also after a
 * force-release. Returns 1. */
static const char fair_leave_src[] =
    RL__FAIR_CLOCK
    RL__FAIR_LOOK
    RL__FAIR_SETTLE
    "local free = ARGV[2] ~= '0' and redis.call('exists', KEYS[1]) == 0\n"
    "local h = free and head(ARGV[1])\n"
    "settle(nil, 0, ARGV[1])\n"
    "if free then\n"
    RL__FAIR_WAKE("ARGV[2]", "ARGV[3]")
    "end\n"
    "return 1\n";

/* ---- the read-write lock (src/rwlock.c says how its one key is kept) --
 *
 * Layout RL__RW_LAYOUT (rlock_int.h). Fields of the lock hash besides the
 * holds, all beginning with '~': "~d:<field>", a hold's deadline (Redis
 * TIME, ms); "~n", how many holds the hash has (each with its deadline);
 * "~w", the write hold's field; "~wi", the waiting writers' intents,
 * "<field> <deadline>" pairs joined by spaces; "~s", the sweep of dead
 * holds (below). Everything lives in the one key, so that the scripts
 * touch no key they have not declared: in Cluster, a slot migrating moves
 * the lock whole, and a script never meets a key that has left (Redis:
 * "non local key"). A script never touches the key after a change that
 * may have deleted it (an HDEL), for the same reason.
 *
 * A reader's new hold and every release and renewal read a few fields
 * only; a writer's new hold beside other holds, and anything that finds
 * the hash not as "~n" says (a hold past its deadline, a plain owner, a
 * lock-delay), read it whole (O(fields)) and put it right.
 *
 * The sweep drops the holds past their deadline that nobody reads whole
 * (readers that died, on a name no writer asks for), a few fields per
 * call: "~s" is "<cursor> <t>". Cursor 0 (none running): no hold's
 * deadline is before t, and none needs looking at until then. Else the
 * HSCAN cursor of a sweep under way, and t the earliest deadline it has
 * seen (or a hold taken since it began has), if any. Once t has passed,
 * every reader's new hold, release and renewal reads the next
 * RL__RW_SWEEP_STEP fields from the cursor and drops the holds among them
 * past their deadline, until the cursor comes back to 0; then t is the
 * earliest live deadline again. A dead hold is dropped by the end of the
 * sweep under way at its deadline or of the next one: within two sweeps,
 * about 2 x HLEN / RL__RW_SWEEP_STEP calls on the name after its deadline
 * (a sweep is one call while Redis keeps the hash as a listpack, up to 512
 * fields, whose HSCAN reads it whole), whoever makes them. A call pays for
 * those fields more, and only while a sweep is due: live holds renewed
 * every third of their lease start one every two thirds of a lease at
 * most.
 */

/* The time (read before any write: effects replication, the default from
 * Redis 5, asked for explicitly for older servers); a hold's deadline
 * field; the key's expiry, made at least ms and never shortened; the live
 * intents of a "~wi" value (a flat list of field, deadline) and the latest
 * deadline among them; such a list joined again, without `skip`; a number
 * as Redis stores it. */
#define RL__RW_PRELUDE \
    "redis.replicate_commands()\n" \
    "local t = redis.call('time')\n" \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n" \
    "local function dl(f) return '~d:' .. f end\n" \
    "local function num(x) return string.format('%d', x) end\n" \
    "local function keep(k, ms)\n" \
    "  if redis.call('pttl', k) < ms then redis.call('pexpire', k, ms) end\n" \
    "end\n" \
    "local function intents(str)\n" \
    "  local out, latest = {}, nil\n" \
    "  for g, x in string.gmatch(str or '', '(%S+) (%d+)') do\n" \
    "    x = tonumber(x)\n" \
    "    if x > now then\n" \
    "      out[#out + 1], out[#out + 2] = g, x\n" \
    "      if not latest or x > latest then latest = x end\n" \
    "    end\n" \
    "  end\n" \
    "  return out, latest\n" \
    "end\n" \
    "local function joined(list, skip)\n" \
    "  local out = {}\n" \
    "  for i = 1, #list, 2 do\n" \
    "    if list[i] ~= skip then out[#out + 1] = list[i] .. ' ' .. num(list[i + 1]) end\n" \
    "  end\n" \
    "  return table.concat(out, ' ')\n" \
    "end\n"

/* One step of the sweep of hash k whose "~s" is sv (nil: none, as in a
 * hash of no holds), w the writer's mark, skip the caller's own field
 * (the caller drops it if it is past its deadline). Reads only: nil when
 * no sweep is due, else sw.gone, the fields to drop (holds past their
 * deadline and those deadlines); sw.held, how many of them "~n" counts;
 * sw.writer, whether w is among them; sw.state, "~s" after the step.
 * sweep_in(sv, x, n): "~s" once a hold with deadline x is taken beside n
 * holds. */
#define RL__RW_SWEEP \
    "local function sweep(k, sv, w, skip)\n" \
    "  local cur, t = string.match(sv or '', '^(%d+) ?(%d*)$')\n" \
    "  t = tonumber(t)\n" \
    "  if cur == '0' and t and t > now then return nil end\n" \
    "  if cur == nil or cur == '0' then cur, t = '0', nil end\n" \
    "  local r = redis.call('hscan', k, cur, 'COUNT', " RL__STR(RL__RW_SWEEP_STEP) ")\n" \
    "  local sw, dead = {gone = {}, held = 0}, {}\n" \
    "  for i = 1, #r[2], 2 do\n" \
    "    if string.sub(r[2][i], 1, 3) == '~d:' then\n" \
    "      local x = tonumber(r[2][i + 1]) or 0\n" \
    "      local h = string.sub(r[2][i], 4)\n" \
    "      if x <= now then\n" \
    "        if h ~= skip then dead[#dead + 1] = h end\n" \
    "      elseif not t or x < t then t = x end\n" \
    "    end\n" \
    "  end\n" \
    "  if #dead > 0 then\n" \
    "    local v = redis.call('hmget', k, unpack(dead))\n" \
    "    for i, h in ipairs(dead) do\n" \
    "      if v[i] then sw.held = sw.held + 1 end\n" \
    "      if h == w then sw.writer = true end\n" \
    "      sw.gone[#sw.gone + 1], sw.gone[#sw.gone + 2] = h, dl(h)\n" \
    "    end\n" \
    "  end\n" \
    "  sw.state = r[1] .. (t and ' ' .. num(t) or '')\n" \
    "  return sw\n" \
    "end\n" \
    "local function sweep_in(sv, x, n)\n" \
    "  local cur, t = string.match(sv or '', '^(%d+) ?(%d*)$')\n" \
    /* No "~s" beside other holds: not ours to vouch for them, let a sweep run. */ \
    "  if not cur then return n == 0 and '0 ' .. num(x) or '0' end\n" \
    "  t = tonumber(t)\n" \
    "  if cur == '0' and not t then return n == 0 and '0 ' .. num(x) or '0' end\n" \
    "  return cur .. ' ' .. num(t and math.min(t, x) or x)\n" \
    "end\n"

/* The hash k read whole, but for the caller's own field `mine` and its
 * deadline, w the writer's mark: s.n the holds with a deadline it leaves
 * (live ones, and dead ones past the cap below), s.live[field], s.writer
 * the write hold among them (or a plain owner), s.soonest the first
 * deadline that may end one (s.undated: a hold without one, a plain lock's
 * owner, which lasts as the key does), s.delay a plain holder's
 * lock-delay; s.dead, the fields to drop: holds past their deadline,
 * deadlines without a hold (a thousand a call at most: HDEL takes them as
 * arguments; s.stale: dead holds were left). nil when the hash is not of
 * layout RL__RW_LAYOUT: a '~' field it does not have, or a live write hold
 * without its mark. */
#define RL__RW_SCAN \
    "local function scan(k, mine, w)\n" \
    "  local all = redis.call('hgetall', k)\n" \
    "  local s, dates, holds = {n = 0, owners = 0, live = {}, dead = {}}, {}, {}\n" \
    "  local ours = {['~n'] = true, ['~w'] = true, ['~wi'] = true, ['~s'] = true}\n" \
    "  local function drop(g) if #s.dead < 1000 then s.dead[#s.dead + 1] = g end end\n" \
    "  for i = 1, #all, 2 do\n" \
    "    local g = all[i]\n" \
    "    if g == mine or g == dl(mine) then\n" \
    "    elseif string.sub(g, 1, 3) == '~d:' then\n" \
    "      dates[string.sub(g, 4)] = tonumber(all[i + 1]) or 0\n" \
    "    elseif g == " RL__DELAY_FIELD " then\n" \
    "      s.delay = true\n" \
    "    elseif string.sub(g, 1, 1) ~= '~' then\n" \
    "      holds[#holds + 1] = g\n" \
    "    elseif not ours[g] then\n" \
    "      return nil\n" \
    "    end\n" \
    "  end\n" \
    "  for _, g in ipairs(holds) do\n" \
    "    local x = dates[g]\n" \
    "    dates[g] = nil\n" \
    "    if x and x <= now then\n" \
    "      if #s.dead + 2 <= 1000 then\n" \
    "        s.dead[#s.dead + 1], s.dead[#s.dead + 2] = g, dl(g)\n" \
    "      else\n" \
    /* Left for a later look: still in the hash, still counted. */ \
    "        s.n, s.stale = s.n + 1, true\n" \
    "      end\n" \
    "    else\n" \
    "      s.owners = s.owners + 1\n" \
    "      s.live[g] = true\n" \
    "      if string.sub(g, -2) ~= ':r' then\n" \
    "        if x and g ~= w then return nil end\n" \
    "        s.writer = g\n" \
    "      end\n" \
    "      if not x then s.undated = true\n" \
    "      else\n" \
    "        s.n = s.n + 1\n" \
    "        if not s.soonest or x < s.soonest then s.soonest = x end\n" \
    "      end\n" \
    "    end\n" \
    "  end\n" \
    "  for g in pairs(dates) do drop(dl(g)) end\n" \
    "  return s\n" \
    "end\n"

/* KEYS[1] lock; ARGV lease_ms, field, held, since, side ('r' or 'w'),
 * intent_ms (a writer that will wait: register its intent for that long;
 * 0: none). Replies as the plain acquire: {1, count}, {0, wait_ms},
 * {-1, 0}, {-2, count}; an error, nothing written, for a hash not of
 * layout RL__RW_LAYOUT. */
static const char rw_acquire_src[] =
    RL__LEASE_CHECK("ARGV[1]", 1)
    /* The intent too, before anything is written: an HSET of it followed
     * by a PEXPIRE that fails would leave it, stopping readers for good. */
    "local intent = tonumber(ARGV[6]) or 0\n"
    "if intent ~= math.floor(intent) or intent < 0 or intent > 2147483647 then\n"
    "  return redis.error_reply('ERR rlock: intent out of range')\n"
    "end\n"
    RL__RW_PRELUDE
    RL__RW_SWEEP
    RL__RW_SCAN
    "local k, f, held, side = KEYS[1], ARGV[2], tonumber(ARGV[3]), ARGV[5]\n"
    "if held > 0 then\n"
    "  local got = redis.call('hmget', k, f, dl(f))\n"
    "  local v, d = got[1], tonumber(got[2])\n"
    "  if not v or (d and d <= now) then return {-1, 0} end\n"
    "  local n = " RL__COUNT("v") "\n"
    "  if n ~= held then return {-2, n or -1} end\n"
    "  redis.call('hset', k, f, (n + 1) .. " RL__SUFFIX("v") ", dl(f), math.max(d or 0, now + lease))\n"
    "  keep(k, lease)\n"
    "  return {1, n + 1}\n"
    "end\n"
    "local g = redis.call('hmget', k, '~n', '~w', '~wi', " RL__DELAY_FIELD ", '~s', f, dl(f))\n"
    "local n, w, wi, state, d = tonumber(g[1]) or 0, g[2], g[3], g[5], tonumber(g[7])\n"
    "local fields = 2 * n\n"
    "for i = 1, 5 do if g[i] then fields = fields + 1 end end\n"
    /* Ours already (an acquire reported failed but applied late): taken. */
    "local mine = g[6] and d and d > now\n"
    /* The hash as "~n" says, with no hold of ours past its deadline. */
    "local known = not g[4] and not (g[6] and not mine) and redis.call('hlen', k) == fields\n"
    "local wait, s, gone = nil, nil, {}\n"
    "if mine then\n"
    "elseif known and side == 'w' and n == 0 then\n"
    "elseif known and side == 'r' then\n"
    /* Our own thread's write hold lets it read, intents or not, while it
     * lasts; a mark whose hold ran out sends us to the whole look. */
    "  if w then\n"
    "    local x = redis.call('hmget', k, w, dl(w))\n"
    "    x = x[1] and tonumber(x[2])\n"
    "    if not (x and x > now) then known = false\n"
    "    elseif w .. ':r' ~= f then wait = x - now end\n"
    "  else\n"
    /* A waiting writer goes first: readers wait for its intent. */
    "    local _, latest = intents(wi)\n"
    "    if latest then wait = latest - now end\n"
    "  end\n"
    /* The writer, if any, is live: the sweep never drops it here. */
    "  local sw = known and sweep(k, state, w)\n"
    "  if sw then n, state, gone = n - sw.held, sw.state, sw.gone end\n"
    "else\n"
    "  known = false\n"
    "end\n"
    "if not known and not mine then\n"
    "  s = scan(k, f, w)\n"
    "  if not s then\n"
    "    return redis.error_reply('ERR rlock: not a read-write lock of layout "
    RL__STR(RL__RW_LAYOUT) "')\n"
    "  end\n"
    /* The sweep starts afresh from what the look saw (at once, when it
     * left dead holds). */
    "  n, gone = s.n, s.dead\n"
    "  state = s.stale and '0' or s.soonest and '0 ' .. num(s.soonest)\n"
    "  local first = s.soonest and s.soonest - now\n"
    "  if s.undated then first = redis.call('pttl', k) end\n"
    "  local own = s.writer and s.writer .. ':r' == f\n"
    "  if s.delay then\n"
    "    wait = redis.call('pttl', k)\n"
    "  elseif side == 'w' then\n"
    "    if s.owners > 0 then wait = first end\n"
    "  elseif s.writer and not own then\n"
    "    wait = first\n"
    "  elseif not own then\n"
    "    local _, latest = intents(wi)\n"
    "    if latest then wait = latest - now end\n"
    "  end\n"
    /* Put right what the look found: holds past their deadline (ours, if
     * it has one left, included), a writer's mark gone stale. */
    "  if g[6] then gone[#gone + 1], gone[#gone + 2] = f, dl(f) end\n"
    "  if w and not s.live[w] then gone[#gone + 1] = '~w' end\n"
    "end\n"
    /* Fields to set (name, value pairs), then fields to delete: the delete
     * comes last, and leaves alone what was just set. */
    "local put = {}\n"
    "local function commit()\n"
    "  local set, del = {}, {}\n"
    "  for i = 1, #put, 2 do set[put[i]] = true end\n"
    "  for _, x in ipairs(gone) do if not set[x] then del[#del + 1] = x end end\n"
    "  if #put > 0 then redis.call('hset', k, unpack(put)) end\n"
    "  return del\n"
    "end\n"
    "if wait then\n"
    /* Beside read-write holds only. A plain holder's key (its owner, or
     * its lock-delay) lasts as that holder's lease: an intent's expiry
     * would lengthen it, keeping a dead holder's lock for as long as a
     * writer waits, and a field more would keep the plain release from
     * seeing itself the last (it counts the fields) and announcing it. */
    "  local register = s and side == 'w' and intent > 0 and not s.undated and not s.delay\n"
    "  if register then\n"
    "    local rest = joined(intents(wi), f)\n"
    "    put[1] = '~wi'\n"
    "    put[2] = (rest ~= '' and rest .. ' ' or '') .. f .. ' ' .. num(now + intent)\n"
    "  end\n"
    "  if n > 0 then\n"
    "    if n ~= tonumber(g[1]) then put[#put + 1], put[#put + 2] = '~n', n end\n"
    "    if state and state ~= g[5] then put[#put + 1], put[#put + 2] = '~s', state end\n"
    "  else\n"
    "    if g[1] then gone[#gone + 1] = '~n' end\n"
    "    if g[5] then gone[#gone + 1] = '~s' end\n"
    "  end\n"
    "  local del = commit()\n"
    "  if register then keep(k, intent) end\n"
    /* The key keeps a live field: what made us wait. */
    "  if #del > 0 then redis.call('hdel', k, unpack(del)) end\n"
    /* A deadline's wait is > 0; a plain holder's is its PTTL, -1 when the
     * key has no expiry (not set by rlock): the client then waits a lease,
     * as for the plain acquire, rather than ask again every millisecond. */
    "  return {0, wait}\n"
    "end\n"
    "put = {f, '1 ' .. ARGV[4], dl(f), now + lease, '~n', mine and n or n + 1,\n"
    "       '~s', sweep_in(state, now + lease, mine and n - 1 or n)}\n"
    "if side == 'w' then\n"
    "  put[9], put[10] = '~w', f\n"
    "  local rest = joined(intents(wi), f)\n"
    "  if rest ~= '' then put[11], put[12] = '~wi', rest\n"
    "  elseif wi then gone[#gone + 1] = '~wi' end\n"
    "end\n"
    "local del = commit()\n"
    "keep(k, lease)\n"
    "if #del > 0 then redis.call('hdel', k, unpack(del)) end\n"
    "return {1, 1}\n";

/* KEYS[1] lock; ARGV as the plain release: field, held (0: drop the whole
 * field), lease_ms (0: leave the lease alone), the notice and the release
 * channel. A notice goes out when the last hold leaves, and when a writer
 * leaves (readers may enter beside its thread's read hold) or is swept
 * away. A hold past its deadline is gone, as an expired key is. The field
 * "~wi:<writer's field>" takes that writer's intent back (it gave up
 * waiting): readers are told, unless a writer holds. */
static const char rw_release_src[] =
    RL__LEASE_CHECK("ARGV[3]", 0)
    RL__RW_PRELUDE
    RL__RW_SWEEP
    "local k, f = KEYS[1], ARGV[1]\n"
    "local notice = ARGV[4] and ARGV[4] ~= '0'\n"
    "if string.sub(f, 1, 4) == '~wi:' then\n"
    "  local me = string.sub(f, 5)\n"
    "  local g = redis.call('hmget', k, '~wi', '~w')\n"
    "  local list = intents(g[1])\n"
    "  local rest, had = joined(list, me), false\n"
    "  for i = 1, #list, 2 do if list[i] == me then had = true end end\n"
    /* Whether a writer holds is asked before a delete that may take the key. */
    "  local writing = g[2] and (tonumber(redis.call('hmget', k, g[2], dl(g[2]))[2]) or 0) > now\n"
    "  if rest ~= '' then redis.call('hset', k, '~wi', rest)\n"
    "  elseif g[1] then redis.call('hdel', k, '~wi') end\n"
    "  if had and notice and not writing then\n"
    RL__NOTICE("ARGV[4]", "ARGV[5]")
    "  end\n"
    "  return {1, 0}\n"
    "end\n"
    "local got = redis.call('hmget', k, f, dl(f), '~n', '~w', '~s')\n"
    "local v, d, holds = got[1], tonumber(got[2]), tonumber(got[3]) or 1\n"
    "if not v then return {-1, 0} end\n"
    "local sw = sweep(k, got[5], got[4], f) or {gone = {}, held = 0}\n"
    "local left = holds - sw.held\n"
    "if sw.writer then sw.gone[#sw.gone + 1] = '~w' end\n"
    /* f's hold stays with count c, or leaves (c 0); the count of holds,
     * the sweep and the writer's mark follow. The delete comes last, and
     * may take the key. */
    "local function done(c)\n"
    "  local put, gone = {}, sw.gone\n"
    "  if c > 0 then\n"
    "    put[1], put[2] = f, c .. " RL__SUFFIX("v") "\n"
    "    if lease > 0 then put[3], put[4] = dl(f), math.max(d or 0, now + lease) end\n"
    "    left = math.max(left, 1)\n"
    "  else\n"
    "    gone[#gone + 1], gone[#gone + 2] = f, dl(f)\n"
    "    if got[4] == f then gone[#gone + 1] = '~w' end\n"
    "    left = left - 1\n"
    "  end\n"
    "  if left > 0 then\n"
    "    if left ~= holds then put[#put + 1], put[#put + 2] = '~n', left end\n"
    "    if sw.state then put[#put + 1], put[#put + 2] = '~s', sw.state end\n"
    "  else\n"
    "    gone[#gone + 1], gone[#gone + 2] = '~n', '~s'\n"
    "  end\n"
    "  if #put > 0 then redis.call('hset', k, unpack(put)) end\n"
    "  if c > 0 and lease > 0 then keep(k, lease) end\n"
    "  if #gone > 0 then redis.call('hdel', k, unpack(gone)) end\n"
    "end\n"
    "if d and d <= now then\n"
    "  done(0)\n"
    "  return {-1, 0}\n"
    "end\n"
    RL__RELEASE_COUNT
    "done(n)\n"
    /* The last hold counted left, or a writer (readers may enter). */
    "if notice and (sw.writer or (n == 0 and (left <= 0 or string.sub(f, -2) ~= ':r'))) then\n"
    RL__NOTICE("ARGV[4]", "ARGV[5]")
    "end\n"
    "return {1, n}\n";

/* As the plain renew (KEYS lock1..N; ARGV lease_ms, field1..fieldN; one
 * '1' or '0' per pair), moving each hold's own deadline too, and a step of
 * the sweep where one is due. A hold past its deadline is gone, as an
 * expired key is. */
static const char rw_renew_src[] =
    RL__LEASE_CHECK("ARGV[1]", 1)
    RL__RW_PRELUDE
    RL__RW_SWEEP
    "local out = {}\n"
    "for i = 1, #KEYS do\n"
    "  local k, f = KEYS[i], ARGV[i + 1]\n"
    "  local r = redis.pcall('hmget', k, f, dl(f), '~n', '~w', '~s')\n"
    "  local d = type(r) == 'table' and tonumber(r[2])\n"
    "  if type(r) == 'table' and r[1] and not (d and d <= now) then\n"
    /* Ours is live: whatever the sweep drops, the key stays. */
    "    local sw, put = sweep(k, r[5], r[4]), {}\n"
    "    if not d or d < now + lease then put[1], put[2] = dl(f), now + lease end\n"
    "    if sw then\n"
    "      put[#put + 1], put[#put + 2] = '~s', sw.state\n"
    "      if sw.held > 0 and tonumber(r[3]) then\n"
    "        put[#put + 1], put[#put + 2] = '~n', math.max(tonumber(r[3]) - sw.held, 1)\n"
    "      end\n"
    "      if sw.writer then sw.gone[#sw.gone + 1] = '~w' end\n"
    "    end\n"
    "    if #put > 0 then redis.call('hset', k, unpack(put)) end\n"
    "    keep(k, lease)\n"
    "    if sw and #sw.gone > 0 then redis.call('hdel', k, unpack(sw.gone)) end\n"
    "    out[i] = '1'\n"
    "  else\n"
    "    out[i] = '0'\n"
    "  end\n"
    "end\n"
    "return table.concat(out)\n";

const char *const rl__script_src[RL__S_COUNT] = {
    acquire_src, release_src, renew_src, force_src,
    fair_acquire_src, fair_release_src, fair_leave_src,
    rw_acquire_src, rw_release_src, rw_renew_src,
};
