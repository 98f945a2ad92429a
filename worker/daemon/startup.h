/* The worker's start-up steps (worker/daemon/startup.c), in the order
 * worker_run takes them. */
#ifndef BC_WORKER_DAEMON_STARTUP_H
#define BC_WORKER_DAEMON_STARTUP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "storage/storage.h"
#include "worker/config/config.h"
#include "worker/metrics/metrics.h"

struct sandbox_pool;
struct ws_pool;

/* SIGTERM and SIGINT blocked (in every thread made after) and read from
 * *ret_fd, a signalfd; SIGPIPE ignored. */
int worker_setup_signals(int *ret_fd, struct bc_error *err);
/* 32 hex digits, new at every start: leases are held by this instance. */
int worker_new_instance_id(char ret_id[33], struct bc_error *err);
/* The work dir and its parents (0700), private mounts for job workspaces
 * when possible (*ret_private), and what a killed worker left there. */
int worker_setup_work_dir(const struct worker_config *cfg, bool *ret_private,
                          struct bc_error *err);
/* Where artifact versions are cached for overlay workspaces
 * (<work-dir>/artifacts, caller frees), or *ret NULL where workspaces
 * cannot be overlays (the bases are then extracted per job); logs which. */
int worker_artifact_cache_dir(const struct worker_config *cfg, char **ret);
/* cgroup v2: the worker moves into a leaf of its cgroup; returns the
 * parent for job cgroups (caller frees, after proc_reaper_drain), NULL
 * when not delegated.  Must run while the process is single-threaded. */
char *worker_setup_cgroup(const struct worker_config *cfg);
/* The pool of warm sandboxes, or *ret NULL when there is none. */
void worker_start_sandbox_pool(const struct worker_config *cfg, const char *cgroup_parent,
                               struct storage_cache *images, struct metrics *m,
                               struct sandbox_pool **ret);
/* The pool of ready workspace filesystems, or NULL. */
struct ws_pool *worker_start_ws_pool(const struct worker_config *cfg, bool private_mounts,
                                     struct metrics *m);
/* The budget of the work dir's disk (--sandbox namespace; else *ret
 * NULL), with a warning in the log when a job of the default disk_mb
 * could not start now. */
struct disk_budget;
int worker_open_disk_budget(const struct worker_config *cfg, struct disk_budget **ret,
                            struct bc_error *err);
/* Waits for a reachable database with a schema this binary knows: 0, 1
 * when a signal on signal_fd asks to stop meanwhile, or negative with err. */
int worker_wait_for_schema(const struct worker_config *cfg, int signal_fd, uint64_t watchdog_ms,
                           struct bc_error *err);

#endif
