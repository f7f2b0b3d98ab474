-- rw_acquire.lua: take a read or a write hold of a read-write lock, or
-- enter one again.
--
-- KEYS[1]  the lock, a hash of layout @RL__RW_LAYOUT@ (lib/rw_fields.lua)
-- ARGV[1]  lease_ms
-- ARGV[2]  field: the hold's, "<owner>" for a writer, "<owner>:r" for a
--          reader
-- ARGV[3]  held (0: a new hold)
-- ARGV[4]  since
-- ARGV[5]  side: 'r' or 'w'
-- ARGV[6]  intent_ms: a writer that will wait registers its intent for
--          that long, and readers wait for it (0: none)
--
-- Reply, as acquire.lua's: {1, count} taken; {0, wait_ms} not taken;
-- {-1, 0} not ours (a reentry whose hold is gone); {-2, count} ours with
-- another count, nothing changed. An error, nothing written, for a lease or
-- an intent out of range, or a hash not of layout @RL__RW_LAYOUT@.
--
-- Never: writes before both arguments are checked; touches the key after
-- a command that may have deleted it (its HDEL comes last); registers an
-- intent beside a plain holder (below); touches a key it has not declared.

--@include "lib/lease.lua"
--@include "lib/hold_value.lua"

local lease, bad = lease_arg(ARGV[1], 1)
if not lease then return bad end
-- The intent too, before anything is written: an HSET of it followed by a
-- PEXPIRE that fails would leave it, stopping readers for good.
local intent = tonumber(ARGV[6]) or 0
if intent ~= math.floor(intent) or intent < 0 or intent > 2147483647 then
  return redis.error_reply('ERR rlock: intent out of range')
end
--@include "lib/rw_fields.lua"
--@include "lib/rw_intents.lua"
--@include "lib/rw_sweep.lua"
--@include "lib/rw_scan.lua"
--@include "lib/hold_reenter.lua"

-- "~s" once a hold with deadline x is taken beside n holds, sv the "~s"
-- before (lib/rw_sweep.lua).
local function sweep_in(sv, x, n)
  local cur, t = string.match(sv or '', '^(%d+) ?(%d*)$')
  -- No "~s" beside other holds: not ours to vouch for them, let a sweep run.
  if not cur then return n == 0 and '0 ' .. num(x) or '0' end
  t = tonumber(t)
  if cur == '0' and not t then return n == 0 and '0 ' .. num(x) or '0' end
  return cur .. ' ' .. num(t and math.min(t, x) or x)
end

local k, f, held, side = KEYS[1], ARGV[2], tonumber(ARGV[3]), ARGV[5]
if held > 0 then return reenter(k, f, held) end
local g = redis.call('hmget', k, '~n', '~w', '~wi', DELAY, '~s', f, dl(f))
local n, w, wi, state, d = tonumber(g[1]) or 0, g[2], g[3], g[5], tonumber(g[7])
local fields = 2 * n
for i = 1, 5 do if g[i] then fields = fields + 1 end end
-- Ours already (an acquire reported failed but applied late): taken.
local mine = g[6] and d and d > now
-- The hash as "~n" says, with no hold of ours past its deadline.
local known = not g[4] and not (g[6] and not mine) and redis.call('hlen', k) == fields
local wait, s, gone = nil, nil, {}
if mine then
elseif known and side == 'w' and n == 0 then
elseif known and side == 'r' then
  -- Our own thread's write hold lets it read, intents or not, while it
  -- lasts; a mark whose hold ran out sends us to the whole look.
  if w then
    local x = redis.call('hmget', k, w, dl(w))
    x = x[1] and tonumber(x[2])
    if not (x and x > now) then known = false
    elseif w .. ':r' ~= f then wait = x - now end
  else
    -- A waiting writer goes first: readers wait for its intent.
    local _, latest = intents(wi)
    if latest then wait = latest - now end
  end
  -- The writer, if any, is live: the sweep never drops it here.
  local sw = known and sweep(k, state, w)
  if sw then n, state, gone = n - sw.held, sw.state, sw.gone end
else
  known = false
end
if not known and not mine then
  s = scan(k, f, w)
  if not s then
    return redis.error_reply('ERR rlock: not a read-write lock of layout @RL__RW_LAYOUT@')
  end
  -- The sweep starts afresh from what the look saw (at once, when it left
  -- dead holds).
  n, gone = s.n, s.dead
  state = s.stale and '0' or s.soonest and '0 ' .. num(s.soonest)
  local first = s.soonest and s.soonest - now
  if s.undated then first = redis.call('pttl', k) end
  local own = s.writer and s.writer .. ':r' == f
  if s.delay then
    wait = redis.call('pttl', k)
  elseif side == 'w' then
    if s.owners > 0 then wait = first end
  elseif s.writer and not own then
    wait = first
  elseif not own then
    local _, latest = intents(wi)
    if latest then wait = latest - now end
  end
  -- Put right what the look found: holds past their deadline (ours, if it
  -- has one left, included), a writer's mark gone stale.
  if g[6] then gone[#gone + 1], gone[#gone + 2] = f, dl(f) end
  if w and not s.live[w] then gone[#gone + 1] = '~w' end
end
-- Fields to set (name, value pairs), then fields to delete: the delete
-- comes last, and leaves alone what was just set.
local put = {}
local function commit()
  local set, del = {}, {}
  for i = 1, #put, 2 do set[put[i]] = true end
  for _, x in ipairs(gone) do if not set[x] then del[#del + 1] = x end end
  if #put > 0 then redis.call('hset', k, unpack(put)) end
  return del
end
if wait then
  -- Beside read-write holds only. A plain holder's key (its owner, or its
  -- lock-delay) lasts as that holder's lease: an intent's expiry would
  -- lengthen it, keeping a dead holder's lock for as long as a writer
  -- waits, and a field more would keep the plain release from seeing
  -- itself the last (it counts the fields) and announcing it.
  local register = s and side == 'w' and intent > 0 and not s.undated and not s.delay
  if register then
    local rest = joined(intents(wi), f)
    put[1] = '~wi'
    put[2] = (rest ~= '' and rest .. ' ' or '') .. f .. ' ' .. num(now + intent)
  end
  if n > 0 then
    if n ~= tonumber(g[1]) then put[#put + 1], put[#put + 2] = '~n', n end
    if state and state ~= g[5] then put[#put + 1], put[#put + 2] = '~s', state end
  else
    if g[1] then gone[#gone + 1] = '~n' end
    if g[5] then gone[#gone + 1] = '~s' end
  end
  local del = commit()
  if register then keep(k, intent) end
  -- The key keeps a live field: what made us wait.
  if #del > 0 then redis.call('hdel', k, unpack(del)) end
  -- A deadline's wait is > 0; a plain holder's is its PTTL, -1 when the key
  -- has no expiry (not set by rlock): the client then waits a lease, as for
  -- the plain acquire, rather than ask again every millisecond.
  return {0, wait}
end
put = {f, '1 ' .. ARGV[4], dl(f), now + lease, '~n', mine and n or n + 1,
       '~s', sweep_in(state, now + lease, mine and n - 1 or n)}
if side == 'w' then
  put[9], put[10] = '~w', f
  local rest = joined(intents(wi), f)
  if rest ~= '' then put[11], put[12] = '~wi', rest
  elseif wi then gone[#gone + 1] = '~wi' end
end
local del = commit()
keep(k, lease)
if #del > 0 then redis.call('hdel', k, unpack(del)) end
return {1, 1}
