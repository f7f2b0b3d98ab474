-- The semaphore (src/semaphore.c says how its one key is kept).
--
-- Fields of the hash besides the holds ("<owner>" -> "<count> <since>",
-- fenced: "<count> <since> <token> <slots>", lib/sem_slots.lua),
-- all beginning with '~': "~N", the name's permit count; "~d:<field>", a
-- hold's deadline (Redis TIME, ms); "~k:<field>", the permits the hold
-- has. A hold past its deadline is gone for every script, as an expired
-- key is, and its permits with it. Everything lives in the one key, so
-- that a Cluster slot migration moves it whole and no script touches a key
-- it has not declared; no script touches the key after a change that may
-- have deleted it (an HDEL).

--@include "lib/clock.lua"

--@include "lib/hold_deadline.lua"
