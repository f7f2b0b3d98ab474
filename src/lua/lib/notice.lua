-- notice(how, chan, msg): tell the waiters on chan that the name may be
-- free, with msg as the message (nil: '0'; a semaphore's release says how
-- many permits it gave back). `how` says how: 's' SPUBLISH (Cluster:
-- sharded, on the channel's master), '0' none, anything else PUBLISH.
--
-- A notice is a courtesy, the change is the fact: a PUBLISH that Redis
-- refuses (an ACL user without channel rights) must not turn an applied
-- change into an error (redis.pcall).
--
-- The channel comes in ARGV, not KEYS: it is never a key, and while its
-- slot migrates Redis answers a command whose declared keys are not all
-- present with TRYAGAIN, so a release would fail until the migration ends.
-- It shares the lock's hash tag, so SPUBLISH stays on the lock's slot.
local function notice(how, chan, msg)
  if how == 's' then redis.pcall('spublish', chan, msg or '0')
  elseif how ~= '0' then redis.pcall('publish', chan, msg or '0') end
end
