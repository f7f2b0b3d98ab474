-- renew.lua: renew the leases of many holds of plain locks in one call.
--
-- KEYS[1..N]    the locks
-- ARGV[1]       lease_ms (a client with a lock-delay passes its lease plus
--               the delay)
-- ARGV[2..N+1]  the owner of each lock's hold
-- ARGV[N+2..2N+1]  (Redlock's spread, optional) the hold value to place for
--               each pair (lib/hold_value.lua) where the name is free; an
--               empty value: that pair is renewed only
--
-- Reply: a string of N characters, one per pair: '1' still held (lease
-- renewed), '0' gone. A key of the wrong type counts as gone and does not
-- stop the others; so does a hold whose lease part ran out (PTTL <= delay:
-- its field stays for the rest of the delay only; lib/delay.lua). With the
-- values: '2' for a pair whose key did not exist at all, now holding our
-- field alone with that value and the lease (placed). An error, nothing
-- written, for a lease out of range or values not one per pair.
--
-- Never: shortens an expiry; writes anything but expiries, and a placed
-- hold on a key that did not exist (so never deletes, nor touches a key
-- after a delete, nor adds a field beside another's or beside a delay's
-- tombstone, nor hands out a fencing token). The client never sends a
-- renewal that could land on a newer hold of the same owner: see the
-- watchdog (src/watchdog.c); nor a placement that could land after its
-- hold's last release unfenced (src/renew.c).

--@include "lib/lease.lua"
--@include "lib/lease_over.lua"

local lease, bad = lease_arg(ARGV[1], 1)
if not lease then return bad end
local n = #KEYS
local place = #ARGV == 2 * n + 1 and n > 0
if not place and #ARGV ~= n + 1 then
  return redis.error_reply('ERR rlock: renewal arguments are not one per key')
end
local out = {}
for i = 1, n do
  local r = redis.pcall('hmget', KEYS[i], ARGV[i + 1], DELAY)
  local d = type(r) == 'table' and r[1] and tonumber(r[2])
  if lease_over(KEYS[i], d) then r = nil end
  if type(r) == 'table' and r[1] then
    -- Never shorten.
    if redis.call('pttl', KEYS[i]) < lease then
      redis.call('pexpire', KEYS[i], lease)
    end
    out[i] = '1'
  elseif place and ARGV[n + 1 + i] ~= '' and redis.call('exists', KEYS[i]) == 0 then
    -- Free: nobody's field, no tombstone. Ours is placed.
    redis.call('hset', KEYS[i], ARGV[i + 1], ARGV[n + 1 + i])
    redis.call('pexpire', KEYS[i], lease)
    out[i] = '2'
  else
    out[i] = '0'
  end
end
return table.concat(out)
