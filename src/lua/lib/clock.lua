-- now: Redis's own clock (ms), so that every host's waiters and holds are
-- judged alike, read at once (clock_lazy.lua reads it when first asked;
-- effects replication is asked for there, before any write).
--@include "lib/clock_lazy.lua"
tick()
