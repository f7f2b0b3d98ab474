-- A thread's hold of a hash with per-hold deadlines (read-write lock,
-- semaphore) entered again: its count one higher and its deadline moved
-- out to now + lease, never in. Needs count() and suffix() (hold_value.lua),
-- dl() and keep() (hold_deadline.lua), now and lease.
--
-- Reply: {1, count} entered; {-1, 0} the hold is gone (absent or past its
-- deadline); {-2, count} Redis holds another count than `held` (-1: none
-- readable).
--@include "lib/hold_undated.lua"

local function reenter(k, f, held)
  local got = redis.call('hmget', k, f, dl(f))
  local v, d = got[1], tonumber(got[2])
  if not v or (d and d <= now) then return {-1, 0} end
  local n = count(v)
  if n ~= held then return {-2, n or -1} end
  redis.call('hset', k, f, (n + 1) .. suffix(v), dl(f), math.max(deadline(k, d), now + lease))
  keep(k, lease)
  return {1, n + 1}
end
