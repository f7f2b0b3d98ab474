-- sem_release.lua: give up one level of a semaphore hold; the last gives
-- its permits back.
--
-- KEYS[1]  the semaphore, a hash (lib/sem_fields.lua)
-- ARGV[1]  field: the owner, "<uuid>:<tid>"
-- ARGV[2]  held (0: drop the whole field)
-- ARGV[3]  lease_ms (0: leave the lease alone)
-- ARGV[4]  the notice (lib/notice.lua); may be left out, with ARGV[5]
-- ARGV[5]  the release channel
--
-- The notice's message is the number of permits the release gave back, so
-- that a waiter for more than that may sleep on. A hold past its deadline
-- is gone, as an expired key is (its fields are dropped, no notice: its
-- permits were free already).
--
-- Reply: {1, count} released, count the holds left of the field (0: it
-- went); {-1, 0} not ours (gone, or past its deadline: then dropped);
-- {-2, count} ours with another count, nothing changed; an error, nothing
-- written, for a lease out of range.
--
-- Never: touches the key after a command that may have deleted it (the
-- HDEL or DEL comes last); touches a key it has not declared.

--@include "lib/lease.lua"
--@include "lib/released.lua"

local lease, bad = lease_arg(ARGV[3], 0)
if not lease then return bad end
--@include "lib/sem_fields.lua"
--@include "lib/sem_permits.lua"
--@include "lib/notice.lua"

local k, f = KEYS[1], ARGV[1]
local got = redis.call('hmget', k, f, dl(f), pk(f), '~N')
local v, d = got[1], tonumber(got[2])
if not v then return {-1, 0} end
-- The hold's fields go; the key with them when nothing but "~N" is left.
local function drop()
  local ours = 1
  if got[2] then ours = ours + 1 end
  if got[3] then ours = ours + 1 end
  if got[4] and redis.call('hlen', k) == ours + 1 then
    redis.call('del', k)
  else
    redis.call('hdel', k, f, dl(f), pk(f))
  end
end
-- A hold without a deadline (the key's expiry is its) asks no clock.
if d and d <= tick() then
  drop()
  return {-1, 0}
end
local n, found = released(v, tonumber(ARGV[2]))
if not n then return {-2, found} end
if n > 0 then
  if lease > 0 then
    local x = tick() + lease
    redis.call('hset', k, f, n .. suffix(v), dl(f), num(math.max(deadline(k, d), x)))
    keep(k, lease)
  else
    redis.call('hset', k, f, n .. suffix(v))
  end
  return {1, n}
end
drop()
if ARGV[4] then notice(ARGV[4], ARGV[5], got[3] or '1') end
return {1, 0}
