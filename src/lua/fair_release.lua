-- fair_release.lua: give up one hold of a fair lock, waking the next
-- waiter's process only.
--
-- KEYS[1]  the lock; KEYS[2] its queue; KEYS[3] its places
--          (lib/fair_look.lua)
-- ARGV[1]  owner
-- ARGV[2]  held (0: drop the whole field)
-- ARGV[3]  lease_ms (0: leave the expiry alone)
-- ARGV[4]  the notice (lib/notice.lua); may be left out, with ARGV[5]
-- ARGV[5]  the release channel
-- ARGV[6]  optional: the next owner, a thread of this process that waits
--          next, queued by this same call (saving it its own queueing try:
--          it is the one woken when nobody else waits)
-- ARGV[7]  its place_ms (without it, ARGV[6] is ignored)
--
-- ARGV[6] may be ARGV[1] itself: a waiter's grant whose reply was lost
-- and could not be read back, given back while that waiter still waits
-- (outcome.c, the leftovers' drop). It was the first waiter when it was
-- granted, and goes back to the head of the queue, woken as the head.
--
-- As release.lua, but the last release wakes the first waiter's process
-- only (lib/fair_wake.lua), and the caller's place, if it still has one,
-- goes too.
--
-- Reply: {1, count} released, count the holds left (0: the field went);
-- {-1, 0} not ours; {-2, count} ours with another count, nothing changed;
-- an error, nothing written, for a lease out of range.
--
-- Never: touches a key after a command that may have deleted it: the queue
-- is settled first, and the HDEL of our field, which may take the lock,
-- comes last of all but the notice; removes another owner's field.

--@include "lib/lease.lua"
--@include "lib/released.lua"

local lease, bad = lease_arg(ARGV[3], 0)
if not lease then return bad end
--@include "lib/clock.lua"
local v = redis.call('hget', KEYS[1], ARGV[1])
if not v then return {-1, 0} end
-- One hold of ARGV[1] goes: a count left is written back and ends the
-- script; else `last` says whether the field, which the script deletes
-- last of all, is the lock's last.
local n, found = released(v, tonumber(ARGV[2]))
if not n then return {-2, found} end
if n > 0 then
  redis.call('hset', KEYS[1], ARGV[1], n .. suffix(v))
  if lease > 0 then redis.call('pexpire', KEYS[1], lease) end
  return {1, n}
end
local last = redis.call('hlen', KEYS[1]) == 1
--@include "lib/fair_look.lua"
--@include "lib/fair_settle.lua"
--@include "lib/fair_wake.lua"
local nxt, nplace = ARGV[6], tonumber(ARGV[7])
if not nplace then nxt = nil end
local back = nxt == ARGV[1]
local h
if last and ARGV[4] and ARGV[4] ~= '0' then
  h = back and nxt or head(ARGV[1]) or nxt
end
settle(nxt, nplace, ARGV[1], back)
redis.call('hdel', KEYS[1], ARGV[1])
if last and ARGV[4] and ARGV[4] ~= '0' then
  wake(h, ARGV[4], ARGV[5])
end
return {1, 0}
