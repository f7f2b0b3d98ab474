/*
 * The scenarios (drivers) and the worker roles of rlfault. A driver returns
 * its process exit status (0: PASS); a role returns the worker's.
 */
#ifndef RL_FAULT_SCENARIOS_H
#define RL_FAULT_SCENARIOS_H

#include "rlock.h"

extern const char *fx_scenario;

/* drivers */
int sc_contention(void);
int sc_kill_holder(void);
int sc_stall_holder(void);
int sc_redis_pause(void);
int sc_redis_restart(void);
int sc_network(void);
int sc_script_flush(void);
int sc_refusals(void);
int sc_fork(void);
int sc_soak(void);
int sc_acl_nochannel(void);
int sc_force_race(void);
int sc_shutdown(void);
int sc_renew_race(void);
int sc_cluster_failover(void);
int sc_cluster_migrate(void);
int sc_cluster_restart(void);
int sc_redlock_kill(void);
int sc_redlock_majority(void);
int sc_redlock_pause(void);
int sc_redlock_restart_empty(void);
int sc_redlock_contention(void);
int sc_sentinel_failover(void);
int sc_sentinel_failover_noack(void);
int sc_sentinel_restart_early(void);
int sc_fencing_stall(void);
int sc_lock_delay(void);
int sc_fair_queue(void);
int sc_rw_kill(void);
int sc_rw_cluster_kill(void);
int sc_cluster_node_stopped(void);
int sc_redlock_node_stopped(void);
int sc_sentinel_node_stopped(void);
int sc_cluster_node_stopped_cut(void);
int sc_cluster_node_stopped_left(void);

/* worker roles */
int role_loop(void);
int role_hold(void);
int role_victim(void);
int role_stall_victim(void);
int role_stall_taker(void);
int role_forker(void);
int role_soak(void);
int role_acl_loop(void);
int role_force_loop(void);
int role_shutdown(void);
int role_renew_race(void);
int role_probe(void);
int role_sn_hold(void);
int role_late_writer(void);
int role_next_writer(void);
int role_fair_wait(void);
int role_rw_loop(void);

/*
 * For roles: a client on the lock server as the worker's arguments say
 * (url= or lock_port=; lease=, renew=, cmd_to=, conn_to=, pool=, fencing=,
 * delay= (lock_delay_ms); log=<level>: the
 * library's diagnostics on stderr).
 * Exits the worker with status 90 when it cannot be made.
 */
rl_client *fx_worker_client(void);

/* Shared by the pause and restart scenarios (sc_pause.c). */
#include "fault.h"
pid_t *fx_spawn_holders(fx_env *env, long lease, int *n);
int fx_both_held(fx_env *env, long timeout_ms);
long fx_flaglog_len(redisContext *ref);
int fx_flaglog_judge(redisContext *ref, long from, int64_t t_fault, long lease,
                     int *in_time, int *late, long long *max_flag_ms, long long *max_ok_ms);

#endif
