/*
 * rlock — reentrant distributed locks for multithreaded C, arbitrated by Redis.
 *
 * One lock per name, shared by every thread of every process that talks to
 * the same Redis. A lock is owned by the *thread* that took it, may be taken
 * again by that thread (reentry), is kept alive by one watchdog thread per
 * client, and tells its holder when it can no longer promise exclusion:
 * rl_interrupted() turns true as soon as a lease of the calling thread is
 * lost or can no longer be proven to hold.
 *
 * Conventions, for every function below:
 *   - Functions return an int status: RL_OK (0) or a negative RL_E* code.
 *     rl_strerror() names a status; rl_last_error() carries the detail (the
 *     Redis or system message) of the last failure on the calling thread.
 *   - Output parameters come first and are named `out`.
 *   - Every *_free() accepts NULL.
 *   - Strings passed in are copied; the caller keeps ownership of its memory.
 *   - Bad input returns RL_EINVAL and changes nothing, in memory or in Redis.
 *   - The library never prints; it reports through the optional log callback.
 *     It never logs a password.
 *
 * Threads: rl_client and rl_lock objects are thread-safe; any thread may use
 * them at any time between their creation and their *_free(). A hold belongs
 * to the calling thread: only that thread can release it.
 *
 * fork(): the child process is a new owner. It holds nothing, inherits none
 * of the parent's threads or connections, and can keep using the clients
 * and lock handles it inherited; they reconnect on first use.
 */
#ifndef RLOCK_H
#define RLOCK_H

#include <stddef.h>

#include "rlock/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  define RL_EXTERN
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define RL_EXTERN __attribute__((visibility("default")))
#else
#  define RL_EXTERN
#endif

/** A connection to one Redis deployment, shared by all threads of a process. */
typedef struct rl_client rl_client;

/** A handle on one lock name. Cheap; many threads may share one handle. */
typedef struct rl_lock rl_lock;

/** Pass as wait_ms to wait as long as it takes. */
#define RL_WAIT_FOREVER (-1L)

/** Pass as lease_ms to have the watchdog keep the lease alive until release. */
#define RL_LEASE_WATCHDOG (-1L)

/** Shortest fixed lease, in ms: below it the safety margin would eat the lease. */
#define RL_LEASE_MIN_MS 10

/**
 * Longest lease, wait and option time, in ms (about 24.8 days; fits a
 * 32-bit long). Larger values are refused with RL_EINVAL and nothing is
 * written; wait as long as it takes with RL_WAIT_FOREVER.
 */
#define RL_TIME_MAX_MS 2147483647L

/** Longest lock name, in bytes. */
#define RL_NAME_MAX 1024

/*
 * Status codes. Never renumbered; new codes are only ever added.
 */
#define RL_OK         0   /* success */
#define RL_EBUSY     (-1) /* held by another owner and wait_ms was 0 */
#define RL_ETIMEDOUT (-2) /* the wait ran out before the lock came free */
#define RL_ENOTOWNER (-3) /* the calling thread does not hold this lock */
#define RL_ELOST     (-4) /* the calling thread held it, but its lease was lost */
#define RL_EINVAL    (-5) /* bad argument (NULL, a client pointer already freed) */
#define RL_ENOMEM    (-6) /* out of memory */
#define RL_ECONN     (-7) /* Redis could not be reached, or stopped answering */
#define RL_EREDIS    (-8) /* Redis answered with an error; see rl_last_error() */
#define RL_EPROTO    (-9) /* Redis state disagrees with what the protocol allows */
#define RL_EAUTH     (-10) /* Redis refused the credentials */
#define RL_ECANCELED (-11) /* the client was shut down: during the call, or before
                              it (calls on it or its handles: 0.1 said RL_EINVAL) */
#define RL_EREPLICA  (-12) /* too few replicas acknowledged the acquisition in time:
                              it was undone (rl_options.wait_replicas) */
#define RL_ENOTSUP   (-13) /* not available in this mode, for this kind of lock, or
                              with these options; see the call's documentation */
#define RL_ETLS      (-14) /* TLS failed: the server's certificate could not be
                              verified, or the server would not complete the TLS
                              handshake (it needs a client certificate, or does not
                              speak TLS); see rl_last_error() */

/* Log levels passed to rl_options.log. */
#define RL_LOG_ERROR 0
#define RL_LOG_WARN  1
#define RL_LOG_INFO  2
#define RL_LOG_DEBUG 3

/** The layout version of rl_options this header describes. */
#define RL_OPTIONS_VERSION 5

/**
 * Settings of a client. Fill it with rl_options_init(), then change what you
 * need. Fields are only ever appended; `version` tells the library which
 * layout you compiled against.
 */
typedef struct rl_options {
    unsigned int version;       /* RL_OPTIONS_VERSION, set by rl_options_init() */

    /*
     * Where Redis is: "redis://[[user]:pass@]host[:port][/db]" or
     * "unix:///path/to/socket[?db=N]". NULL: "redis://127.0.0.1:6379".
     * IPv6 hosts go in brackets: "redis://[::1]:6379". User and password
     * are percent-decoded. Copied by rl_client_new().
     *
     * Redis Cluster: the URL of any node, or up to 16 seeds separated by
     * commas ("redis://h1:p1,h2:p2"; the first that answers is asked for
     * the slot map). Cluster mode is detected by itself; the user needs
     * +cluster|slots.
     *
     * Redlock: "redlock://[[user]:pass@]h1:p1,h2:p2,h3:p3[/db]", an odd
     * number (3..9) of independent masters; a lock is held when a majority
     * granted it. Credentials and database are the same on every master.
     *
     * Sentinel: "sentinel://[[user]:pass@]s1[:port][,s2[:port]...]/name[/db]":
     * sentinels (port 26379 by default) asked, in turn, for the primary
     * they know as `name`; the credentials and the database are the
     * primary's (the sentinels are asked without credentials). A failover
     * is followed by itself.
     *
     * TLS: "rediss://" for redis:// (one server, or a Cluster's nodes, all
     * on TLS ports: tls-cluster yes), "redlocks://" for redlock:// (every
     * master), "sentinels://" for sentinel:// (the sentinels and the
     * primary); the same grammar otherwise. See the tls_* options.
     */
    const char *url;

    /* Prefix of every key rlock writes. NULL: "rl:". Copied. */
    const char *key_prefix;

    /* Lease of watchdog-kept locks, in ms (RL_LEASE_MIN_MS..RL_TIME_MAX_MS).
     * 0: 30000. */
    long lease_ms;

    /*
     * How often the watchdog renews, in ms. 0: lease_ms / 3. A hold taken
     * just after a renewal must be renewed, reply included, before its
     * lease less the drift margin (lease/100 + 2 ms) runs out, so:
     * renew_interval_ms + min(command_timeout_ms, renew_interval_ms)
     * <= lease_ms - margin, else rl_client_new() returns RL_EINVAL.
     */
    long renew_interval_ms;

    /* Time allowed to connect, and to wait for one reply, in ms
     * (at most RL_TIME_MAX_MS). 0: 2000 each. */
    long connect_timeout_ms;
    long command_timeout_ms;

    /* Connections kept for application threads. 0: 8. */
    int pool_size;

    /*
     * Called once for each hold whose lease was lost or could no longer be
     * proven while its thread held it, including the holds still held when
     * the client is shut down: from the watchdog thread, or from the thread
     * that calls rl_client_shutdown() / rl_client_free(). (A loss that the
     * holder learns first from rl_lock_release(), as RL_ELOST, may not be
     * reported here too.) `name` is not NUL-terminated
     * and is valid only during the call. Must not block for long and must
     * not call rl_client_shutdown() or rl_client_free(). May be NULL.
     */
    void (*on_lost)(const char *name, size_t name_len, void *payload);

    /*
     * Receives the library's diagnostics, from any of its threads, with one
     * of the RL_LOG_* levels. `message` is valid only during the call. It
     * may be called with internal locks held: it must not call rlock
     * functions, and should return quickly. May be NULL: nothing is reported.
     */
    void (*log)(int level, const char *message, void *payload);

    /* Passed back to on_lost and log. */
    void *payload;

    /* ---- version 2 ---- */

    /*
     * Replica acknowledgement (single server, Cluster, Sentinel; not
     * Redlock). When > 0, each acquisition, reentry and renewal is followed
     * by WAIT: until this many replicas of the server have it, at most
     * wait_replicas_ms. An acquisition or reentry not acknowledged in time
     * is undone and returns RL_EREPLICA (never RL_OK); a renewal not
     * acknowledged does not count as confirmed, so a hold whose replicas
     * stay behind is flagged at its confirmed expiry. 0: off.
     */
    int wait_replicas;
    /* ...waiting at most this long, in ms (1..RL_TIME_MAX_MS). 0: 1000. */
    long wait_replicas_ms;

    /* ---- version 3 ---- */

    /*
     * A human name for this client ("billing-worker"), shown to operators:
     * in the owner record that `rlock list` reads and in the name of every
     * connection (CLIENT LIST). 1..RL_CLIENT_NAME_MAX bytes of
     * [A-Za-z0-9._-]; anything else returns RL_EINVAL from
     * rl_client_new(). NULL: none ("-"). Copied.
     *
     * Whatever the name, each client writes an owner record
     * `<prefix>owner:{<uuid>}` (a hash: host, pid, name, started, version;
     * never a password), refreshed by the watchdog while it holds locks,
     * and names its connections
     * "rlock:<name or ->:<host>:<pid>:<first 8 chars of the uuid>".
     */
    const char *client_name;

    /* ---- version 4 ---- */

    /*
     * Fencing tokens (rl_lock_token()). When non-zero, every new
     * acquisition of a name through this client (not a reentry) is handed
     * a token greater than every token handed out for that name before,
     * by any client with fencing on, counted in a key
     * `<prefix>{<name>}:fence` that never expires (about 60 bytes per
     * name ever fenced: leave it off for names made up per request).
     * Tokens go up to 2^53; past it an acquisition returns RL_EREDIS.
     * While a Redis Cluster slot migrates, a fenced new acquisition of a
     * name of that slot can fail (RL_ECONN or RL_EREDIS): Redis refuses a
     * script with two keys until both have moved. Single server, Cluster and Sentinel; a redlock:// URL
     * returns RL_ENOTSUP from rl_client_new() (independent masters keep
     * no one counter). Plain locks and semaphores (a semaphore's hold also
     * gets numbered permit slots: rl_semaphore_slots()); a client with
     * fencing refuses fair and read-write handles (RL_ENOTSUP). 0: off.
     */
    int fencing;

    /*
     * Lock-delay, in ms (0..RL_TIME_MAX_MS). When a hold taken through this
     * client is lost rather than released (its lease ran out, it was
     * flagged and then given up with RL_ELOST, it was force-released, or it
     * was still held at shutdown), nobody may take the name until this long
     * after the lease ran out or the hold was given up (force-released:
     * after the lease it had left, by when its flag has risen): a late
     * write of the old holder then cannot land inside the next holder's
     * section, if it comes within the delay. A clean rl_lock_release() (before the lease
     * ran out) ends it at once; once the lease has run out in Redis the
     * hold is gone for its holder too (release returns RL_ELOST).
     * Waiters sleep until the delay is over. Kept in the lock's own key
     * (Redis keeps it for the lease plus the delay; a lost hold leaves a
     * field "~delay" alone in it for the delay), so every client of the
     * name honours it, whatever its own setting; rl_lock_ttl() and
     * rl_lock_is_locked() count the delay. lease_ms plus the delay must
     * be at most RL_TIME_MAX_MS, else rl_client_new() returns RL_EINVAL
     * (and rl_lock_try_acquire() refuses a lease_ms of its own past it).
     * Single server, Cluster and Sentinel; a redlock:// URL returns
     * RL_ENOTSUP from rl_client_new(). 0: off.
     */
    long lock_delay_ms;

    /* ---- version 5 ---- */

    /*
     * TLS, for a URL that asks for it: "rediss://" (one server or a
     * Cluster; a Cluster's nodes must run tls-cluster yes), "redlocks://"
     * (every master) or "sentinels://" (the sentinels and the primary
     * alike). The server's certificate is verified, by default against the
     * system's trust store and the host of the URL (or of the node the
     * Cluster or the sentinels named). A failed verification or handshake
     * returns RL_ETLS, rl_last_error() saying why. Giving any of these with
     * a URL without TLS returns RL_EINVAL. All copied or read at creation.
     */
    const char *tls_ca_file;    /* PEM file of the CAs to trust (NULL: the system's) */
    const char *tls_ca_dir;     /* or a directory of them (c_rehash layout) */
    const char *tls_cert_file;  /* mutual TLS: the client's certificate chain (PEM)... */
    const char *tls_key_file;   /* ...and its key (PEM, unencrypted); both or neither */
    /* The name sent (SNI) and checked in every server's certificate instead
     * of the host connected to: for servers reached by address whose
     * certificates name a service ("redis.example.com"). NULL: the host. */
    const char *tls_server_name;
    /*
     * DANGER: non-zero turns certificate verification off: anyone on the
     * path can pose as the server, read the traffic (the password
     * included) and grant or take locks. For a test bench only; logged at
     * RL_LOG_WARN on every client created with it. 0: verify.
     */
    int tls_insecure_skip_verify;
} rl_options;

/** Longest rl_options.client_name, in bytes. */
#define RL_CLIENT_NAME_MAX 64

/**
 * Fill `opts` with the defaults for the layout `version` describes: pass
 * RL_OPTIONS_VERSION, the version of the header you compiled against.
 * Only the fields of that layout are written, so a program built against
 * an older header never has its struct overrun by a newer library; a newer
 * library reads only those fields too (rl_client_new()).
 * Returns RL_OK, or RL_EINVAL (opts NULL; version 0 or newer than this
 * library knows). Thread-safe.
 */
RL_EXTERN int rl_options_init(rl_options *opts, unsigned int version);

/**
 * Create a client and connect it: the URL is parsed, one connection is made,
 * authenticated and checked, and rlock's scripts are loaded.
 *
 * `opts` may be NULL for the defaults. It is read during the call only.
 * Returns RL_OK and sets *out; on error *out is left untouched and the
 * status says why: RL_EINVAL (bad option, unknown version, unparsable URL),
 * RL_ECONN (unreachable), RL_EAUTH (credentials refused), RL_EREDIS,
 * RL_EPROTO (the peer does not speak the Redis protocol), RL_ENOMEM.
 *
 * When the Redis user may not PUBLISH or SUBSCRIBE on rlock's release
 * channels (an ACL user without channel rights), the client still works:
 * this is logged once at RL_LOG_ERROR, and waiters then ask Redis again at
 * a bounded interval (10 ms doubling to 250 ms, never later than the
 * holder's lease) instead of waiting for release notices.
 * Thread-safe. Free with rl_client_free().
 */
RL_EXTERN int rl_client_new(rl_client **out, const rl_options *opts);

/**
 * Shut the client down, for a graceful exit (e.g. on SIGTERM):
 *   1. every thread waiting in rl_lock_try_acquire() through it returns
 *      RL_ECANCELED at once, and so do calls that start from now on;
 *   2. calls in flight are waited for (each is bounded by the command
 *      timeout);
 *   3. every hold still held through it is flagged (on_lost is called for
 *      it), then released in Redis, and the client's threads and
 *      connections are stopped.
 * A thread that held a lock sees rl_interrupted() return 1 once, after
 * which the stale hold is forgotten; that includes the calling thread.
 * A call in flight that finishes during the shutdown reports what it did
 * (a release that was applied returns RL_OK); an acquisition that
 * completes then returns RL_ECANCELED and is released by the shutdown.
 * Once the shutdown has returned, every call on the client or its handles
 * returns RL_ECANCELED (rl_last_error(): "the client was shut down ...";
 * rlock 0.1 returned RL_EINVAL), except rl_lock_free() and rl_client_free() (which
 * free), rl_lock_interrupted() / rl_interrupted() (which report the
 * lost holds) and rl_client_stats() (which reports what the client did).
 * Safe from any thread, including one that only waits for a signal, and
 * more than once. Must not be called from on_lost or log.
 * Returns RL_OK, or RL_EINVAL when client is NULL or already freed.
 */
RL_EXTERN int rl_client_shutdown(rl_client *client);

/**
 * Shut the client down (rl_client_shutdown()) and free it. Calls in flight
 * on other threads are waited for and fail; lock handles created from it
 * stay valid memory until each is freed with rl_lock_free(), and any other
 * call on them returns RL_ECANCELED. Accepts NULL and a client freed
 * already.
 */
RL_EXTERN void rl_client_free(rl_client *client);

/**
 * Create a handle on the lock `name` (NUL-terminated, 1..RL_NAME_MAX bytes).
 * No I/O. The name is copied. Free with rl_lock_free(). Thread-safe.
 * RL_ECANCELED on a client shut down (not yet freed; a freed one:
 * RL_EINVAL).
 */
RL_EXTERN int rl_lock_new(rl_lock **out, rl_client *client, const char *name);

/** As rl_lock_new(), for a binary name of `len` bytes (1..RL_NAME_MAX). */
RL_EXTERN int rl_lock_new_bin(rl_lock **out, rl_client *client,
                              const void *name, size_t len);

/* Kinds of lock, chosen when a handle is made (rl_lock_new_kind()). */
#define RL_KIND_PLAIN 0 /* exclusive; rl_lock_new() */
#define RL_KIND_FAIR  1 /* exclusive, granted in order of arrival across processes */
#define RL_KIND_READ  2 /* the shared side of a read-write lock */
#define RL_KIND_WRITE 3 /* the exclusive side of a read-write lock */

/*
 * RL_KIND_FAIR: waiters are served in the order they reached Redis, across
 * processes (within one process, in the order of their calls). A waiter's
 * place runs out 2 s after its process stopped renewing it (it renews it
 * every 500 ms while it waits), so a waiter that dies or is stopped holds
 * the others back for about that long at most; one that is let go on
 * queues again. A wait that ends without the lock leaves the queue; a
 * wait_ms of 0 never queues. Every process must open the name as fair for
 * the order to hold. Not offered by Redlock clients.
 */

/**
 * As rl_lock_new_bin(), for a lock of the given kind. Every rl_lock_*
 * call works on the handle as on a plain one. One client opens a name as
 * one family only: plain, fair, or read-write (READ and WRITE handles on
 * one name are the two sides of one lock). Returns RL_OK; RL_EINVAL for a
 * bad argument, an unknown kind, or a name this client has open (handles
 * or holds) as another family; RL_ENOTSUP when the client's mode does not
 * offer the kind, or when the client has rl_options.fencing or
 * lock_delay_ms (both are the plain lock's so far; the semaphore offers
 * fencing, rl_semaphore_slots()); RL_ENOMEM.
 *
 * Read-write locks (RL_KIND_READ, RL_KIND_WRITE; not offered by a
 * Redlock client: RL_ENOTSUP): any number of threads, of any processes,
 * hold the read side together; a thread holding the write side holds it
 * alone. Each side is reentrant per thread (rl_lock_hold_count() counts
 * the handle's side). A thread holding the write side may also take the
 * read side, and keeps it when it releases the write side (downgrade).
 * A thread holding only the read side that asks for the write side gets
 * RL_EBUSY at once, whatever its wait (it would wait for itself). A
 * writer that waits stops new readers (not reentries) until it gets the
 * lock; see src/README.md for the bound. A plain lock on the same name in
 * another client excludes both sides, and both sides exclude it.
 */
RL_EXTERN int rl_lock_new_kind(rl_lock **out, rl_client *client,
                               const void *name, size_t len, int kind);

/* ---- semaphores --------------------------------------------------------- */

/* The kind of a semaphore's handle (rl_semaphore_new(); not taken by
 * rl_lock_new_kind(), which has no permit count: RL_EINVAL). 5, not 4:
 * RL_KIND_RW (4) is rl_lock_info.kind of a read-write lock. */
#define RL_KIND_SEMAPHORE 5
/* The largest permit count of a semaphore. */
#define RL_SEMAPHORE_MAX 2147483647

/**
 * A handle on the semaphore `name` (binary, `len` bytes, 1..RL_NAME_MAX)
 * with `permits` permits (N, 1..RL_SEMAPHORE_MAX): up to N permits are
 * held at once, by threads of any processes, each hold taking k of them
 * (rl_semaphore_acquire(); rl_lock_try_acquire() and rl_lock_acquire()
 * take 1). Every rl_lock_* call works on the handle: a hold is reentrant
 * per thread (rl_lock_hold_count() counts its levels), kept alive by the
 * watchdog and flagged (rl_interrupted(), on_lost) like a lock's, and its
 * last release gives its permits back. A holder that dies or is stopped
 * loses its permits when its lease runs out, with nobody else acting.
 *
 * N is the name's in Redis while it has live holds: a handle that says
 * another gets RL_EINVAL at acquisition (the words name both counts) and
 * changes nothing; the first acquisition on a free name sets it.
 *
 * Returns RL_OK; RL_EINVAL for a bad argument, or a name this client has
 * open as another kind of lock or with another permit count; RL_ENOTSUP
 * for a Redlock client (a permit count split over independent masters is
 * not built) and for a client with lock_delay_ms (the plain lock's so
 * far); RL_ENOMEM. With rl_options.fencing each new hold takes a token and
 * numbered permit slots (rl_semaphore_slots()). Thread-safe; free the
 * handle with rl_lock_free().
 */
RL_EXTERN int rl_semaphore_new(rl_lock **out, rl_client *client,
                               const void *name, size_t len, unsigned permits);

/**
 * Take k permits (1..N) of the semaphore for the calling thread, waiting
 * up to wait_ms (0: do not wait; RL_WAIT_FOREVER) with a lease of lease_ms
 * (RL_LEASE_WATCHDOG: renewed by the watchdog), as rl_lock_try_acquire().
 * A thread that holds the semaphore enters its hold again (one more level,
 * no more permits) when it asks the same k; another k is RL_EINVAL and
 * changes nothing. A waiter is woken by releases (which say how many
 * permits they gave back) or by the first holder's lease running out,
 * without polling.
 *
 * Returns RL_OK; RL_EBUSY (wait_ms 0 and too few permits free);
 * RL_ETIMEDOUT; RL_ECANCELED (the client shut down); RL_EINVAL for a
 * handle that is not a semaphore's, k out of 1..N, bad wait_ms or
 * lease_ms, another k than the thread holds, or another N than the name's
 * live holds were taken with; the statuses of rl_lock_try_acquire()
 * otherwise. Thread-safe.
 */
RL_EXTERN int rl_semaphore_acquire(rl_lock *sem, unsigned k, long wait_ms, long lease_ms);

/**
 * The permit slots of the calling thread's hold of the semaphore, with a
 * client made with rl_options.fencing: into slots[0..*n-1] (*n is k, the
 * permits held), numbers 0..N-1. A hold with fencing takes k slots (the
 * lowest that no live hold has) and one fencing token (rl_lock_token(),
 * strictly rising across all holds of the name), so every later holder
 * of a slot has a larger token: a resource keeps the largest token it
 * accepted per slot and refuses a lower one for that slot. Slots of live
 * holds never overlap; a reentry keeps them. With fencing a hold takes at
 * most 16 permits (rl_semaphore_acquire(): RL_EINVAL beyond). No I/O.
 * Returns RL_OK; RL_ENOTOWNER (the thread does not hold it); RL_ENOTSUP
 * (no fencing); RL_EPROTO (the hold's value in Redis carries no slots);
 * RL_EINVAL (NULL, not a semaphore's handle, or cap < k: then *n is k and
 * nothing is copied); RL_ECANCELED (a client shut down). Owner thread.
 */
RL_EXTERN int rl_semaphore_slots(const rl_lock *sem, unsigned *slots, unsigned cap,
                                 unsigned *n);

/**
 * Free a handle. Holds taken through it stay held: they belong to threads,
 * not to handles, and another handle on the same name can release them.
 * Must not race with other calls on the same handle. Accepts NULL.
 */
RL_EXTERN void rl_lock_free(rl_lock *lock);

/**
 * Take the lock for the calling thread, waiting as long as it takes, with a
 * watchdog lease. Same as rl_lock_try_acquire(lock, RL_WAIT_FOREVER,
 * RL_LEASE_WATCHDOG).
 */
RL_EXTERN int rl_lock_acquire(rl_lock *lock);

/**
 * Take the lock for the calling thread.
 *
 * wait_ms: 0 tries once; > 0 waits up to that long; RL_WAIT_FOREVER waits
 * as long as it takes. Waiting sleeps until the holder releases (a release
 * notice from Redis, or from a thread of this process) or the holder's
 * lease runs out; it never polls at a fixed interval.
 *
 * wait_ms: 0 to RL_TIME_MAX_MS, or RL_WAIT_FOREVER.
 *
 * lease_ms: RL_LEASE_WATCHDOG keeps the lease alive until release; a value
 * in RL_LEASE_MIN_MS..RL_TIME_MAX_MS sets a fixed lease that is never
 * renewed (the lock frees itself when it runs out, and the hold counts as
 * lost from then on); with the client's lock_delay_ms, at most
 * RL_TIME_MAX_MS less the delay (else RL_EINVAL, nothing sent). The hold
 * counts as lost a margin (lease/100 + 2 ms) before the lease can run out
 * in Redis.
 *
 * A thread that already holds the lock takes it again at once (reentry):
 * the hold count rises by one and the lease is refreshed; the hold keeps
 * the lease kind of its first acquisition.
 *
 * Returns:
 *   RL_OK        taken (or re-entered);
 *   RL_EBUSY     wait_ms 0 and held by another owner (or queued threads of
 *                this process come first);
 *   RL_ETIMEDOUT the wait ran out while the lock was held by another;
 *   RL_ECONN     Redis could not be reached: on a one-shot try, or when a
 *                wait ran out while Redis was unreachable (waits ride out
 *                outages until their deadline). On reentry: either nothing
 *                was sent (the hold is untouched), or the outcome could not
 *                be read back (the hold is then flagged as lost, and its
 *                count is unchanged);
 *   RL_ELOST     reentry into a hold whose lease was lost;
 *   RL_EREPLICA  wait_replicas is set and too few replicas acknowledged in
 *                time: the acquisition was undone and the lock is not held
 *                (on reentry: the hold stands as it was);
 *   RL_ECANCELED the client was shut down, during the call or before it;
 *   RL_EREDIS    Redis refused the script (e.g. WRONGTYPE: a key of the
 *                name is not rlock's, and rl_last_error() names it and the
 *                lock, here and from the release calls; NOPERM: the user
 *                may not touch the key);
 *   RL_EPROTO    Redis holds a count this thread did not expect, or the
 *                peer's reply cannot be understood (the hold, if any, is
 *                then flagged);
 *   RL_EINVAL    bad argument;
 *   RL_ENOMEM.
 * Thread-safe.
 */
RL_EXTERN int rl_lock_try_acquire(rl_lock *lock, long wait_ms, long lease_ms);

/**
 * Release one hold of the calling thread. The last release deletes the lock
 * in Redis and wakes its waiters. A release notice that Redis refuses to
 * send (no channel rights) does not fail a release that was applied.
 *
 * Returns:
 *   RL_OK        released;
 *   RL_ENOTOWNER the calling thread does not hold it (nothing changes);
 *   RL_ELOST     the thread held it but the lease was lost, or may have
 *                run out before the release reached Redis, or Redis became
 *                unreachable and the outcome is unknown: the hold count
 *                still drops, and rlock never deletes a lock that another
 *                owner has taken since (a field of ours that may remain is
 *                removed as soon as Redis answers again);
 *   RL_ECONN     Redis could not be reached and nothing was sent: the hold
 *                is unchanged, call again;
 *   RL_EREDIS    Redis refused the script (nothing changed): the hold is
 *                unchanged;
 *   RL_EPROTO    Redis holds another count than expected: the hold is
 *                flagged as lost and unchanged;
 *   RL_ECANCELED the client is being shut down (the shutdown releases it),
 *                or was shut down before the call;
 *   RL_EINVAL    NULL;
 *   RL_ENOMEM.
 * Thread-safe.
 */
RL_EXTERN int rl_lock_release(rl_lock *lock);

/**
 * Delete the lock in Redis whoever holds it, and wake its waiters. Holders
 * in this process (through this client) whose field the delete removed are
 * flagged at once, including a thread whose acquisition raced with it;
 * holders in other processes at their watchdog's next renewal, or when
 * their fixed lease runs out. A holder whose client has a lock_delay_ms
 * loses its hold at once, but the name stays blocked for what was left of
 * its lease plus the delay (by then its flag has risen, and the delay has
 * gone by since); forcing the name again while only that block is left
 * ends it. Meant for operators and recovery tools. Returns RL_OK (also
 * when the lock was free), RL_ECONN, RL_EREDIS (WRONGTYPE: not an rlock
 * key, named in rl_last_error()), RL_EPROTO, RL_ECANCELED (a client shut
 * down), RL_EINVAL. Thread-safe.
 */
RL_EXTERN int rl_lock_force_release(rl_lock *lock);

/**
 * How many times the calling thread holds the lock (0: not held).
 * No I/O. Returns RL_EINVAL for NULL, RL_ECANCELED for a client shut down.
 */
RL_EXTERN int rl_lock_hold_count(const rl_lock *lock);

/**
 * The fencing token of the calling thread's hold of this lock, into *out:
 * the number its acquisition was handed (a reentry keeps it); of a
 * semaphore's hold, one token for its permits (see rl_semaphore_slots()
 * for how a resource checks it per slot). Pass it with
 * every write to the resource the lock guards, and have the resource
 * refuse a token lower than the highest it has accepted: a holder that
 * stalled past its lease (a pause, swap, SIGSTOP) is then refused even
 * when it writes without checking rl_interrupted() first (examples/fencing.c).
 * Tokens of a name rise strictly across releases, expiries and client
 * restarts while Redis keeps its data (with Sentinel: while a failover
 * keeps the primary's writes; set wait_replicas for that). No I/O.
 * Returns RL_OK; RL_ENOTOWNER (the thread does not hold it); RL_ENOTSUP
 * (the client was made without rl_options.fencing); RL_EPROTO (the hold's
 * value in Redis carries no token: written by hand); RL_EINVAL (NULL);
 * RL_ECANCELED (a client shut down); *out is set only on RL_OK. A hold flagged as lost
 * keeps its token: the resource decides.
 */
RL_EXTERN int rl_lock_token(unsigned long long *out, const rl_lock *lock);

/**
 * Whether anyone (any thread, any process) holds the lock now: 1 or 0, or
 * RL_ECONN, RL_EREDIS, RL_EPROTO, RL_ECANCELED, RL_EINVAL. One round trip.
 */
RL_EXTERN int rl_lock_is_locked(rl_lock *lock);

/**
 * The lease left on the lock in Redis, in ms, into *out: -2 when the lock
 * is free, -1 when it has no expiry. One round trip. Returns RL_OK, or
 * RL_ECONN, RL_EREDIS, RL_EPROTO, RL_ECANCELED, RL_EINVAL (*out untouched).
 */
RL_EXTERN int rl_lock_ttl(long *out, rl_lock *lock);

/**
 * 1 when the calling thread holds this lock and its lease was lost or can
 * no longer be proven to hold, or held it through a client that has been
 * shut down since (until rl_interrupted() has reported that); else 0.
 * RL_EINVAL (negative) only for NULL. No I/O.
 */
RL_EXTERN int rl_lock_interrupted(const rl_lock *lock);

/**
 * 1 when any lock held by the calling thread, through any client, has lost
 * its lease or can no longer be proven to hold; else 0. No I/O, no lock
 * taken: atomic loads and one monotonic clock read, cheap enough for the
 * inside of long loops. Does not depend on the watchdog thread running.
 */
RL_EXTERN int rl_interrupted(void);

/* ---- Several names at once: all or nothing (src/lockset.c) */

/** A set of lock handles taken and released together. */
typedef struct rl_lockset rl_lockset;

/** Most members of one set. */
#define RL_LOCKSET_MAX 64

/**
 * Make a set of `n` (1..RL_LOCKSET_MAX) existing handles, all of one
 * client, of any kinds (plain, fair, read, write, semaphore: the set takes
 * one permit of it), into *out. The set keeps handles of its own on the
 * same names and kinds, in its own order: every set of every process sorts
 * its members the same way (by the name's bytes, then the write side
 * before the read side), so that sets sharing names never wait on each
 * other in a circle. The caller's handles stay the caller's, and may be
 * freed before the set. No I/O. Returns RL_OK; RL_EINVAL (out or locks NULL, a
 * NULL member, n out of range, members of two clients, one name and side
 * twice), RL_ECANCELED (their client shut down or freed: as any call on
 * its handles), RL_ENOMEM;
 * *out is set only on RL_OK. Thread-safe; like a handle, a set may be used
 * by many threads at once, each taking it for itself.
 */
RL_EXTERN int rl_lockset_new(rl_lockset **out, rl_lock *const *locks, size_t n);

/**
 * Take every member for the calling thread, or none: members are taken
 * one after another in the set's order, each with lease_ms (as
 * rl_lock_try_acquire()) and what is left of one deadline, wait_ms from
 * the call (0: each member is tried once; RL_WAIT_FOREVER). A member the
 * thread holds already is re-entered. When a member fails, the members
 * this call took are given back in reverse order, each hold count back
 * where it was (a give-back that fails leaves its hold flagged as lost and
 * our field to be dropped when Redis answers, as a release whose outcome is
 * unknown does); the call returns that member's status and
 * rl_last_error() names it. The set's members are held together by the
 * caller, not atomically in Redis: between two members' acquisitions
 * another client may see the first held and the second free.
 *
 * Returns RL_OK (all held); RL_EBUSY (wait_ms 0 and a member held by
 * another owner); RL_ETIMEDOUT (the deadline passed before every member
 * was taken); or the failing member's RL_ECONN, RL_ELOST, RL_EREPLICA,
 * RL_ECANCELED, RL_EREDIS, RL_EPROTO, RL_ENOMEM (see
 * rl_lock_try_acquire()); RL_ELOST too when a member taken first lost its
 * lease before the last was taken (a fixed lease shorter than the wait, an
 * outage), everything given back; RL_EINVAL (bad argument: nothing taken).
 * Holding other names while taking a set, outside its order, is not
 * covered by the order. Thread-safe.
 */
RL_EXTERN int rl_lockset_try_acquire(rl_lockset *set, long wait_ms, long lease_ms);

/** rl_lockset_try_acquire(set, RL_WAIT_FOREVER, RL_LEASE_WATCHDOG). */
RL_EXTERN int rl_lockset_acquire(rl_lockset *set);

/**
 * Release one hold of every member, in reverse order; every member is
 * tried, and every member's hold count drops by one whatever the status
 * (a member whose release fails is flagged as lost and given up, our
 * field dropped when Redis answers; a client being shut down releases
 * them itself). Returns RL_OK, or the first failure (RL_ELOST, RL_ECONN,
 * RL_EREDIS, RL_EPROTO, RL_ECANCELED, RL_ENOMEM; rl_last_error() names the
 * member); RL_ENOTOWNER when the calling thread does not hold every member
 * (nothing changes); RL_EINVAL (NULL). Thread-safe.
 */
RL_EXTERN int rl_lockset_release(rl_lockset *set);

/**
 * 1 when the calling thread holds a member whose lease was lost or can no
 * longer be proven (rl_lock_interrupted() of any member), else 0;
 * RL_EINVAL for NULL. No I/O.
 */
RL_EXTERN int rl_lockset_interrupted(const rl_lockset *set);

/** Free a set and its own handles (not the caller's; holds stay held:
 * they belong to threads, and a handle on each name can release them).
 * Must not race with other calls on the same set. Accepts NULL. */
RL_EXTERN void rl_lockset_free(rl_lockset *set);

/** The layout version of rl_stats this header describes. */
#define RL_STATS_VERSION 1

/**
 * Buckets of rl_stats.wait_buckets. Bucket i counts the waits that took
 * at most its bound and more than the previous bucket's: <= 1 ms, <= 10 ms,
 * <= 100 ms, <= 1000 ms, <= 10000 ms, and longer. Never changed: other
 * bounds would come as new fields.
 */
#define RL_STATS_WAIT_BUCKETS 6

/**
 * What a client has done since it was created (or, in a fork child, since
 * the fork: the child starts from zero). Filled by rl_client_stats().
 *
 * Set `version` to RL_STATS_VERSION before the call; nothing else needs
 * setting. Fields are only ever appended: a library newer than your header
 * fills only the fields of your version.
 *
 * Counters only rise; the two gauges at the end go up and down. Counters
 * are read one by one, without stopping the client: a snapshot taken while
 * other threads work may be a few events apart between fields (e.g. a
 * release counted before the acquisition it ends). Counts wrap at 2^64.
 */
typedef struct rl_stats {
    unsigned int version;   /* RL_STATS_VERSION, set by the caller */

    /* ---- taking and giving back (calls through this client's handles) */

    /* rl_lock_try_acquire() / rl_lock_acquire() that returned RL_OK and
     * took the lock anew (hold count 0 -> 1). */
    unsigned long long acquisitions;
    /* ...that returned RL_OK on a lock the thread held (count n -> n+1). */
    unsigned long long reentries;
    /* rl_lock_release() that returned RL_OK: one per hold given back, the
     * last one or not (after a balanced run with nothing lost, releases =
     * acquisitions + reentries). */
    unsigned long long releases;
    /* rl_lock_try_acquire() that returned RL_EBUSY (wait_ms 0, taken). */
    unsigned long long busy;
    /* ...that returned RL_ETIMEDOUT: the wait ran out while it was held. */
    unsigned long long timeouts;
    /* ...that returned RL_ECANCELED: the client was shut down during the
     * call or before it. */
    unsigned long long cancellations;

    /* ---- waiting */

    /* Acquisitions (counted in `acquisitions`) that had to wait: the first
     * try did not get the lock (taken by another owner, threads of this
     * process queued first, or Redis unreachable) and the call waited. */
    unsigned long long waits;
    /* How long those waited in all, in ms: from the call to its return. */
    unsigned long long wait_ms_sum;
    /* The same waits by how long each took (RL_STATS_WAIT_BUCKETS bounds;
     * not cumulative: the buckets add up to `waits`). */
    unsigned long long wait_buckets[RL_STATS_WAIT_BUCKETS];

    /* ---- the watchdog */

    /* Renewal rounds: each renews every watchdog-kept hold of the client,
     * in one pipelined round per server. */
    unsigned long long renewal_rounds;
    /* Rounds that could not confirm every hold: a server unreachable or
     * answering an error (Redlock: fewer than a majority of the masters
     * answered). Retried soon; holds are then kept by their last confirmed
     * expiry. A round that found a field gone is not a failure (see
     * lost_gone). */
    unsigned long long renewal_failures;

    /* ---- holds lost: flagged, so that rl_interrupted() reports them.
     * Each hold is counted once, under the first cause found. */

    /* A watchdog-kept hold whose lease was not confirmed by a renewal
     * before it ran out (Redis unreachable or too slow, replicas behind). */
    unsigned long long lost_unconfirmed;
    /* A hold with a fixed lease (lease_ms) still held when it ran out. */
    unsigned long long lost_lease_ended;
    /* Redis no longer had its field when a renewal, reentry or release
     * asked: it expired there, was deleted (DEL, FLUSHDB, a force-release
     * by another client) or was taken. Redlock: on so many masters that
     * no majority vouches for it. */
    unsigned long long lost_gone;
    /* Force-released through this client (rl_lock_force_release()). */
    unsigned long long lost_forced;
    /* The outcome of a change of it (reentry, release) could not be read
     * back (see replies_unresolved). */
    unsigned long long lost_unresolved;
    /* Still held when the client was shut down. */
    unsigned long long lost_shutdown;
    /* Any other cause: Redis held another count than expected; Redlock:
     * no majority of the masters confirmed its release. */
    unsigned long long lost_other;

    /* ---- connections and lost replies */

    /* Connections opened to Redis and set up (connected, authenticated),
     * for any use: the client's first, the pool's, the watchdog's, the
     * subscriber's. Not the connections to sentinels. */
    unsigned long long connects;
    /* Connections found broken and closed: reset, closed by the server
     * (CLIENT KILL, restart), a reply not in time. Each is replaced by a
     * new one (`connects`) when needed. */
    unsigned long long disconnects;
    /* Changes (acquisition, reentry, release) whose reply was lost or not
     * understood, and whose outcome reading the hold count back settled.
     * Single server, Cluster, Sentinel (Redlock does not read back: it
     * counts a master that did not answer as not granting). */
    unsigned long long replies_resolved;
    /* ...whose outcome could not be settled: the read-back failed too.
     * The hold (if any) is flagged as lost; our field is dropped later. */
    unsigned long long replies_unresolved;

    /* ---- gauges: now */

    /* Holds in the client's table: one per thread and lock held (however
     * often re-entered), lost ones included until released. */
    unsigned long long holds;
    /* Threads waiting in rl_lock_try_acquire() now (as counted by `waits`
     * once they get the lock). */
    unsigned long long waiters;
} rl_stats;

/**
 * Copy the client's counters into *out (see rl_stats). No I/O, and the
 * client's own lock is not taken: relaxed atomic loads (and a look into
 * the process's list of live clients), cheap enough for every scrape of a
 * metrics endpoint. out->version must be set; only the fields of that
 * version are written.
 *
 * Works until the client is freed, after rl_client_shutdown() too, so that
 * the counts of the shutdown itself (cancellations, lost_shutdown) can be
 * read before rl_client_free().
 *
 * Returns RL_OK, or RL_EINVAL (out or client NULL; out->version 0 or newer
 * than this library knows; a client already freed), and then *out is left
 * untouched. Thread-safe.
 */
RL_EXTERN int rl_client_stats(rl_stats *out, rl_client *client);

/* ---- Inspecting locks: who holds what, as `rlock list` / `show` print it */

/** The layout version of rl_lock_list, rl_lock_info and rl_holder_info
 * this header describes. 2: a semaphore's kind and permits. */
#define RL_INFO_VERSION 2

/** rl_lock_info.kind of a read-write lock. Not a kind rl_lock_new_kind()
 * takes: a handle is opened on one side (RL_KIND_READ or RL_KIND_WRITE). */
#define RL_KIND_RW 4

/* What a client talks to (rl_lock_list.mode), learned when it connected. */
#define RL_MODE_SINGLE   0 /* one server (redis://, unix://) */
#define RL_MODE_CLUSTER  1 /* a Redis Cluster: every master is read */
#define RL_MODE_REDLOCK  2 /* redlock://: every master is read */
#define RL_MODE_SENTINEL 3 /* sentinel://: the primary the sentinels name */

/**
 * One holder of a lock: a thread of some process, read from the lock's
 * hash and joined with its client's owner record (rl_options.client_name).
 * Strings are NUL-terminated and never NULL (unknown: "" or as said).
 */
typedef struct rl_holder_info {
    /* The holding client's process UUID (36 characters); a field that is
     * not "<uuid>:<thread>" (not written by rlock): its first 36 bytes. */
    const char *owner;
    /* rlock's thread number in that process, as text ("?" when the field
     * is not rlock's). Not an OS thread id. */
    const char *thread;
    /* RL_KIND_READ or RL_KIND_WRITE: the side held, in a read-write lock;
     * RL_KIND_PLAIN in any other lock (a fair one, a semaphore too). */
    int side;
    /* How many times the thread holds it (1 + its reentries). */
    long long count;
    /* When it was taken, unix ms by the holder's clock (reentry keeps
     * it); -1: not stored. */
    long long since_ms;
    /* ms until this hold runs out in Redis unless renewed: a read-write
     * lock's or a semaphore's hold, its own deadline; any other, the key's
     * PTTL (lock-delay included). -1: no expiry; -2: gone. */
    long long lease_left_ms;
    /* 1 when the holder's owner record was found and the fields below say
     * what it wrote; 0 when it has none (an ACL user that may not write
     * it, a client older than records, a field not rlock's): the fields
     * below are then "" and -1. */
    int known;
    const char *host;          /* the holder's host name */
    long long pid;             /* its process id; -1: unknown */
    const char *client_name;   /* rl_options.client_name; "": none */
    long long started_ms;      /* when its client was created, unix ms; -1 */
    const char *version;       /* its rlock version */
    /* Layout 2. A semaphore's hold: the permits it holds (k, 1..N); 0 in
     * any other lock. */
    long long permits;
} rl_holder_info;

/**
 * One lock name as one master keeps it (a name held on several Redlock
 * masters comes once per master). Strings NUL-terminated, never NULL.
 */
typedef struct rl_lock_info {
    /* The lock name, name_len bytes (binary-safe; a NUL follows them). */
    const char *name;
    size_t name_len;
    /* The server it was read on, "host:port" (a socket's path). */
    const char *node;
    /* RL_KIND_SEMAPHORE (a semaphore's permit count is there; layout 2),
     * RL_KIND_RW (a read-write lock's fields are there), RL_KIND_FAIR
     * (threads are queued in its fair queue) or RL_KIND_PLAIN. A fair
     * lock nobody queues for reads as RL_KIND_PLAIN: Redis keeps nothing
     * else that tells them apart. A caller of layout 1 is never given a
     * kind its header lacks: a semaphore reads there as RL_KIND_RW, its
     * holders on RL_KIND_WRITE, as layout 1's library read it. */
    int kind;
    /* The key's PTTL, in ms: -1 no expiry, -2 gone since it was listed. */
    long long lease_left_ms;
    /* Processes subscribed to its release notices (PUBSUB NUMSUB; in a
     * Cluster SHARDNUMSUB), waiting for it: not threads, and not the
     * waiters that poll for want of channel rights. -1: unknown. */
    long long waiters;
    /* Threads in a fair lock's queue (its waiters: they listen on
     * channels of their own); 0 otherwise. */
    long long queued;
    /* The holder's lock-delay in ms (rl_options.lock_delay_ms), 0: none.
     * While a holder holds, it is counted in lease_left_ms. */
    long long delay_ms;
    /* A hold was lost and its lock-delay is all that is left (no holder):
     * how long, in ms, nobody may take the name (lease_left_ms); else 0. */
    long long delay_left_ms;
    /* Its holders, in the hash's order: nholders pointers. A semaphore's
     * hold past its deadline is gone, as the scripts count it (its
     * permits free, though Redis keeps its fields until an acquisition
     * drops them): it is not among them. */
    size_t nholders;
    rl_holder_info *const *holders;
    /* Layout 2. A semaphore: its permit count N (the name's, while it has
     * live holds) and the permits its holders leave free (N minus the
     * sum of their permits); both 0 for any other kind. */
    long long permits;
    long long free_permits;
} rl_lock_info;

/**
 * What rl_client_list_locks() or rl_client_inspect_lock() read. Made by
 * the library, read-only, freed whole by rl_lock_list_free(). The three
 * structs share one layout version and their fields are only ever
 * appended: entries are reached through arrays of pointers, never arrays
 * of structs, so a library newer than your header can fill more than you
 * read.
 */
typedef struct rl_lock_list {
    /* The layout the library filled: RL_INFO_VERSION of the library, at
     * least the one asked for (fields are only ever appended). */
    unsigned int version;
    int mode;                  /* RL_MODE_*: the client's */
    /* The locks, sorted by name, then node: count pointers. */
    size_t count;
    rl_lock_info *const *locks;
    /* The masters that could not be read, and the keys of a name that are
     * not rlock's, each "node: what went wrong" (nfailures strings; 0 when
     * every master answered and every key was a lock). */
    size_t nfailures;
    const char *const *failures;
} rl_lock_list;

/**
 * Every lock whose name matches the glob `pattern` (Redis MATCH syntax;
 * NULL: "*"; at most RL_NAME_MAX bytes), with its holders, its waiters
 * and its lock-delay, into *out: read on every master that may keep a
 * lock (the server; a Cluster's masters, from the client's slot map; each
 * Redlock master; Sentinel's primary) with SCAN, HGETALL, PTTL, PUBSUB
 * NUMSUB, ZCARD and TIME, each key read at once but the keys one after
 * another (not a snapshot of the whole). Reads only; takes nothing, and
 * holds of the client itself are listed like any other. A key of a name's
 * layout that is not a lock hash (a string SET by hand, say) blocks the
 * name: it is a failure of the call (RL_EREDIS), "node: key K of lock N
 * holds another type of value, not rlock's (WRONGTYPE): ...", and the other
 * keys are still read.
 *
 * `version`: RL_INFO_VERSION, the layout you compiled against.
 *
 * Returns RL_OK; RL_EINVAL (out or client NULL, a client freed, a
 * pattern too long, a version 0 or newer than this library knows: *out
 * untouched, nothing sent); RL_ENOMEM (*out untouched); RL_ECANCELED (the
 * client was shut down, or is being: a list stops between two round
 * trips, so that the shutdown need not wait for it; *out untouched).
 * When a master cannot be read, the call returns the first failure
 * (RL_ECONN, RL_EAUTH, RL_EREDIS, RL_EPROTO; rl_last_error() names the
 * master) and *out is still set, to what the others gave, with
 * (*out)->failures naming each master that failed: free it too. Free *out with
 * rl_lock_list_free(). Thread-safe.
 */
RL_EXTERN int rl_client_list_locks(rl_lock_list **out, rl_client *client,
                                   const char *pattern, unsigned int version);

/**
 * The lock `name` (1..RL_NAME_MAX bytes, binary-safe) as
 * rl_client_list_locks() reads it, into *out: read where the name lives
 * (its master in a Cluster; every Redlock master, one entry each). A name
 * nobody holds gives a list of count 0 (a lost hold's lock-delay alone
 * still gives an entry, with no holder). Needs no handle, and opens no
 * family of the name in the client. Returns as rl_client_list_locks()
 * does (a name of a bad length: RL_EINVAL). Free with rl_lock_list_free().
 * Thread-safe.
 */
RL_EXTERN int rl_client_inspect_lock(rl_lock_list **out, rl_client *client,
                                     const void *name, size_t len, unsigned int version);

/** Free what rl_client_list_locks() or rl_client_inspect_lock() made.
 * Accepts NULL. */
RL_EXTERN void rl_lock_list_free(rl_lock_list *list);

/**
 * A Redis URL as it may be shown (a message, a log line), into out (cap
 * bytes, NUL-terminated, cut to fit): a URL that rl_client_new() would
 * parse keeps its scheme and what follows its userinfo (hosts, path,
 * database), the userinfo shown as "***"; one that does not parse is
 * shown as its scheme and "***" when rlock knows the scheme, else "***".
 * No byte of a password reaches out, whatever the URL's shape. NULL: the
 * default URL. Returns RL_OK, leaving rl_last_error() as it was, or
 * RL_EINVAL (out NULL, cap 0). No I/O; thread-safe.
 */
RL_EXTERN int rl_url_redact(char *out, size_t cap, const char *url);

/** A static, human-readable name for a status. Never NULL. */
RL_EXTERN const char *rl_strerror(int status);

/**
 * Detail of the last failure on the calling thread (a Redis or system
 * message), or "" when there is none. Never NULL. Valid until the calling
 * thread's next rlock call.
 */
RL_EXTERN const char *rl_last_error(void);

/** The library's version, "MAJOR.MINOR.PATCH". */
RL_EXTERN const char *rl_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RLOCK_H */
