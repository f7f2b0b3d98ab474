/*
 * rlock(1): run a command under a distributed lock, see who holds locks,
 * free a stuck one. This file picks the subcommand: exec.c runs exec,
 * inspect.c list, show and release; common.c holds what they share.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "inspect.h"

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        RT_COMMON_LONGS,
        { NULL, 0, NULL, 0 },
    };
    rt_common co = { .url_from = "RLOCK_URL" };
    const char *cmd;
    int opt;

    co.url = getenv("RLOCK_URL");
    if (!co.url || !*co.url) {
        co.url = "redis://127.0.0.1:6379";
        co.url_from = "--url";
    }
    /* Options before the command; "+": stop at the command's name. Every
     * refusal is rlock's own one line (opterr 0, ':' for a missing value). */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+:" RT_COMMON_SHORT, longs, NULL)) != -1) {
        int r;
        if (opt == 'V') {
            printf("rlock %s\n", rl_version());
            return RT_EXIT_OK;
        }
        if ((r = rt_common_opt(opt, optarg, argv, NULL, &co)) != 0)
            return r > 0 ? RT_EXIT_OK : RT_EXIT_USAGE;
    }
    if (optind >= argc) {
        rt_err("a command is needed: exec, list, show or release (rlock --help)");
        return RT_EXIT_USAGE;
    }
    cmd = argv[optind];
    /* The subcommand parses the rest, its own options and the common ones. */
    argc -= optind;
    argv += optind;
    optind = 0;
    if (strcmp(cmd, "exec") == 0)
        return rt_cmd_exec(argc, argv, &co);
    if (strcmp(cmd, "list") == 0)
        return rt_cmd_list(argc, argv, &co);
    if (strcmp(cmd, "show") == 0)
        return rt_cmd_show(argc, argv, &co);
    if (strcmp(cmd, "release") == 0)
        return rt_cmd_release(argc, argv, &co);
    if (strcmp(cmd, "help") == 0) {
        rt_usage(stdout);
        return RT_EXIT_OK;
    }
    rt_err("unknown command '%s': exec, list, show or release (rlock --help)", cmd);
    return RT_EXIT_USAGE;
}
