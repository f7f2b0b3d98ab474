-- The field of the permits a semaphore hold has (lib/sem_fields.lua).
local function pk(f) return '~k:' .. f end
