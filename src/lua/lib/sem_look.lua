--@include "lib/sem_fields.lua"
--@include "lib/sem_permits.lua"

-- The hash k read whole (HGETALL: its live holds are N at most, each with
-- one permit or more, so a look costs O(N) plus the dead holds it drops),
-- but for the caller's own field `mine`: s.size, the permit count "~N"
-- (nil: none); s.used, the permits of the live holds; s.soonest, the first
-- deadline that may free some (nil: none); s.dead, the fields of holds past
-- their deadline and their "~d:", "~k:" fields (a thousand a call at most:
-- HDEL takes them as arguments); s.undated, the live holds whose deadline
-- is the key's expiry (no "~d:"); s.all, the hash (field -> value). nil
-- when the hash has fields but no "~N": another kind of lock holds the
-- name. Needs tick() done.
local function look(k, mine)
  local all = redis.call('hgetall', k)
  local v = {}
  local s = {used = 0, dead = {}, undated = {}, all = v}
  for i = 1, #all, 2 do v[all[i]] = all[i + 1] end
  if #all > 0 and not v['~N'] then return nil end
  s.size = tonumber(v['~N'])
  for g, _ in pairs(v) do
    if string.sub(g, 1, 1) ~= '~' and g ~= mine then
      local x = tonumber(v[dl(g)])
      if x and x <= now then
        if #s.dead + 3 <= 1000 then
          s.dead[#s.dead + 1], s.dead[#s.dead + 2], s.dead[#s.dead + 3] = g, dl(g), pk(g)
        end
      else
        s.used = s.used + (tonumber(v[pk(g)]) or 1)
        if not x then s.undated[#s.undated + 1] = g
        elseif not s.soonest or x < s.soonest then s.soonest = x end
      end
    end
  end
  return s
end
