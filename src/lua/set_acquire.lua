-- set_acquire.lua: take several plain locks of one server and slot at
-- once, all or none (a set: src/lockset_one.c), or enter again those the
-- caller already holds.
--
-- KEYS[1..n] the locks (hashes of owner -> hold value: lib/hold_value.lua),
--            in the set's order
-- ARGV[1]    lease_ms (one for every member)
-- ARGV[2]    owner, "<uuid>:<tid>"
-- ARGV[3]    since: the caller's CLOCK_REALTIME in ms, for the new holds
-- ARGV[4]    delay_ms: lock-delay ('0': none; lib/delay.lua)
-- ARGV[4+i]  held_i: the count the caller believes it holds of KEYS[i]
--            (0: a new hold)
--
-- Reply: {1} every member taken (count 1, or held_i + 1 on reentry);
-- {0, i, pttl} member i held by another or blocked by a delay; {-1, i}
-- member i not ours (a reentry whose hold is gone); {-2, i, count} member
-- i ours with another count than the caller's. Only {1} wrote anything.
--
-- Never: writes before every member has been judged by acquire.lua's own
-- rules (so a busy member leaves the others as they were); takes a hold
-- whose lease ran out, even its own. No fencing tokens: a fencing client
-- takes its sets member by member (acquire.lua).

--@include "lib/lease.lua"
--@include "lib/lease_over.lua"
--@include "lib/hold_value.lua"

local lease, bad = lease_arg(ARGV[1], 1)
if not lease then return bad end
local owner = ARGV[2]
local n = #KEYS
local found = {}

-- First pass: judge every member; nothing is written.
for i = 1, n do
  local k, held = KEYS[i], tonumber(ARGV[4 + i])
  if held == 0 then
    if redis.call('exists', k) == 1 then
      -- Ours through an acquire reported failed but applied late: ours,
      -- counted afresh (acquire.lua); unless its lease ran out.
      local got = redis.call('hmget', k, owner, DELAY)
      if not got[1] or lease_over(k, tonumber(got[2])) then
        return {0, i, redis.call('pttl', k)}
      end
    end
  else
    local got = redis.call('hmget', k, owner, DELAY)
    if not got[1] or lease_over(k, tonumber(got[2])) then return {-1, i} end
    local c = count(got[1])
    if c ~= held then return {-2, i, c or -1} end
    found[i] = got[1]
  end
end

-- Second pass: take them all.
local new = (ARGV[3] ~= '0') and ('1 ' .. ARGV[3]) or '1'
local delay = tonumber(ARGV[4])
for i = 1, n do
  local k, v = KEYS[i], found[i]
  if v then
    redis.call('hset', k, owner, (count(v) + 1) .. suffix(v))
  elseif delay and delay > 0 then
    redis.call('hset', k, owner, new, DELAY, delay)
  else
    redis.call('hset', k, owner, new)
  end
  redis.call('pexpire', k, lease)
end
return {1}
