-- Kinds whose holds have deadlines of their own (read-write lock,
-- semaphore): a hold's deadline field; a number as Redis stores it; the
-- key's expiry, made at least ms and never shortened.
local function dl(f) return '~d:' .. f end
local function num(x) return string.format('%d', x) end
local function keep(k, ms)
  if redis.call('pttl', k) < ms then redis.call('pexpire', k, ms) end
end
