/*
 * The decision after a lost reply (rl__outcome): from the script, the count
 * the caller held and the count read back, whether the change was applied,
 * must be sent again, or shows that Redis no longer agrees with the caller.
 * Pure: no Redis.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rlock_int.h"

/* One case: a change by a hold of `held`, then `count` read back. */
static void expect(int script, long long held, long long count, int rc, int code,
                   long long value)
{
    rl__result res = { 99, 99, 0, 0, { 0 } };
    int got = rl__outcome(script, held, count, &res);

    if (got != rc)
        fail_msg("script %d held %lld count %lld: rc %d, expected %d", script, held, count,
                 got, rc);
    if (rc == RL_OK && (res.code != code || res.value != value))
        fail_msg("script %d held %lld count %lld: {%d, %lld}, expected {%d, %lld}", script,
                 held, count, res.code, res.value, code, value);
}

static void test_acquire(void **state)
{
    (void)state;
    /* A first acquisition: 1 applied, 0 (absent) not applied. */
    expect(RL__S_ACQUIRE, 0, 1, RL_OK, RL__R_DONE, 1);
    expect(RL__S_ACQUIRE, 0, 0, RL__RETRY, 0, 0);
    expect(RL__S_ACQUIRE, 0, 5, RL_OK, RL__R_MISMATCH, 5);
    /* Reentry from 2: 3 applied, 2 not, absent means the hold is gone. */
    expect(RL__S_ACQUIRE, 2, 3, RL_OK, RL__R_DONE, 3);
    expect(RL__S_ACQUIRE, 2, 2, RL__RETRY, 0, 0);
    expect(RL__S_ACQUIRE, 2, 0, RL_OK, RL__R_NOTOWNER, 0);
    expect(RL__S_ACQUIRE, 2, 4, RL_OK, RL__R_MISMATCH, 4);
    expect(RL__S_ACQUIRE, 2, 1, RL_OK, RL__R_MISMATCH, 1);
}

static void test_release(void **state)
{
    (void)state;
    /* The last hold: absent is applied (whether the lease ran out first is
     * the caller's question, with its clock), 1 is not applied. */
    expect(RL__S_RELEASE, 1, 0, RL_OK, RL__R_DONE, 0);
    expect(RL__S_RELEASE, 1, 1, RL__RETRY, 0, 0);
    expect(RL__S_RELEASE, 1, 2, RL_OK, RL__R_MISMATCH, 2);
    /* An inner release from 3: 2 applied, 3 not, absent means gone. */
    expect(RL__S_RELEASE, 3, 2, RL_OK, RL__R_DONE, 2);
    expect(RL__S_RELEASE, 3, 3, RL__RETRY, 0, 0);
    expect(RL__S_RELEASE, 3, 0, RL_OK, RL__R_NOTOWNER, 0);
    expect(RL__S_RELEASE, 3, 1, RL_OK, RL__R_MISMATCH, 1);
    /* The "drop our field whatever its count" form (held 0): absent is done. */
    expect(RL__S_RELEASE, 0, 0, RL_OK, RL__R_DONE, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acquire),
        cmocka_unit_test(test_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
