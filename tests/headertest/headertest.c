/*
 * The public header, alone, as a user would include it. Built twice (C99
 * and C11) with -pedantic -Werror, so a header that needs a newer standard,
 * an extension or another include breaks the build.
 */
#include <rlock.h>

/* Touch the declarations so they are checked, not merely parsed. */
int rlock_headertest(void);

int rlock_headertest(void)
{
    rl_options opts;
    const char *(*version)(void) = rl_version;
    const char *(*strerror_fn)(int) = rl_strerror;

    (void)version;
    (void)strerror_fn;
    (void)opts;
    return RL_VERSION_HEX + RL_OK + RL_EBUSY + (int)RL_NAME_MAX +
        (int)sizeof(rl_client *) + (int)sizeof(rl_lock *) +
        (RL_WAIT_FOREVER < 0) + (RL_LEASE_WATCHDOG < 0);
}
