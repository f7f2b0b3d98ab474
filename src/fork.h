/*
 * fork.c: the client's identity, the registry of live clients, and the
 * fork child's rebuild.
 */
#ifndef RL_FORK_H
#define RL_FORK_H

#include "common.h"

/* A new identity for the client (a random UUID): at creation, and in a
 * fork child, which must not pass for its parent. */
void rl__identity_new(rl_client *c);
int rl__registry_add(rl_client *c);
void rl__registry_remove(rl_client *c);
int rl__registry_has(const rl_client *c);
int rl__registry_ref(rl_client *c);
void rl__rebuild_after_fork(rl_client *c);   /* mutex held */
/* In a fork child: close the socket of a connection that a thread of the
 * parent may have been using. Nothing is written or freed; its TLS link is
 * forgotten, so that a new socket on that descriptor is not taken for it. */
void rl__fork_close(int fd);

#endif
