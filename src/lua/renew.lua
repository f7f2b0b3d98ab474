-- renew.lua: renew the leases of many holds of plain locks in one call.
--
-- KEYS[1..N]    the locks
-- ARGV[1]       lease_ms (a client with a lock-delay passes its lease plus
--               the delay)
-- ARGV[2..N+1]  the owner of each lock's hold
--
-- Reply: a string of N characters, one per pair: '1' still held (lease
-- renewed), '0' gone. A key of the wrong type counts as gone and does not
-- stop the others; so does a hold whose lease part ran out (PTTL <= delay:
-- its field stays for the rest of the delay only; lib/delay.lua). An error,
-- nothing written, for a lease out of range.
--
-- Never: shortens an expiry; writes anything but expiries (so never
-- deletes, nor touches a key after a delete). The client never sends a
-- renewal that could land on a newer hold of the same owner: see the
-- watchdog (src/watchdog.c).

--@include "lib/lease.lua"
--@include "lib/lease_over.lua"

local lease, bad = lease_arg(ARGV[1], 1)
if not lease then return bad end
local out = {}
for i = 1, #KEYS do
  local r = redis.pcall('hmget', KEYS[i], ARGV[i + 1], DELAY)
  local d = type(r) == 'table' and r[1] and tonumber(r[2])
  if lease_over(KEYS[i], d) then r = nil end
  if type(r) == 'table' and r[1] then
    -- Never shorten.
    if redis.call('pttl', KEYS[i]) < lease then
      redis.call('pexpire', KEYS[i], lease)
    end
    out[i] = '1'
  else
    out[i] = '0'
  end
end
return table.concat(out)
