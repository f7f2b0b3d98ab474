-- release.lua: give up one hold of a plain lock (or the whole field).
--
-- KEYS[1]  the lock
-- ARGV[1]  owner
-- ARGV[2]  held: the count the caller believes it holds (0: drop the whole
--          field)
-- ARGV[3]  lease_ms: the lease a count left keeps (0: leave the expiry
--          alone)
-- ARGV[4]  the notice: 's', '0' or anything else (lib/notice.lua); may be
--          left out, with ARGV[5], for no notice
-- ARGV[5]  the release channel
--
-- Reply: {1, count} released, count the holds left (0: the field went);
-- {-1, 0} not ours (gone, or its lease ran out); {-2, count} ours with
-- another count than the caller's, nothing changed; an error, nothing
-- written, for a lease out of range.
--
-- Never: removes another owner's field (the lock is deleted only when no
-- other owner is left); touches the key after a command that may have
-- deleted it; fails an applied release for a refused notice.
--
-- Lock-delay (lib/delay.lua): a last release of a counted hold (held > 0)
-- whose lease is still running is a clean one: the key goes, and the delay
-- with it. A drop (held 0: a hold lost, given up at shutdown, or an outcome
-- never read back) leaves the tombstone for the delay; a release that comes
-- after the lease ran out (a holder stalled past its check) finds the hold
-- gone, as it would find an expired key, and leaves the rest of the delay.

--@include "lib/lease.lua"
--@include "lib/lease_over.lua"
--@include "lib/released.lua"
--@include "lib/notice.lua"

local lease, bad = lease_arg(ARGV[3], 0)
if not lease then return bad end
local got = redis.call('hmget', KEYS[1], ARGV[1], DELAY)
local v, delay = got[1], tonumber(got[2])
local over = v and lease_over(KEYS[1], delay)
if not v or (over and ARGV[2] ~= '0') then
  if over then redis.call('hdel', KEYS[1], ARGV[1]) end
  -- Redlock's last release, on a node that never granted us the lock: if
  -- the name is free here, say so, for the waiters that listen to this
  -- node.
  if ARGV[2] == '0' and ARGV[4] and ARGV[4] ~= '0' and
     redis.call('exists', KEYS[1]) == 0 then
    notice(ARGV[4], ARGV[5])
  end
  return {-1, 0}
end
local held = tonumber(ARGV[2])
local n, found = released(v, held)
if not n then return {-2, found} end
if n > 0 then
  redis.call('hset', KEYS[1], ARGV[1], n .. suffix(v))
  if lease > 0 then redis.call('pexpire', KEYS[1], lease) end
  return {1, n}
end
-- Whether ours is the last owner is asked before the delete: once the key
-- is gone, a script may not touch it again while its slot migrates (Redis:
-- "non local key"), and the delete would then be reported as an error.
local last = redis.call('hlen', KEYS[1]) == (delay and 2 or 1)
if last and delay and delay > 0 and held == 0 then
  -- A drop: the tombstone, for the delay from now (or what is left of it,
  -- when the lease ran out first).
  redis.call('hdel', KEYS[1], ARGV[1])
  if not over then redis.call('pexpire', KEYS[1], delay) end
elseif last and delay then
  redis.call('del', KEYS[1])
else
  redis.call('hdel', KEYS[1], ARGV[1])
end
if last and ARGV[4] ~= '0' then
  notice(ARGV[4], ARGV[5])
end
return {1, 0}
