-- The fair lock (src/fair.c says why it is built this way).
--
-- KEYS lock, queue, places: the lock hash as for the plain lock; `queue`, a
-- sorted set of waiting owners scored by order of arrival; `places`, a
-- sorted set of the same owners scored by the Redis time (ms) at which each
-- one's place runs out unless its process renews it. Both share the name's
-- hash tag. Every script passes over the waiters whose place ran out, and
-- drops them, so a dead or stopped process is passed over, and neither set
-- grows from the dead.
--
-- Each script reads the lock and the queue first (this file), then writes:
-- the queue's changes in one go (settle, fair_settle.lua: additions, then
-- the one ZREM per set that may empty it), the lock's last (its HDEL may
-- delete it). No key is touched after a command that may have deleted it
-- (README.md): the scripts before kept dropping places after the lock's
-- field went, and adding after dropping, and were stopped midway while the
-- slot migrated.

--@include "lib/clock.lua"

-- Reads only. `drop`, the waiters to take out: those whose place ran out
-- (a hundred a call at most), and those head() finds queued without a
-- place (a thousand: ZREM takes them as arguments); dead[w] for each.
-- head(skip): the first waiter, other than skip, with a place still
-- running, and when that place runs out.
local dead, drop = {}, {}
for _, w in ipairs(redis.call('zrangebyscore', KEYS[3], '-inf', '(' .. now, 'LIMIT', 0, 100)) do
  dead[w] = true
  drop[#drop + 1] = w
end
local function head(skip)
  local i = 0
  while true do
    local h = redis.call('zrange', KEYS[2], i, i)[1]
    if not h then return nil, 0 end
    if h ~= skip and not dead[h] then
      local until_ms = redis.call('zscore', KEYS[3], h)
      if until_ms then return h, tonumber(until_ms) end
      dead[h] = true
      if #drop < 1100 then drop[#drop + 1] = h end
    end
    i = i + 1
  end
end
