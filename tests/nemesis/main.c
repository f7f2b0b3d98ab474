/*
 * rlnemesis: the command line (see nemesis.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nemesis.h"

static int usage(void)
{
    fprintf(stderr, "usage: rlnemesis run --seed S [--keep]\n"
                    "       rlnemesis run --seeds N --from S [--keep]\n"
                    "       rlnemesis check DIR\n"
                    "       rlnemesis plan S\n");
    return 2;
}

static int cmd_check(const char *dir)
{
    nm_verdict v;
    long total = 0;
    int i;

    if (nm_check_dir(dir, &v) != 0)
        return 2;
    printf("nemesis check %s: ops=%ld holds=%ld writes=%ld faults=%ld undone=%ld violations:",
           dir, v.ops, v.holds, v.writes, v.faults, v.undone);
    for (i = 0; i < NM_INV_COUNT; i++) {
        printf(" %s=%ld", nm_inv_name(i), v.violations[i]);
        total += v.violations[i];
    }
    printf(" -> %s\n", total == 0 ? "OK" : "FAIL");
    return total == 0 ? 0 : 1;
}

static int cmd_run(int argc, char **argv)
{
    uint64_t from = 1, n = 1;
    int keep = 0, i, failed = 0, broken = 0;
    char dir[512];
    nm_verdict sum;

    for (i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            from = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--from") == 0 && i + 1 < argc)
            from = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--keep") == 0)
            keep = 1;
        else
            return usage();
    }
    memset(&sum, 0, sizeof sum);
    for (i = 0; (uint64_t)i < n; i++) {
        int rc = nm_run(from + (uint64_t)i, keep, dir, sizeof dir, &sum);
        if (rc < 0)
            broken++;
        else if (rc > 0)
            failed++;
    }
    printf("nemesis: %llu runs from 0x%llx: ops=%ld holds=%ld writes=%ld faults=%ld "
           "undone=%ld violations:", (unsigned long long)n, (unsigned long long)from, sum.ops,
           sum.holds, sum.writes, sum.faults, sum.undone);
    for (i = 0; i < NM_INV_COUNT; i++)
        printf(" %s=%ld", nm_inv_name(i), sum.violations[i]);
    printf("; %d with violations, %d could not run\n", failed, broken);
    return failed || broken ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "worker") == 0)
        return nm_worker_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (argc == 3 && strcmp(argv[1], "plan") == 0) {
        nm_plan p;
        char desc[300];
        int i;
        nm_plan_draw(&p, strtoull(argv[2], NULL, 0));
        nm_plan_describe(&p, desc, sizeof desc);
        printf("seed=0x%llx %s faults=", (unsigned long long)p.seed, desc);
        for (i = 0; i < p.nfaults; i++)
            printf("%s%s@%ld", i ? "," : "", nm_fault_name(p.faults[i].kind), p.faults[i].at_ms);
        printf("\n");
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "check") == 0)
        return cmd_check(argv[2]);
    return usage();
}
