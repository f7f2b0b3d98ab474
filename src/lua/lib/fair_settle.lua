--@include "lib/fair_look.lua"

-- The queue's writes, once everything is read: w (nil: none) queued with a
-- place of place_ms, at the tail (at the head when `front` is set) unless
-- it is queued with a live place (a repeat only renews the place), the
-- sets kept as long as the longest place; then `drop` and `gone` (nil:
-- none) taken out, one ZREM per set, the last command on it (it may empty
-- the set, and so delete it).
local function settle(w, place_ms, gone, front)
  local out = {}
  for _, x in ipairs(drop) do if x ~= w then out[#out + 1] = x end end
  if gone and gone ~= w then out[#out + 1] = gone end
  if w then
    if dead[w] or not redis.call('zscore', KEYS[2], w) then
      local at = front and 0 or -1
      local next_to = redis.call('zrange', KEYS[2], at, at, 'WITHSCORES')
      redis.call('zadd', KEYS[2], (tonumber(next_to[2]) or 0) + (front and -1 or 1), w)
    end
    redis.call('zadd', KEYS[3], now + place_ms, w)
    for i = 2, 3 do
      if redis.call('pttl', KEYS[i]) < place_ms then redis.call('pexpire', KEYS[i], place_ms) end
    end
  end
  if #out > 0 then
    redis.call('zrem', KEYS[2], unpack(out))
    redis.call('zrem', KEYS[3], unpack(out))
  end
end
