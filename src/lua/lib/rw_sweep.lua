--@include "lib/rw_fields.lua"

-- The sweep drops the holds past their deadline that nobody reads whole
-- (readers that died, on a name no writer asks for), a few fields per
-- call: "~s" is "<cursor> <t>". Cursor 0 (none running): no hold's deadline
-- is before t, and none needs looking at until then. Else the HSCAN cursor
-- of a sweep under way, and t the earliest deadline it has seen (or a hold
-- taken since it began has), if any. Once t has passed, every reader's new
-- hold, release and renewal reads the next RL__RW_SWEEP_STEP
-- (@RL__RW_SWEEP_STEP@) fields from the cursor and drops the holds among
-- them past their deadline, until the cursor comes back to 0; then t is the
-- earliest live deadline again. A dead hold is dropped by the end of the
-- sweep under way at its deadline or of the next one: within two sweeps,
-- about 2 x HLEN / RL__RW_SWEEP_STEP calls on the name after its deadline
-- (a sweep is one call while Redis keeps the hash as a listpack, up to 512
-- fields, whose HSCAN reads it whole), whoever makes them. A call pays for
-- those fields more, and only while a sweep is due: live holds renewed
-- every third of their lease start one every two thirds of a lease at
-- most.

-- One step of the sweep of hash k whose "~s" is sv (nil: none, as in a
-- hash of no holds), w the writer's mark, skip the caller's own field (the
-- caller drops it if it is past its deadline). Reads only: nil when no
-- sweep is due, else sw.gone, the fields to drop (holds past their deadline
-- and those deadlines); sw.held, how many of them "~n" counts; sw.writer,
-- whether w is among them; sw.state, "~s" after the step.
local function sweep(k, sv, w, skip)
  local cur, t = string.match(sv or '', '^(%d+) ?(%d*)$')
  t = tonumber(t)
  if cur == '0' and t and t > now then return nil end
  if cur == nil or cur == '0' then cur, t = '0', nil end
  local r = redis.call('hscan', k, cur, 'COUNT', @RL__RW_SWEEP_STEP@)
  local sw, dead = {gone = {}, held = 0}, {}
  for i = 1, #r[2], 2 do
    if string.sub(r[2][i], 1, 3) == '~d:' then
      local x = tonumber(r[2][i + 1]) or 0
      local h = string.sub(r[2][i], 4)
      if x <= now then
        if h ~= skip then dead[#dead + 1] = h end
      elseif not t or x < t then t = x end
    end
  end
  if #dead > 0 then
    local v = redis.call('hmget', k, unpack(dead))
    for i, h in ipairs(dead) do
      if v[i] then sw.held = sw.held + 1 end
      if h == w then sw.writer = true end
      sw.gone[#sw.gone + 1], sw.gone[#sw.gone + 2] = h, dl(h)
    end
  end
  sw.state = r[1] .. (t and ' ' .. num(t) or '')
  return sw
end
