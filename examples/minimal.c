/* minimal -- the smallest complete program: take a lock, work, let go.
 *
 *   cc minimal.c $(pkg-config --cflags --libs rlock) -o minimal
 *   ./minimal redis://127.0.0.1:6379 report:daily
 */
#include <stdio.h>
#include <rlock.h>

int main(int argc, char **argv)
{
    rl_options opts;
    rl_client *client;
    rl_lock *lock;
    int rc;

    if (argc != 3) {
        fprintf(stderr, "usage: %s URL NAME\n", argv[0]);
        return 2;
    }
    rl_options_init(&opts, RL_OPTIONS_VERSION);
    opts.url = argv[1];
    if ((rc = rl_client_new(&client, &opts)) != RL_OK) {
        fprintf(stderr, "cannot connect: %s: %s\n", rl_strerror(rc), rl_last_error());
        return 1;
    }
    if ((rc = rl_lock_new(&lock, client, argv[2])) != RL_OK) {
        fprintf(stderr, "bad name: %s\n", rl_last_error());
        rl_client_free(client);
        return 1;
    }

    /* Wait at most 5 s; the lease is kept alive by the watchdog. */
    rc = rl_lock_try_acquire(lock, 5000, RL_LEASE_WATCHDOG);
    if (rc == RL_OK) {
        for (int step = 0; step < 3; step++) {
            if (rl_interrupted()) {     /* the lease could not be proven: stop */
                fprintf(stderr, "lock lost at step %d\n", step);
                break;
            }
            printf("working on step %d under %s\n", step, argv[2]);
        }
        rc = rl_lock_release(lock);     /* RL_ELOST if the lease was lost */
        if (rc != RL_OK)
            fprintf(stderr, "release: %s\n", rl_strerror(rc));
    } else if (rc == RL_ETIMEDOUT) {
        fprintf(stderr, "%s is busy: someone else holds it\n", argv[2]);
    } else {
        fprintf(stderr, "acquire: %s: %s\n", rl_strerror(rc), rl_last_error());
    }

    rl_lock_free(lock);
    rl_client_free(client);
    return rc == RL_OK ? 0 : 1;
}
