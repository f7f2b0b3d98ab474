-- sem_renew.lua: renew many semaphore holds in one call, moving each
-- hold's own deadline too.
--
-- KEYS[1..N]    the semaphores, hashes (lib/sem_fields.lua)
-- ARGV[1]       lease_ms
-- ARGV[2..N+1]  the field of each semaphore's hold
--
-- Reply: as renew.lua's, a string of N characters, '1' still held (lease
-- and deadline renewed) or '0' gone, one per pair. A hold past its deadline
-- is gone, as an expired key is; a key of the wrong type counts as gone.
-- An error, nothing written, for a lease out of range.
--
-- Never: shortens an expiry or a deadline; deletes anything.

--@include "lib/lease.lua"

local lease, bad = lease_arg(ARGV[1], 1)
if not lease then return bad end
--@include "lib/sem_fields.lua"

tick()
local out = {}
for i = 1, #KEYS do
  local k, f = KEYS[i], ARGV[i + 1]
  local r = redis.pcall('hmget', k, f, dl(f))
  local d = type(r) == 'table' and tonumber(r[2])
  if type(r) == 'table' and r[1] and not (d and d <= now) then
    local x = math.max(deadline(k, d), now + lease)
    if x ~= d then redis.call('hset', k, dl(f), num(x)) end
    keep(k, lease)
    out[i] = '1'
  else
    out[i] = '0'
  end
end
return table.concat(out)
