-- force.lua: force-release a lock, whoever holds it
-- (rl_lock_force_release(): an operator's way out).
--
-- KEYS[1]  the lock
-- ARGV[1]  "<our uuid>:", the prefix of our own process's owners
-- ARGV[2]  the notice: 's', '0' or anything else (lib/notice.lua)
-- ARGV[3]  the release channel
--
-- Reply: {1, n, tid1..tidn}, the thread ids of our own fields it removed,
-- so that exactly those holds are flagged, however the delete interleaved
-- with our own acquisitions; {1, -1} when there were more than
-- RL__FORCE_TIDS (@RL__FORCE_TIDS@) to list (then every local hold of the
-- name is flagged); {1, 0} when there was no lock. An error, nothing
-- written, for a key that is not a hash.
--
-- Never: touches the key after its DEL (only the notice follows, on a
-- channel); drops a held lock's lock-delay field, or shortens its expiry.
--
-- A holder with a lock-delay (lib/delay.lua) loses its hold now, but the
-- key keeps its expiry (what is left of the lease, plus the delay) with the
-- tombstone alone in it: the holder learns of the loss at its next
-- renewal, or at its fixed lease's end, and the next holder must not come
-- in before its flag rose and the delay went by after it. A force-release
-- of a tombstone alone deletes it (the operator's way out).

--@include "lib/delay.lua"
--@include "lib/notice.lua"

if redis.call('type', KEYS[1]).ok ~= 'hash' then
  if redis.call('exists', KEYS[1]) == 1 then
    return redis.error_reply('WRONGTYPE key is not an rlock hash')
  end
  return {1, 0}
end
local out = {1, 0}
local plen = #ARGV[1]
local fields = redis.call('hkeys', KEYS[1])
for _, f in ipairs(fields) do
  if string.sub(f, 1, plen) == ARGV[1] then
    local tid = tonumber(string.sub(f, plen + 1))
    if tid then
      out[2] = out[2] + 1
      out[#out + 1] = tid
    end
  end
end
if out[2] > @RL__FORCE_TIDS@ then out = {1, -1} end
local delay = tonumber(redis.call('hget', KEYS[1], DELAY))
-- Held by an owner with a lock-delay: it loses the hold now, the tombstone
-- stays until the lease it was given, and the delay, are over (never
-- shortened). Only a tombstone: the operator ends the delay.
if delay and delay > 0 and #fields > 1 then
  for _, f in ipairs(fields) do
    if f ~= DELAY then redis.call('hdel', KEYS[1], f) end
  end
  if redis.call('pttl', KEYS[1]) < 0 then
    redis.call('pexpire', KEYS[1], delay)
  end
else
  redis.call('del', KEYS[1])
end
notice(ARGV[2], ARGV[3])
return out
