-- lease_arg(arg, min): the lease argument `arg` (ms) as the number it was
-- checked as; nil and the error reply to return when it is not a whole
-- number from min to 2^31 - 1.
--
-- A lease argument is checked before anything is written, and passed on as
-- the number it was checked as: Redis does not undo a script's earlier
-- writes when a later call fails, and a PEXPIRE that fails after an HSET
-- would leave a lock with no expiry at all.
local function lease_arg(arg, min)
  local lease = tonumber(arg)
  if not lease or lease ~= math.floor(lease) or lease < min or lease > 2147483647 then
    return nil, redis.error_reply('ERR rlock: lease out of range')
  end
  return lease
end
