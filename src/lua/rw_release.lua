-- rw_release.lua: give up one hold of a read-write lock, or take back a
-- waiting writer's intent.
--
-- KEYS[1]  the lock, a hash of layout @RL__RW_LAYOUT@ (lib/rw_fields.lua)
-- ARGV[1]  field: the hold's (as rw_acquire.lua's), or "~wi:<writer's
--          field>" to take that writer's intent back (it gave up waiting)
-- ARGV[2]  held (0: drop the whole field)
-- ARGV[3]  lease_ms (0: leave the lease alone)
-- ARGV[4]  the notice (lib/notice.lua); may be left out, with ARGV[5]
-- ARGV[5]  the release channel
--
-- A notice goes out when the last hold leaves, and when a writer leaves
-- (readers may enter beside its thread's read hold) or is swept away; for
-- an intent taken back, unless a writer holds. A hold past its deadline is
-- gone, as an expired key is.
--
-- Reply: {1, count} released, count the holds left of the field (0: it
-- went; an intent taken back: {1, 0}); {-1, 0} not ours (gone, or past its
-- deadline: then dropped); {-2, count} ours with another count, nothing
-- changed; an error, nothing written, for a lease out of range.
--
-- Never: touches the key after a command that may have deleted it (every
-- question is asked first; the HDEL comes last); touches a key it has not
-- declared.

--@include "lib/lease.lua"
--@include "lib/released.lua"

local lease, bad = lease_arg(ARGV[3], 0)
if not lease then return bad end
--@include "lib/rw_fields.lua"
--@include "lib/rw_intents.lua"
--@include "lib/rw_sweep.lua"
--@include "lib/notice.lua"

local k, f = KEYS[1], ARGV[1]
local notify = ARGV[4] and ARGV[4] ~= '0'
if string.sub(f, 1, 4) == '~wi:' then
  local me = string.sub(f, 5)
  local g = redis.call('hmget', k, '~wi', '~w')
  local list = intents(g[1])
  local rest, had = joined(list, me), false
  for i = 1, #list, 2 do if list[i] == me then had = true end end
  -- Whether a writer holds is asked before a delete that may take the key.
  local writing = g[2] and (tonumber(redis.call('hmget', k, g[2], dl(g[2]))[2]) or 0) > now
  if rest ~= '' then redis.call('hset', k, '~wi', rest)
  elseif g[1] then redis.call('hdel', k, '~wi') end
  if had and notify and not writing then
    notice(ARGV[4], ARGV[5])
  end
  return {1, 0}
end
local got = redis.call('hmget', k, f, dl(f), '~n', '~w', '~s')
local v, d, holds = got[1], tonumber(got[2]), tonumber(got[3]) or 1
if not v then return {-1, 0} end
local sw = sweep(k, got[5], got[4], f) or {gone = {}, held = 0}
local left = holds - sw.held
if sw.writer then sw.gone[#sw.gone + 1] = '~w' end
-- f's hold stays with count c, or leaves (c 0); the count of holds, the
-- sweep and the writer's mark follow. The delete comes last, and may take
-- the key.
local function done(c)
  local put, gone = {}, sw.gone
  if c > 0 then
    put[1], put[2] = f, c .. suffix(v)
    if lease > 0 then put[3], put[4] = dl(f), math.max(d or 0, now + lease) end
    left = math.max(left, 1)
  else
    gone[#gone + 1], gone[#gone + 2] = f, dl(f)
    if got[4] == f then gone[#gone + 1] = '~w' end
    left = left - 1
  end
  if left > 0 then
    if left ~= holds then put[#put + 1], put[#put + 2] = '~n', left end
    if sw.state then put[#put + 1], put[#put + 2] = '~s', sw.state end
  else
    gone[#gone + 1], gone[#gone + 2] = '~n', '~s'
  end
  if #put > 0 then redis.call('hset', k, unpack(put)) end
  if c > 0 and lease > 0 then keep(k, lease) end
  if #gone > 0 then redis.call('hdel', k, unpack(gone)) end
end
if d and d <= now then
  done(0)
  return {-1, 0}
end
local n, found = released(v, tonumber(ARGV[2]))
if not n then return {-2, found} end
done(n)
-- The last hold counted left, or a writer (readers may enter).
if notify and (sw.writer or (n == 0 and (left <= 0 or string.sub(f, -2) ~= ':r'))) then
  notice(ARGV[4], ARGV[5])
end
return {1, n}
