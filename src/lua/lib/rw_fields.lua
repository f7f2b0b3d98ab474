-- The read-write lock (src/rwlock.c says how its one key is kept).
--
-- Layout @RL__RW_LAYOUT@ (RL__RW_LAYOUT, src/rlock_int.h). Fields of the
-- lock hash besides the holds, all beginning with '~': "~d:<field>", a
-- hold's deadline (Redis TIME, ms); "~n", how many holds the hash has (each
-- with its deadline); "~w", the write hold's field; "~wi", the waiting
-- writers' intents, "<field> <deadline>" pairs joined by spaces; "~s", the
-- sweep of dead holds (rw_sweep.lua). Everything lives in the one key, so
-- that the scripts touch no key they have not declared: in Cluster, a slot
-- migrating moves the lock whole, and a script never meets a key that has
-- left (Redis: "non local key"). A script never touches the key after a
-- change that may have deleted it (an HDEL), for the same reason.
--
-- A reader's new hold and every release and renewal read a few fields
-- only; a writer's new hold beside other holds, and anything that finds the
-- hash not as "~n" says (a hold past its deadline, a plain owner, a
-- lock-delay), read it whole (O(fields), rw_scan.lua) and put it right.

--@include "lib/clock.lua"

-- A hold's deadline field; a number as Redis stores it; the key's expiry,
-- made at least ms and never shortened.
local function dl(f) return '~d:' .. f end
local function num(x) return string.format('%d', x) end
local function keep(k, ms)
  if redis.call('pttl', k) < ms then redis.call('pexpire', k, ms) end
end
