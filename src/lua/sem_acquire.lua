-- sem_acquire.lua: take k permits of a semaphore, or enter a hold of them
-- again.
--
-- KEYS[1]  the semaphore, a hash (lib/sem_fields.lua)
-- ARGV[1]  lease_ms
-- ARGV[2]  field: the owner, "<uuid>:<tid>"
-- ARGV[3]  held (0: a new hold)
-- ARGV[4]  since
-- ARGV[5]  N, the permit count the caller opened the name with
-- ARGV[6]  k, the permits a new hold takes (1..N)
-- KEYS[2]  the fence key, declared only by a client with fencing on a new
--          hold (lib/sem_slots.lua): the hold takes a token and k slots
--
-- Reply, as acquire.lua's: {1, count} taken (a fenced new hold: {1, 1,
-- token, slot...}); {0, wait_ms, short} not
-- taken for want of permits, short of them (1 or more: a waiter sleeps
-- through release notices that give back fewer), wait_ms the first live
-- deadline; {0, wait_ms} not taken, the key's PTTL, when another kind of
-- lock holds the name; {-1, 0} not ours (a reentry whose hold is gone); {-2, count}
-- ours with another count, nothing changed. An error, nothing written, for
-- a lease or a permit count out of range, and for an N other than the one
-- the live holds were taken with ("ERR rlock: the semaphore has <n>
-- permits in Redis, not <N>").
--
-- Never: writes before its arguments are checked; touches the key after a
-- command that may have deleted it (its HDEL comes last, and leaves "~N");
-- takes permits beyond N among live holds; touches a key it has not
-- declared.

--@include "lib/lease.lua"
--@include "lib/hold_value.lua"

local lease, bad = lease_arg(ARGV[1], 1)
if not lease then return bad end
local size, want = tonumber(ARGV[5]), tonumber(ARGV[6])
if not size or size ~= math.floor(size) or size < 1 or size > 2147483647 or
   not want or want ~= math.floor(want) or want < 1 or want > size then
  return redis.error_reply('ERR rlock: permits out of range')
end
--@include "lib/sem_look.lua"
--@include "lib/hold_reenter.lua"

local k, f, held = KEYS[1], ARGV[2], tonumber(ARGV[3])
if held == 0 and not KEYS[2] and redis.call('exists', k) == 0 then
  -- A free name: the hold alone in a new key, the key's expiry its
  -- deadline (lib/sem_fields.lua), "~k:" only for more than one permit.
  -- No clock, no look: the uncontended case costs what a lock's does.
  -- (A fenced hold takes the path below: a token and its slots.)
  if want > 1 then
    redis.call('hset', k, f, '1 ' .. ARGV[4], '~N', num(size), pk(f), num(want))
  else
    redis.call('hset', k, f, '1 ' .. ARGV[4], '~N', num(size))
  end
  redis.call('pexpire', k, lease)
  return {1, 1}
end
tick()
if held > 0 then return reenter(k, f, held) end
local s = look(k, f)
if not s then return {0, redis.call('pttl', k)} end
-- The count is the live holds' while there are any; else the caller's.
if s.size and s.size ~= size and s.used > 0 then
  return redis.error_reply('ERR rlock: the semaphore has ' .. num(s.size) ..
                           ' permits in Redis, not ' .. num(size))
end
if s.used + want > size then
  -- Asked before the HDEL (which leaves "~N", but a question after a
  -- delete is what the rule forbids).
  local wait = s.soonest and s.soonest - now or redis.call('pttl', k)
  if #s.dead > 0 then redis.call('hdel', k, unpack(s.dead)) end
  return {0, wait, s.used + want - size}
end
-- Ours already (an acquire reported failed but applied late) is taken
-- afresh: its permits were left out of s.used. A hold without a deadline
-- is given the key's expiry as one before keep() moves it.
local fenced, tail = nil, ''
if KEYS[2] then
  -- Fencing per permit: its functions made only here, so that an
  -- unfenced hold pays for none of them.
--@include "lib/sem_slots.lua"
  fenced, tail = fence_hold(KEYS[2], s.all, f, want, size)
  if not fenced then return tail end
end
local w = {f, '1 ' .. ARGV[4] .. tail, dl(f), num(now + lease), pk(f), num(want), '~N', num(size)}
local left = #s.undated > 0 and redis.call('pttl', k) or -1
for _, g in ipairs(left >= 0 and s.undated or {}) do
  w[#w + 1], w[#w + 2] = dl(g), num(now + left)
end
redis.call('hset', k, unpack(w))
keep(k, lease)
if #s.dead > 0 then redis.call('hdel', k, unpack(s.dead)) end
if fenced then return {1, 1, fenced[1], unpack(fenced[2])} end
return {1, 1}
