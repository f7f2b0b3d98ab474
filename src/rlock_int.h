/*
 * Every internal header at once, in the order of the layers, for the unit
 * tests and fuzzers that reach into the library. The library's own files
 * do not use it: each module's header (util.h, conn.h, holds.h, ...)
 * declares what other modules may use of it, each .c includes the headers
 * of the modules it uses, and common.h is what they all share. Nothing
 * here is exported: every symbol is hidden and uses the rl__ prefix.
 */
#ifndef RLOCK_INT_H
#define RLOCK_INT_H

#include "common.h"
#include "util.h"
#include "error.h"
#include "url.h"
#include "resp.h"
#include "reply.h"
#include "slot.h"
#include "topology.h"
#include "scripts.h"
#include "rwlock.h"
#include "thread.h"
#include "conn.h"
#include "command.h"
#include "server.h"
#include "router.h"
#include "holds.h"
#include "outcome.h"
#include "fair.h"
#include "stats.h"
#include "client.h"
#include "redlock.h"
#include "acquire.h"
#include "sentinel.h"
#include "owner.h"
#include "fork.h"
#include "watchdog.h"
#include "renew.h"
#include "keeper.h"
#include "subscriber.h"

#endif
