--@include "lib/hold_value.lua"

-- released(v, held): what a release by a caller holding `held` (0: the
-- whole field) leaves of the hold whose value is v: its new count (0: the
-- hold goes). Another count than the caller's is a mismatch, and nothing
-- changes: nil, and the count found (-1: none readable).
local function released(v, held)
  local n = count(v)
  if held > 0 and n ~= held then return nil, n or -1 end
  if held == 0 then n = 1 end
  return n - 1
end
