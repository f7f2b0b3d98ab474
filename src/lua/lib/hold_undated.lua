-- deadline(k, d): the deadline of a hold of key k whose "~d:" field reads
-- d; a hold without one has the key's expiry (a semaphore's first hold on
-- a free name, lib/sem_fields.lua), so that a script moving it out never
-- moves it in. Needs now.
local function deadline(k, d)
  return d or now + math.max(redis.call('pttl', k), 0)
end
