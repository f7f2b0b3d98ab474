--@include "lib/notice.lua"

-- wake(h, how, chan): tell h's process, and only it, that the name is
-- free: on the release channel chan with ":<its uuid>" appended (an owner
-- is "<uuid>:<tid>"). No h (nil or false): nobody queued, and a plain
-- handle's waiter (another process, another family) may wait on the plain
-- channel, as for a plain release. `how` as for notice().
local function wake(h, how, chan)
  if h then
    local ch = chan .. ':' .. (string.match(h, '^(.*):') or h)
    notice(how, ch)
  else
    notice(how, chan)
  end
end
