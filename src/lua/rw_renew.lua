-- rw_renew.lua: renew many holds of read-write locks in one call, moving
-- each hold's own deadline too, and a step of the sweep where one is due
-- (lib/rw_sweep.lua).
--
-- KEYS[1..N]    the locks, hashes of layout @RL__RW_LAYOUT@
--               (lib/rw_fields.lua)
-- ARGV[1]       lease_ms
-- ARGV[2..N+1]  the field of each lock's hold
--
-- Reply: as renew.lua's, a string of N characters, '1' still held (lease
-- and deadline renewed) or '0' gone, one per pair. A hold past its deadline
-- is gone, as an expired key is; a key of the wrong type counts as gone.
-- An error, nothing written, for a lease out of range.
--
-- Never: shortens an expiry or a deadline; deletes the key (ours is live:
-- whatever the sweep drops, the key stays), nor touches it after its HDEL.

--@include "lib/lease.lua"

local lease, bad = lease_arg(ARGV[1], 1)
if not lease then return bad end
--@include "lib/rw_fields.lua"
--@include "lib/rw_sweep.lua"

local out = {}
for i = 1, #KEYS do
  local k, f = KEYS[i], ARGV[i + 1]
  local r = redis.pcall('hmget', k, f, dl(f), '~n', '~w', '~s')
  local d = type(r) == 'table' and tonumber(r[2])
  if type(r) == 'table' and r[1] and not (d and d <= now) then
    -- Ours is live: whatever the sweep drops, the key stays.
    local sw, put = sweep(k, r[5], r[4]), {}
    if not d or d < now + lease then put[1], put[2] = dl(f), now + lease end
    if sw then
      put[#put + 1], put[#put + 2] = '~s', sw.state
      if sw.held > 0 and tonumber(r[3]) then
        put[#put + 1], put[#put + 2] = '~n', math.max(tonumber(r[3]) - sw.held, 1)
      end
      if sw.writer then sw.gone[#sw.gone + 1] = '~w' end
    end
    if #put > 0 then redis.call('hset', k, unpack(put)) end
    keep(k, lease)
    if sw and #sw.gone > 0 then redis.call('hdel', k, unpack(sw.gone)) end
    out[i] = '1'
  else
    out[i] = '0'
  end
end
return table.concat(out)
