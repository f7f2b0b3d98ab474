-- acquire.lua: take a plain lock, or enter it again (reentry).
--
-- KEYS[1]  the lock: a hash of owner -> hold value (lib/hold_value.lua)
-- KEYS[2]  its fence key, declared only by a client that hands out fencing
--          tokens
-- ARGV[1]  lease_ms
-- ARGV[2]  owner, "<uuid>:<tid>"
-- ARGV[3]  held: the count the caller believes it holds (0: a new hold)
-- ARGV[4]  since: the caller's CLOCK_REALTIME in ms ('0' or left out on
--          reentry)
-- ARGV[5]  fence: '1' hands out a token
-- ARGV[6]  delay_ms: lock-delay ('0' or left out: none; lib/delay.lua)
--
-- Reply: {1, count} taken (count 1, or held + 1 on reentry), with the
-- hold's fencing token as a third element when it has one; {0, pttl} held
-- by another, or blocked by a delay; {-1, 0} not ours (a reentry whose hold
-- is gone); {-2, count} ours with another count than the caller's,
-- nothing changed; an error, nothing written, for a lease out of range or
-- a fencing counter past 2^53.
--
-- Never: writes before the lease is checked; deletes anything (so never
-- touches a key after a command that may have deleted it); takes a hold
-- whose lease ran out, even its own. Few calls on the common paths: Redis
-- counts each call a script makes.
--
-- Fencing: KEYS[2] counts the tokens handed out and never expires; a new
-- hold's token is the third word of its value ("<count> <since> <token>"),
-- so reentry, release and a lost reply's read-back all see it. It is the
-- one script that declares two keys, and only for a fencing client: while
-- a Cluster slot migrates, Redis refuses a script whose declared keys are
-- not all present (TRYAGAIN).

--@include "lib/lease.lua"
--@include "lib/lease_over.lua"
--@include "lib/hold_value.lua"

-- The fencing token of a hold's value v ("<count> <since> <token>"), or nil.
local function token_of(v) return tonumber(string.match(v, '^%d+ %d+ (%d+)$')) end

local lease, bad = lease_arg(ARGV[1], 1)
if not lease then return bad end
local held = tonumber(ARGV[3])
if held == 0 then
  if redis.call('exists', KEYS[1]) == 1 then
    -- Held (or blocked by a delay): by another, or by us through an
    -- acquire that was reported failed but applied late. Ours is ours:
    -- start the count afresh; unless its lease ran out (a delay runs).
    local got = redis.call('hmget', KEYS[1], ARGV[2], DELAY)
    if not got[1] or lease_over(KEYS[1], tonumber(got[2])) then
      return {0, redis.call('pttl', KEYS[1])}
    end
  end
  local v = (ARGV[4] and ARGV[4] ~= '0') and ('1 ' .. ARGV[4]) or '1'
  local token
  if ARGV[5] == '1' and KEYS[2] then
    token = redis.call('incr', KEYS[2])
    -- Lua numbers are doubles: past 2^53 tokens would stop rising.
    if token >= 9007199254740992 then
      return redis.error_reply('ERR rlock: fencing counter past 2^53')
    end
    if v == '1' then v = '1 0' end
    v = v .. ' ' .. string.format('%d', token)
  end
  local delay = tonumber(ARGV[6])
  if delay and delay > 0 then
    redis.call('hset', KEYS[1], ARGV[2], v, DELAY, delay)
  else
    redis.call('hset', KEYS[1], ARGV[2], v)
  end
  redis.call('pexpire', KEYS[1], lease)
  if token then return {1, 1, token} end
  return {1, 1}
end
local got = redis.call('hmget', KEYS[1], ARGV[2], DELAY)
local v = got[1]
if not v or lease_over(KEYS[1], tonumber(got[2])) then return {-1, 0} end
local n = count(v)
if n ~= held then return {-2, n or -1} end
redis.call('hset', KEYS[1], ARGV[2], (n + 1) .. suffix(v))
redis.call('pexpire', KEYS[1], lease)
local token = token_of(v)
if token then return {1, n + 1, token} end
return {1, n + 1}
