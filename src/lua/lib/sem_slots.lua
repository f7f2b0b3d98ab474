-- A fenced semaphore hold's permit slots and token (a client with
-- fencing declares the name's fence key, KEYS[2], as acquire.lua's).
--
-- A fenced hold's value is "<count> <since> <token> <slots>": one token
-- from the name's counter (INCR, never expires, up to 2^53 as the plain
-- lock's), and the numbers of the k permit slots it occupies, 0..N-1,
-- joined by ',' ("0,2"). Slots of live holds never overlap, and tokens
-- rise across all holds of the name, so every later holder of a slot has
-- a larger token than the earlier ones: a resource keeps the largest token
-- per slot. Reentry and release keep the value's suffix (hold_value.lua);
-- a lost reply's read-back (HGET) sees all of it; the hold's field goes
-- with its slots. An unfenced hold has no slots and takes none.
-- Needs dl() and num() (hold_deadline.lua) and now.

-- The slots of a hold's value v, or nil (an unfenced hold).
local function slots_of(v)
  return string.match(v, '^%d+ %d+ %d+ ([%d,]+)$')
end

-- The lowest m slots of 0..n-1 that no live hold (but `mine`) of the
-- hash read whole (all: field -> value) occupies, as a list.
local function free_slots(all, mine, m, n)
  local used, out = {}, {}
  for g, v in pairs(all) do
    local d = tonumber(all[dl(g)])
    if string.sub(g, 1, 1) ~= '~' and g ~= mine and not (d and d <= now) then
      local taken = slots_of(v)
      if taken then for x in string.gmatch(taken, '%d+') do used[tonumber(x)] = true end end
    end
  end
  local i = 0
  while #out < m and i < n do
    if not used[i] then out[#out + 1] = i end
    i = i + 1
  end
  return out
end

-- A new hold's token from the fence key fk and its m slots of 0..n-1,
-- and the suffix of its value (" <token> <slots>"); nil and an error
-- reply, nothing written, for more than RL__SEM_SLOTS_MAX permits, and
-- when the counter is past 2^53 (Lua's numbers are doubles: tokens would
-- stop rising).
local function fence_hold(fk, all, mine, m, n)
  if m > @RL__SEM_SLOTS_MAX@ then
    return nil, redis.error_reply('ERR rlock: a fenced hold takes at most ' ..
                                  '@RL__SEM_SLOTS_MAX@ permits')
  end
  local token = redis.call('incr', fk)
  if token >= 9007199254740992 then
    return nil, redis.error_reply('ERR rlock: fencing counter past 2^53')
  end
  local slots = free_slots(all, mine, m, n)
  local text = {}
  for i, x in ipairs(slots) do text[i] = num(x) end
  return {token, slots}, ' ' .. num(token) .. ' ' .. table.concat(text, ',')
end
