/* What `boxcar worker` sets up once before its main loop: its instance
 * id, work dir, cgroup, the warm pools, and a schema it knows. */
#include "worker/daemon/startup.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/io.h"
#include "sandbox/sandbox.h"
#include "worker/daemon/notify.h"
#include "worker/db/db.h"
#include "worker/workdir/disk_budget.h"
#include "worker/job/job.h"
#include "worker/spec/spec.h"
#include "worker/log/log.h"
#include "worker/db/migrate.h"
#include "worker/db/sql_files.h"
#include "worker/exec/sandbox_pool.h"
#include "worker/workdir/ws_pool.h"

int worker_setup_signals(int *ret_fd, struct bc_error *err)
{
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        /* Blocked before the slot threads start, so only signalfd sees them. */
        if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
                return bc_error_set(err, BC_INTERNAL, errno, "sigmask: %m");
        signal(SIGPIPE, SIG_IGN);
        *ret_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        if (*ret_fd < 0)
                return bc_error_set(err, BC_INTERNAL, errno, "signalfd: %m");
        return 0;
}

int worker_new_instance_id(char ret_id[33], struct bc_error *err)
{
        unsigned char raw[16];
        if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
                return bc_error_set(err, BC_INTERNAL, errno, "getrandom: %m");
        for (size_t i = 0; i < sizeof(raw); i++)
                snprintf(ret_id + 2 * i, 3, "%02x", raw[i]);
        return 0;
}

/* The work dir and its parents, 0700: a fresh checkout or host has none
 * of them, and only the worker needs to look inside. */
int worker_setup_work_dir(const struct worker_config *cfg, bool *ret_private, struct bc_error *err)
{
        _cleanup_free_ char *jobs = NULL;
        if (asprintf(&jobs, "%s/jobs", cfg->work_dir) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        if (bc_mkdir_p(jobs, 0700, err) < 0) {
                err->code = BC_CONFIG;
                return bc_error_prefix(err, "--work-dir %s", cfg->work_dir);
        }
        /* Refused at the start, not at the first job: a range that
         * overlaps a host account would let jobs act as it. */
        if (cfg->sandbox == BACKEND_NAMESPACE && geteuid() == 0) {
                int r = sandbox_id_range_set(cfg->uid_range, err);
                if (r < 0) {
                        err->code = BC_CONFIG;
                        return r;
                }
        }
        if (cfg->sandbox == BACKEND_NAMESPACE) {
                char why[128];
                struct bc_error e = BC_ERROR_INIT;
                if (!sandbox_workspace_available(why, sizeof(why)))
                        log_event(
                                LOG_WARN, "sandbox.workspace", "error", why, "effect",
                                "jobs fail with SANDBOX_SETUP: a workspace cannot be bounded here",
                                NULL);
                else if (sandbox_workspace_private_mounts(&e) < 0)
                        /* Still safe: the start-up cleanup below is the net. */
                        log_event(LOG_WARN, "sandbox.workspace", "error", bc_error_message(&e),
                                  "effect",
                                  "job mounts live in the host's namespace; no "
                                  "workspaces are made ahead",
                                  NULL);
                else
                        *ret_private = true;
                bc_error_clear(&e);
        }
        /* What a worker killed before private mounts existed (or without
         * them) left: workspace mounts, their loop devices, directories. */
        job_dirs_cleanup(cfg->work_dir);
        ws_pool_cleanup(cfg->work_dir);
        return 0;
}

int worker_artifact_cache_dir(const struct worker_config *cfg, char **ret)
{
        *ret = NULL;
        char why[128] = "the sandbox is off (--sandbox none)";
        if (cfg->sandbox != BACKEND_NAMESPACE || !sandbox_overlay_available(why, sizeof(why))) {
                log_event(LOG_INFO, "artifact.base", "path", "extracted into each job's workspace",
                          "why", why, NULL);
                return 0;
        }
        log_event(LOG_INFO, "artifact.base", "path", "overlay over the artifact cache", NULL);
        return asprintf(ret, "%s/artifacts", cfg->work_dir) < 0 ? -ENOMEM : 0;
}

/* --warm-sandboxes / --warm-workspaces: the number given, or by default
 * the concurrency plus the pools' prefetch of 2. */
static unsigned warm_max(int given, const struct worker_config *cfg)
{
        return given < 0 ? cfg->concurrency + WS_POOL_PREFETCH : (unsigned)given;
}

/* Workspace filesystems made ahead, of the spec's default size, when this
 * worker makes them at all, in a mount namespace of its own (a pool's
 * mounts must die with the worker; and a mount under a shared parent
 * cannot be moved).  A failure is not fatal: jobs make theirs. */
struct ws_pool *worker_start_ws_pool(const struct worker_config *cfg, bool private_mounts,
                                     struct metrics *m)
{
        if (cfg->sandbox != BACKEND_NAMESPACE || !private_mounts)
                return NULL;
        struct ws_pool_options o = {
                .work_dir = cfg->work_dir,
                .concurrency = cfg->concurrency,
                .max_ready = warm_max(cfg->warm_workspaces, cfg),
                .disk_mb = SPEC_DEFAULT_DISK_MB,
                .files = SPEC_DEFAULT_FILES,
                .metrics = m,
        };
        struct ws_pool *pool = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (ws_pool_start(&pool, &o, &err) < 0) {
                log_event(LOG_WARN, "workspace.pool", "error", bc_error_message(&err), "effect",
                          "every job makes its workspace filesystem when it starts", NULL);
                ws_pool_stop(pool);
                pool = NULL;
        }
        bc_error_clear(&err);
        return pool;
}

int worker_open_disk_budget(const struct worker_config *cfg, struct disk_budget **ret,
                            struct bc_error *err)
{
        *ret = NULL;
        if (cfg->sandbox != BACKEND_NAMESPACE)
                return 0;
        int r = disk_budget_open(ret, cfg->work_dir, cfg->disk_reserve_bytes,
                                 cfg->disk_reserve_pct, err);
        uint64_t room = 0, avail = 0, reserve = 0;
        if (r < 0 || disk_budget_room(*ret, &room, &avail, &reserve) < 0 ||
            room >= (uint64_t)SPEC_DEFAULT_DISK_MB << 20)
                return r;
        char detail[256], effect[160];
        snprintf(detail, sizeof(detail),
                 "%llu MiB free on the filesystem of --work-dir %s, %llu MiB kept free by "
                 "--disk-reserve: room for %llu MiB of jobs (other workers' on this work dir "
                 "counted)",
                 (unsigned long long)(avail >> 20), cfg->work_dir,
                 (unsigned long long)(reserve >> 20), (unsigned long long)(room >> 20));
        snprintf(effect, sizeof(effect),
                 "a job of the default limits.disk_mb (%d MiB) waits for room, and fails when "
                 "there is none even with no job running",
                 SPEC_DEFAULT_DISK_MB);
        log_event(LOG_WARN, "disk.short", "detail", detail, "effect", effect, NULL);
        return 0;
}

/* cgroup v2: moves the worker into a leaf of its cgroup so that cgroup
 * can give job cgroups their controllers (see sandbox.h).  Must run while
 * the process is single-threaded.  A failure is not fatal: jobs without
 * limits still run, and jobs with limits fail with the helper's reason. */
char *worker_setup_cgroup(const struct worker_config *cfg)
{
        if (cfg->sandbox != BACKEND_NAMESPACE)
                return NULL;
        char *parent = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (sandbox_cgroup_prepare_worker(NULL, &parent, &err) < 0) {
                log_event(LOG_WARN, "sandbox.cgroup", "parent", "none", "error",
                          bc_error_message(&err), NULL);
                bc_error_clear(&err);
                return NULL;
        }
        log_event(LOG_INFO, "sandbox.cgroup", "parent", parent ? parent : "none", "mode",
                  parent ? "v2 delegated: worker in a leaf, jobs beside it"
                         : "jobs under the helper's own cgroup",
                  NULL);
        unsigned swept = sandbox_cgroup_sweep_dead(parent);
        if (swept)
                log_event(LOG_INFO, "sandbox.cgroup_swept", LOG_INT("count", swept), "why",
                          "helpers gone without their teardown (a worker killed with SIGKILL)",
                          NULL);
        return parent;
}

/* Warm sandboxes, made by the pool's own thread: they die with it, and it
 * is stopped only after the slots are joined.  Without a pool every
 * sandbox is cold. */
void worker_start_sandbox_pool(const struct worker_config *cfg, const char *cgroup_parent,
                               struct storage_cache *images, struct metrics *m,
                               struct sandbox_pool **ret)
{
        *ret = NULL;
        if (cfg->sandbox != BACKEND_NAMESPACE)
                return;
        unsigned max = warm_max(cfg->warm_sandboxes, cfg);
        struct bc_error err = BC_ERROR_INIT;
        /* Most jobs leave their limits at the spec's defaults: then none is
         * written at the handoff. */
        const struct sandbox_warm_limits defaults = { .memory_mb = SPEC_DEFAULT_MEMORY_MB,
                                                      .pids = SPEC_DEFAULT_PIDS,
                                                      .cpus = SPEC_DEFAULT_CPUS };
        if (sandbox_pool_start(cfg->sandbox_helper, cgroup_parent, max, &defaults, images, m, ret,
                               &err) < 0) {
                log_event(LOG_WARN, "sandbox.pool", "error", bc_error_message(&err), "effect",
                          "every sandbox starts cold", NULL);
                bc_error_clear(&err);
                return;
        }
        log_event(LOG_INFO, "sandbox.pool", LOG_INT("max", *ret ? max : 0), "mode",
                  *ret  ? "warm sandboxes made ahead of jobs"
                  : max ? "off: warm sandboxes need root"
                        : "off (--warm-sandboxes 0)",
                  NULL);
}

/* Before any job or delivery thread starts: the schema must be one this
 * binary knows, or the worker exits with the reason (once, not a retry
 * loop of raw SQL errors).  Waits out an unreachable database like the main
 * loop; returns 1 when a signal asks to stop meanwhile. */
int worker_wait_for_schema(const struct worker_config *cfg, int signal_fd, uint64_t watchdog_ms,
                           struct bc_error *err)
{
        unsigned backoff = 100;
        for (;;) {
                _cleanup_pgconn_ PGconn *conn = db_connect(cfg->database_url, "boxcar-worker",
                                                           err);
                int r = conn ? migrate_check_schema(conn, sql_files, sql_files_count, err)
                             : -ECONNREFUSED;
                if (r >= 0 || (conn && !db_connection_lost(conn)))
                        return r;
                log_event(LOG_WARN, "db.connect_failed", "worker_id", cfg->worker_id, "error",
                          bc_error_message(err), LOG_INT("retry_ms", backoff), NULL);
                bc_error_clear(err);
                notify_status(false, "waiting for the database");
                notify_watchdog();
                struct pollfd p = { .fd = signal_fd, .events = POLLIN };
                unsigned wait = backoff;
                if (watchdog_ms && watchdog_ms < wait)
                        wait = (unsigned)watchdog_ms;
                if (poll(&p, 1, (int)wait) > 0)
                        return 1;
                backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
        }
}
