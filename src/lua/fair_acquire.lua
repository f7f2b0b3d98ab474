-- fair_acquire.lua: take a fair lock in order of arrival, or queue for it.
--
-- KEYS[1]  the lock; KEYS[2] its queue; KEYS[3] its places
--          (lib/fair_look.lua)
-- ARGV[1]  lease_ms
-- ARGV[2]  owner
-- ARGV[3]  held (0: the fair scripts take new holds only; reentry is the
--          plain acquire.lua's)
-- ARGV[4]  since (may be left out)
-- ARGV[5]  place_ms: how long the caller's place in the queue lasts
--          unless renewed (0: take it if free and nobody waits, but do not
--          queue)
--
-- Takes the name when it is free and the caller is the first waiter (or
-- none waits); else queues the caller (once: a repeat only renews its
-- place) and reports how long to wait.
--
-- Reply: {1, 1} taken; {0, wait_ms} not taken: the holder's PTTL, or the
-- time the first waiter's place has left; an error, nothing written, for a
-- lease out of range.
--
-- Never: touches a key after a command that may have deleted it (every
-- read first; the queue's writes in one go, its ZREMs last; the lock is
-- only ever added to); takes the name ahead of a waiter whose place is
-- live.

--@include "lib/lease.lua"

local lease, bad = lease_arg(ARGV[1], 1)
if not lease then return bad end
local place = tonumber(ARGV[5]) or 0
--@include "lib/clock.lua"
--@include "lib/fair_look.lua"
--@include "lib/fair_settle.lua"
local wait
if redis.call('exists', KEYS[1]) == 1 then
  if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    wait = redis.call('pttl', KEYS[1])
  end
else
  local h, until_ms = head()
  if h and h ~= ARGV[2] then wait = until_ms - now end
end
if wait then
  settle(place > 0 and ARGV[2] or nil, place)
  return {0, wait}
end
redis.call('hset', KEYS[1], ARGV[2], ARGV[4] and ('1 ' .. ARGV[4]) or 1)
redis.call('pexpire', KEYS[1], lease)
settle(nil, 0, ARGV[2])
return {1, 1}
