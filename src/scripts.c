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

/* KEYS[1] lock; ARGV lease_ms, owner, held, since (the caller's
 * CLOCK_REALTIME in ms; may be left out). Few calls on the common paths:
 * Redis counts each call a script makes. */
static const char acquire_src[] =
    RL__LEASE_CHECK("ARGV[1]", 1)
    "local held = tonumber(ARGV[3])\n"
    "if held == 0 then\n"
    "  if redis.call('exists', KEYS[1]) == 1 then\n"
    /* Held: by another, or by us through an acquire that was reported
     * failed but applied late. Ours is ours: start the count afresh. */
    "    if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then\n"
    "      return {0, redis.call('pttl', KEYS[1])}\n"
    "    end\n"
    "  end\n"
    "  redis.call('hset', KEYS[1], ARGV[2], ARGV[4] and ('1 ' .. ARGV[4]) or 1)\n"
    "  redis.call('pexpire', KEYS[1], lease)\n"
    "  return {1, 1}\n"
    "end\n"
    "local v = redis.call('hget', KEYS[1], ARGV[2])\n"
    "if not v then return {-1, 0} end\n"
    "local n = " RL__COUNT("v") "\n"
    "if n ~= held then return {-2, n or -1} end\n"
    "redis.call('hset', KEYS[1], ARGV[2], (n + 1) .. " RL__SUFFIX("v") ")\n"
    "redis.call('pexpire', KEYS[1], lease)\n"
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

/* KEYS[1] lock; ARGV owner, held (0: drop the whole field), lease_ms (0:
 * leave the expiry alone), the notice and the release channel (see
 * RL__NOTICE; both may be left out for no notice). Only our own field is
 * ever removed: the lock is deleted only when no other field is left. */
static const char release_src[] =
    RL__LEASE_CHECK("ARGV[3]", 0)
    "local v = redis.call('hget', KEYS[1], ARGV[1])\n"
    "if not v then\n"
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
    /* Whether ours is the last field is asked before the delete: once the
     * key is gone, a script may not touch it again while its slot migrates
     * (Redis: "non local key"), and the delete would then be reported as
     * an error. */
    "local last = redis.call('hlen', KEYS[1]) == 1\n"
    "redis.call('hdel', KEYS[1], ARGV[1])\n"
    "if last and ARGV[4] ~= '0' then\n"
    RL__NOTICE("ARGV[4]", "ARGV[5]")
    "end\n"
    "return {1, 0}\n";

/* For each (KEYS[i], ARGV[i + 1]) pair: `renew` where the field is there
 * ('1'), else '0'; the flags joined. A key of the wrong type counts as
 * gone and does not stop the others. */
#define RL__RENEW_EACH(renew) \
    "local out = {}\n" \
    "for i = 1, #KEYS do\n" \
    "  local r = redis.pcall('hexists', KEYS[i], ARGV[i + 1])\n" \
    "  if r == 1 then\n" \
    renew \
    "    out[i] = '1'\n" \
    "  else\n" \
    "    out[i] = '0'\n" \
    "  end\n" \
    "end\n" \
    "return table.concat(out)\n"

/* KEYS lock1..lockN; ARGV lease_ms, owner1..ownerN. Returns one '1' (still
 * held, lease renewed) or '0' (gone) per pair. */
static const char renew_src[] =
    RL__LEASE_CHECK("ARGV[1]", 1)
    /* Never shorten. (The client never sends a renewal that could land on
     * a newer hold of the same owner: see the watchdog.) */
    RL__RENEW_EACH("    if redis.call('pttl', KEYS[i]) < lease then\n"
                   "      redis.call('pexpire', KEYS[i], lease)\n"
                   "    end\n");

/* KEYS[1] lock; ARGV[1] "<our uuid>:", the notice and the release channel
 * (see RL__NOTICE). Deletes
 * the lock and reports the thread ids of our own fields it removed, so
 * that exactly those holds are flagged, however the delete interleaved
 * with our own acquisitions: {1, n, tid1..tidn}, or {1, -1} when there
 * were too many to list (then every local hold of the name is flagged). */
static const char force_src[] =
    "if redis.call('type', KEYS[1]).ok ~= 'hash' then\n"
    "  if redis.call('exists', KEYS[1]) == 1 then\n"
    "    return redis.error_reply('WRONGTYPE key is not an rlock hash')\n"
    "  end\n"
    "  return {1, 0}\n"
    "end\n"
    "local out = {1, 0}\n"
    "local plen = #ARGV[1]\n"
    "for _, f in ipairs(redis.call('hkeys', KEYS[1])) do\n"
    "  if string.sub(f, 1, plen) == ARGV[1] then\n"
    "    local tid = tonumber(string.sub(f, plen + 1))\n"
    "    if tid then\n"
    "      out[2] = out[2] + 1\n"
    "      out[#out + 1] = tid\n"
    "    end\n"
    "  end\n"
    "end\n"
    "if out[2] > " RL__STR(RL__FORCE_TIDS) " then out = {1, -1} end\n"
    "redis.call('del', KEYS[1])\n"
    RL__NOTICE("ARGV[2]", "ARGV[3]")
    "return out\n";

/* ---- the read-write lock (src/rwlock.c says how its keys are kept) ---- */

/* Shared by the three scripts: the time (read before any write: effects
 * replication, the default from Redis 5, asked for explicitly for older
 * servers), the lease of one field (its deadline, and the keys' expiry,
 * never shortened). */
#define RL__RW_PRELUDE \
    "redis.replicate_commands()\n" \
    "local t = redis.call('time')\n" \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n" \
    "local function extend(k, f, lease)\n" \
    "  local rd = k .. ':rd'\n" \
    "  local d = tonumber(redis.call('zscore', rd, f))\n" \
    "  if not d or d < now + lease then redis.call('zadd', rd, now + lease, f) end\n" \
    "  if redis.call('pttl', k) < lease then redis.call('pexpire', k, lease) end\n" \
    "  if redis.call('pttl', rd) < lease then redis.call('pexpire', rd, lease) end\n" \
    "end\n"

/* KEYS[1] lock; ARGV lease_ms, field, held, since, side ('r' or 'w'),
 * intent_ms (a writer that will wait: register its intent for that long;
 * 0: none). Replies as the plain acquire: {1, count}, {0, wait_ms},
 * {-1, 0}, {-2, count}. */
static const char rw_acquire_src[] =
    RL__LEASE_CHECK("ARGV[1]", 1)
    RL__RW_PRELUDE
    "local k, f, held = KEYS[1], ARGV[2], tonumber(ARGV[3])\n"
    "local rd, wi = k .. ':rd', k .. ':wi'\n"
    "if held > 0 then\n"
    "  local v = redis.call('hget', k, f)\n"
    "  if not v then return {-1, 0} end\n"
    "  local n = " RL__COUNT("v") "\n"
    "  if n ~= held then return {-2, n or -1} end\n"
    "  redis.call('hset', k, f, (n + 1) .. " RL__SUFFIX("v") ")\n"
    "  extend(k, f, lease)\n"
    "  return {1, n + 1}\n"
    "end\n"
    "if redis.call('exists', k) == 0 then\n"
    "  redis.call('del', rd)\n"
    "else\n"
    /* Holds whose lease has passed are gone. */
    "  local dead = redis.call('zrangebyscore', rd, '-inf', now)\n"
    "  if #dead > 0 then\n"
    "    for _, d in ipairs(dead) do redis.call('hdel', k, d) end\n"
    "    redis.call('zremrangebyscore', rd, '-inf', now)\n"
    "  end\n"
    "end\n"
    "local n = redis.call('hlen', k)\n"
    /* Ours already: an acquire reported failed but applied late. */
    "if n > 0 and redis.call('hexists', k, f) == 0 then\n"
    "  local busy = true\n"
    "  if ARGV[5] == 'r' and n <= 2 then\n"
    "    local w = nil\n"
    "    for _, g in ipairs(redis.call('hkeys', k)) do\n"
    "      if string.sub(g, -2) ~= ':r' then w = g end\n"
    "    end\n"
    /* Readers only, or our own thread holds write (it may read). */
    "    busy = w ~= nil and w .. ':r' ~= f\n"
    "    if w ~= nil and not busy then n = 0 end\n"
    "  elseif ARGV[5] == 'r' then\n"
    "    busy = false\n"
    "  end\n"
    "  if not busy and n > 0 then\n"
    "    redis.call('zremrangebyscore', wi, '-inf', now)\n"
    "    busy = redis.call('zcard', wi) > 0\n"
    "    if busy then\n"
    "      local last = redis.call('zrange', wi, -1, -1, 'withscores')\n"
    "      return {0, tonumber(last[2]) - now}\n"
    "    end\n"
    "  end\n"
    "  if busy then\n"
    "    local intent = tonumber(ARGV[6])\n"
    "    if ARGV[5] == 'w' and intent > 0 then\n"
    "      redis.call('zadd', wi, now + intent, f)\n"
    "      if redis.call('pttl', wi) < intent then redis.call('pexpire', wi, intent) end\n"
    "    end\n"
    /* Until the first lease that may end; a plain holder's: the key's. */
    "    local first = redis.call('zrange', rd, 0, 0, 'withscores')\n"
    "    if first[2] then return {0, math.max(tonumber(first[2]) - now, 0)} end\n"
    "    return {0, redis.call('pttl', k)}\n"
    "  end\n"
    "elseif n == 0 and ARGV[5] == 'r' then\n"
    /* A free lock: a waiting writer still goes first. */
    "  redis.call('zremrangebyscore', wi, '-inf', now)\n"
    "  if redis.call('zcard', wi) > 0 then\n"
    "    local last = redis.call('zrange', wi, -1, -1, 'withscores')\n"
    "    return {0, tonumber(last[2]) - now}\n"
    "  end\n"
    "end\n"
    "redis.call('hset', k, f, '1 ' .. ARGV[4])\n"
    "extend(k, f, lease)\n"
    "if ARGV[5] == 'w' then redis.call('zrem', wi, f) end\n"
    "return {1, 1}\n";

/* KEYS[1] lock; ARGV as the plain release: field, held (0: drop the whole
 * field), lease_ms (0: leave the lease alone), the notice and the release
 * channel. A notice goes out when the lock comes free, and when a writer
 * leaves (readers may enter beside its thread's read hold). */
static const char rw_release_src[] =
    RL__LEASE_CHECK("ARGV[3]", 0)
    RL__RW_PRELUDE
    "local k, f = KEYS[1], ARGV[1]\n"
    "local v = redis.call('hget', k, f)\n"
    "if not v then return {-1, 0} end\n"
    RL__RELEASE_COUNT
    "if n > 0 then\n"
    "  redis.call('hset', k, f, n .. " RL__SUFFIX("v") ")\n"
    "  if lease > 0 then extend(k, f, lease) end\n"
    "  return {1, n}\n"
    "end\n"
    /* Asked before the delete, as in the plain release. */
    "local last = redis.call('hlen', k) == 1\n"
    "redis.call('hdel', k, f)\n"
    "if last then redis.call('del', k .. ':rd') else redis.call('zrem', k .. ':rd', f) end\n"
    "if (last or string.sub(f, -2) ~= ':r') and ARGV[4] ~= '0' then\n"
    RL__NOTICE("ARGV[4]", "ARGV[5]")
    "end\n"
    "return {1, 0}\n";

/* As the plain renew (KEYS lock1..N; ARGV lease_ms, field1..fieldN; one
 * '1' or '0' per pair), moving each hold's own deadline too. */
static const char rw_renew_src[] =
    RL__LEASE_CHECK("ARGV[1]", 1)
    RL__RW_PRELUDE
    RL__RENEW_EACH("    extend(KEYS[i], ARGV[i + 1], lease)\n");

const char *const rl__script_src[RL__S_COUNT] = {
    acquire_src, release_src, renew_src, force_src,
    rw_acquire_src, rw_release_src, rw_renew_src,
};
