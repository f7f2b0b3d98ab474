--@include "lib/rw_fields.lua"

-- The live intents of a "~wi" value (a flat list of field, deadline) and
-- the latest deadline among them; such a list joined again, without `skip`.
local function intents(str)
  local out, latest = {}, nil
  for g, x in string.gmatch(str or '', '(%S+) (%d+)') do
    x = tonumber(x)
    if x > now then
      out[#out + 1], out[#out + 2] = g, x
      if not latest or x > latest then latest = x end
    end
  end
  return out, latest
end
local function joined(list, skip)
  local out = {}
  for i = 1, #list, 2 do
    if list[i] ~= skip then out[#out + 1] = list[i] .. ' ' .. num(list[i + 1]) end
  end
  return table.concat(out, ' ')
end
