--@include "lib/rw_fields.lua"
--@include "lib/delay.lua"

-- The hash k read whole, but for the caller's own field `mine` and its
-- deadline, w the writer's mark: s.n the holds with a deadline it leaves
-- (live ones, and dead ones past the cap below), s.live[field], s.writer
-- the write hold among them (or a plain owner), s.soonest the first
-- deadline that may end one (s.undated: a hold without one, a plain lock's
-- owner, which lasts as the key does), s.delay a plain holder's lock-delay;
-- s.dead, the fields to drop: holds past their deadline, deadlines without
-- a hold (a thousand a call at most: HDEL takes them as arguments; s.stale:
-- dead holds were left). nil when the hash is not of layout
-- @RL__RW_LAYOUT@: a '~' field it does not have, or a live write hold
-- without its mark.
local function scan(k, mine, w)
  local all = redis.call('hgetall', k)
  local s, dates, holds = {n = 0, owners = 0, live = {}, dead = {}}, {}, {}
  local ours = {['~n'] = true, ['~w'] = true, ['~wi'] = true, ['~s'] = true}
  local function drop(g) if #s.dead < 1000 then s.dead[#s.dead + 1] = g end end
  for i = 1, #all, 2 do
    local g = all[i]
    if g == mine or g == dl(mine) then
    elseif string.sub(g, 1, 3) == '~d:' then
      dates[string.sub(g, 4)] = tonumber(all[i + 1]) or 0
    elseif g == DELAY then
      s.delay = true
    elseif string.sub(g, 1, 1) ~= '~' then
      holds[#holds + 1] = g
    elseif not ours[g] then
      return nil
    end
  end
  for _, g in ipairs(holds) do
    local x = dates[g]
    dates[g] = nil
    if x and x <= now then
      if #s.dead + 2 <= 1000 then
        s.dead[#s.dead + 1], s.dead[#s.dead + 2] = g, dl(g)
      else
        -- Left for a later look: still in the hash, still counted.
        s.n, s.stale = s.n + 1, true
      end
    else
      s.owners = s.owners + 1
      s.live[g] = true
      if string.sub(g, -2) ~= ':r' then
        if x and g ~= w then return nil end
        s.writer = g
      end
      if not x then s.undated = true
      else
        s.n = s.n + 1
        if not s.soonest or x < s.soonest then s.soonest = x end
      end
    end
  end
  for g in pairs(dates) do drop(dl(g)) end
  return s
end
