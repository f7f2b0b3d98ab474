/*
 * rlfault: rlock's fault-injection scenarios.
 *
 *   rlfault <scenario>                 run one scenario, print its verdict line
 *   rlfault list                       the scenario names
 *   rlfault worker <role> key=value... (spawned by the scenarios themselves)
 *
 * RL_TORTURE=1 selects the long forms; RL_SOAK_SECONDS sets the soak's length;
 * RL_SENTINEL_LOG=<level> sets the Sentinel scenarios' workers' library log
 * level (1: warnings, the default).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "fault.h"
#include "scenarios.h"

static const struct {
    const char *name;
    int (*run)(void);
} scenarios[] = {
    { "contention", sc_contention },
    { "kill_holder", sc_kill_holder },
    { "stall_holder", sc_stall_holder },
    { "redis_pause", sc_redis_pause },
    { "redis_restart", sc_redis_restart },
    { "network", sc_network },
    { "script_flush", sc_script_flush },
    { "refusals", sc_refusals },
    { "fork", sc_fork },
    { "soak", sc_soak },
    { "acl_nochannel", sc_acl_nochannel },
    { "force_race", sc_force_race },
    { "shutdown", sc_shutdown },
    { "renew_race", sc_renew_race },
    { "cluster_failover", sc_cluster_failover },
    { "cluster_migrate", sc_cluster_migrate },
    { "cluster_restart", sc_cluster_restart },
    { "redlock_kill", sc_redlock_kill },
    { "redlock_majority", sc_redlock_majority },
    { "redlock_pause", sc_redlock_pause },
    { "redlock_restart_empty", sc_redlock_restart_empty },
    { "redlock_contention", sc_redlock_contention },
    { "sentinel_failover", sc_sentinel_failover },
    { "sentinel_failover_noack", sc_sentinel_failover_noack },
    { "sentinel_restart_early", sc_sentinel_restart_early },
    { "fencing_stall", sc_fencing_stall },
    { "lock_delay", sc_lock_delay },
    { "fair_queue", sc_fair_queue },
    { "rw_kill", sc_rw_kill },
    { "rw_cluster_kill", sc_rw_cluster_kill },
    { "cluster_node_stopped", sc_cluster_node_stopped },
    { "redlock_node_stopped", sc_redlock_node_stopped },
    { "sentinel_node_stopped", sc_sentinel_node_stopped },
    { "cluster_node_stopped_cut", sc_cluster_node_stopped_cut },
    { "cluster_node_stopped_left", sc_cluster_node_stopped_left },
};

static const struct {
    const char *name;
    int (*run)(void);
} roles[] = {
    { "loop", role_loop },
    { "hold", role_hold },
    { "victim", role_victim },
    { "stall_victim", role_stall_victim },
    { "stall_taker", role_stall_taker },
    { "forker", role_forker },
    { "soak", role_soak },
    { "acl_loop", role_acl_loop },
    { "force_loop", role_force_loop },
    { "shutdown", role_shutdown },
    { "renew_race", role_renew_race },
    { "probe", role_probe },
    { "sn_hold", role_sn_hold },
    { "late_writer", role_late_writer },
    { "next_writer", role_next_writer },
    { "fair_wait", role_fair_wait },
    { "rw_loop", role_rw_loop },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

int main(int argc, char **argv)
{
    size_t i;

    /* A worker killed mid-write must not take the driver with it. */
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 3 && strcmp(argv[1], "worker") == 0) {
        fx_args_set(argc - 3, argv + 3);
        for (i = 0; i < COUNT(roles); i++) {
            if (strcmp(argv[2], roles[i].name) == 0) {
                fx_scenario = roles[i].name;
                return roles[i].run();
            }
        }
        fprintf(stderr, "rlfault: unknown role %s\n", argv[2]);
        return 2;
    }
    if (argc == 2 && strcmp(argv[1], "list") == 0) {
        for (i = 0; i < COUNT(scenarios); i++)
            printf("%s\n", scenarios[i].name);
        return 0;
    }
    if (argc == 2) {
        for (i = 0; i < COUNT(scenarios); i++) {
            if (strcmp(argv[1], scenarios[i].name) == 0) {
                fx_scenario = scenarios[i].name;
                return scenarios[i].run();
            }
        }
    }
    fprintf(stderr, "usage: rlfault <scenario>|list   (RL_TORTURE=1 for the long form)\n");
    return 2;
}
