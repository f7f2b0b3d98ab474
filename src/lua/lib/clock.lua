-- now: Redis's own clock (ms), so that every host's waiters and holds are
-- judged alike. A script that reads the time needs effects replication,
-- asked for before any write: it is the only kind from Redis 7 on, the
-- default from Redis 5, and asked for explicitly here for older servers.
if redis.replicate_commands then redis.replicate_commands() end
local now
do
  local t = redis.call('time')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
