-- now, as clock.lua's (Redis's own clock, ms), read only once a path asks
-- for it with tick(): a path that judges and writes no deadline (a
-- semaphore's first hold on a free name, the release of a hold whose
-- deadline is the key's expiry) asks Redis no TIME, some 1 us of its time
-- a call. Effects replication is asked for here, before any write, as
-- clock.lua does, whether the clock is read or not.
if redis.replicate_commands then redis.replicate_commands() end
local now
local function tick()
  if not now then
    local t = redis.call('time')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end
