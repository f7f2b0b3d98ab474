--@include "lib/delay.lua"

-- Whether the hold in lock k, whose lock-delay is d (nil or false: none),
-- has run out of lease: PTTL <= d (delay.lua).
local function lease_over(k, d) return d and redis.call('pttl', k) <= d end
