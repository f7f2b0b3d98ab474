-- fair_leave.lua: a waiter that gives up leaves the queue of a fair lock;
-- also run after a force-release.
--
-- KEYS[1]  the lock; KEYS[2] its queue; KEYS[3] its places
--          (lib/fair_look.lua)
-- ARGV[1]  owner ("" for none)
-- ARGV[2]  the notice (lib/notice.lua)
-- ARGV[3]  the release channel
--
-- When the name is free, the (new) first waiter's process is woken
-- (lib/fair_wake.lua).
--
-- Reply: 1.
--
-- Never: writes to the lock; touches a key after a command that may have
-- deleted it (the queue's ZREMs come last).

--@include "lib/clock.lua"
--@include "lib/fair_look.lua"
--@include "lib/fair_settle.lua"
--@include "lib/fair_wake.lua"

local free = ARGV[2] ~= '0' and redis.call('exists', KEYS[1]) == 0
local h = free and head(ARGV[1])
settle(nil, 0, ARGV[1])
if free then
  wake(h, ARGV[2], ARGV[3])
end
return 1
