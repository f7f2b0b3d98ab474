-- The semaphore (src/semaphore.c says how its one key is kept).
--
-- Fields of the hash besides the holds ("<owner>" -> "<count> <since>",
-- fenced: "<count> <since> <token> <slots>", lib/sem_slots.lua),
-- all beginning with '~': "~N", the name's permit count; "~d:<field>", a
-- hold's deadline (Redis TIME, ms); "~k:<field>", the permits the hold
-- has (none: 1). A hold past its deadline is gone for every script, as an
-- expired key is, and its permits with it. A hold without "~d:" has the
-- key's expiry for deadline: the first hold on a free name is written so,
-- with no clock asked, alone in a key whose PEXPIRE is its lease; every
-- script that moves the key's expiry gives it a "~d:" first (another's new
-- hold the key's PTTL, its own reentry, renewal or release now + lease).
-- Everything lives in the one key, so that a Cluster slot migration moves
-- it whole and no script touches a key it has not declared; no script
-- touches the key after a change that may have deleted it (an HDEL, a DEL).

--@include "lib/clock_lazy.lua"

--@include "lib/hold_deadline.lua"
--@include "lib/hold_undated.lua"
