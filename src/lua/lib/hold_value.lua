-- A hold's value in the lock hash is "<count> <since>": the reentry count,
-- a space, and the holder's CLOCK_REALTIME in ms when the hold was created
-- (count 1). Reentry and a release that leaves count > 0 keep the suffix
-- (and with it a fencing token, "<count> <since> <token>": acquire.lua).
-- A bare "<count>" (older clients, values planted by hand) is accepted
-- everywhere a value is read: only the leading integer counts (count()).
-- The suffix is for operators (`rlock list`); nothing decides on it.

-- The count of a hold's value v ("<count>" or "<count> <since>"), and the
-- suffix a rewrite keeps (" <since>" or "").
local function count(v) return tonumber(string.match(v, '^%d+')) end
local function suffix(v) return string.match(v, ' .*$') or '' end
