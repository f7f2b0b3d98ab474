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
    rl_stats stats;
    const char *(*version)(void) = rl_version;
    const char *(*strerror_fn)(int) = rl_strerror;
    int (*stats_fn)(rl_stats *, rl_client *) = rl_client_stats;
    int (*list_fn)(rl_lock_list **, rl_client *, const char *, unsigned int) =
        rl_client_list_locks;
    int (*inspect_fn)(rl_lock_list **, rl_client *, const void *, size_t, unsigned int) =
        rl_client_inspect_lock;
    void (*list_free_fn)(rl_lock_list *) = rl_lock_list_free;
    int (*redact_fn)(char *, size_t, const char *) = rl_url_redact;
    rl_lock_list list;
    rl_lock_info info;
    rl_holder_info holder;

    (void)version;
    (void)strerror_fn;
    (void)stats_fn;
    (void)list_fn;
    (void)inspect_fn;
    (void)list_free_fn;
    (void)redact_fn;
    list.version = RL_INFO_VERSION;
    list.mode = RL_MODE_SENTINEL;
    info.kind = RL_KIND_RW;
    holder.side = RL_KIND_READ;
    (void)list;
    (void)info;
    (void)holder;
    (void)opts;
    stats.version = RL_STATS_VERSION;
    stats.wait_buckets[RL_STATS_WAIT_BUCKETS - 1] = 0;
    (void)stats;
    return RL_VERSION_HEX + RL_OK + RL_EBUSY + (int)RL_NAME_MAX +
        (int)sizeof(rl_client *) + (int)sizeof(rl_lock *) +
        (RL_WAIT_FOREVER < 0) + (RL_LEASE_WATCHDOG < 0);
}
