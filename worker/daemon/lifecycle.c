/* What worker_run starts before the main loop and stops after it: the
 * start-up sequence (its steps are startup.c's) into struct loop, and the
 * one teardown, used after a drain and after a failed or interrupted
 * start alike. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "version.h"
#include "worker/daemon/daemon-internal.h"
#include "worker/daemon/queue.h"
#include "worker/daemon/s3_check.h"
#include "worker/daemon/startup.h"
#include "worker/exec/proc_reaper.h"
#include "worker/exec/sandbox_pool.h"
#include "worker/http/server.h"
#include "worker/log/log.h"
#include "worker/metrics/wmetrics.h"
#include "worker/workdir/dir_bin.h"
#include "worker/workdir/disk_budget.h"
#include "worker/workdir/janitor.h"
#include "worker/workdir/ws_pool.h"

/* Sandbox helpers still in their teardown after reporting: the worker's
 * exit would kill them (PDEATHSIG) and leave their cgroups behind. */
static void reap_helpers(const struct worker_config *cfg)
{
        unsigned killed = proc_reaper_drain(10);
        if (killed)
                log_event(LOG_WARN, "sandbox.teardown_killed", "worker_id", cfg->worker_id,
                          LOG_INT("helpers", killed), "detail",
                          "sandbox helpers still tearing "
                          "down 10 s after the worker stopped were killed",
                          NULL);
}

/* /readyz: the database is reachable, the worker takes jobs, and its
 * bucket answered the last check (worker/daemon/s3_check.h). */
static bool is_ready(void *ctx, char *reason, size_t size)
{
        struct loop *l = ctx;
        if (l->ready_draining) {
                snprintf(reason, size, "draining");
                return false;
        }
        if (!l->ready_db) {
                snprintf(reason, size, "database unreachable");
                return false;
        }
        return s3_check_ready(l->s3_check, reason, size);
}

static int start_metrics(struct loop *l, struct bc_error *err)
{
        if (!l->cfg->metrics_addr)
                return 0;
        int r = wmetrics_new(&l->metrics, l->cfg->concurrency, err);
        if (r < 0)
                return bc_error_prefix(err, "metrics");
        /* Its messages name --metrics-addr already. */
        return http_server_start(l->cfg->metrics_addr, l->metrics, is_ready, l, &l->http, err);
}

/* The volume, image and artifact caches under the work dir, and the S3
 * settings when a bucket is configured. */
static int open_store(struct loop *l, struct bc_error *err)
{
        const struct worker_config *cfg = l->cfg;
        _cleanup_free_ char *cache_dir = NULL, *image_dir = NULL, *artifact_dir = NULL;
        if (asprintf(&cache_dir, "%s/volumes", cfg->work_dir) < 0 ||
            asprintf(&image_dir, "%s/images", cfg->work_dir) < 0 ||
            worker_artifact_cache_dir(cfg, &artifact_dir) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        int r = store_open(&l->store, cache_dir, image_dir, artifact_dir, cfg->volume_cache_bytes,
                           (long)cfg->artifact_url_ttl_s, err);
        l->store_opened = r >= 0;
        l->store.url_guard = &cfg->url_guard;
        l->gc = (struct gc_runner){ .database_url = cfg->database_url,
                                    .s3 = l->store.s3,
                                    .metrics = l->metrics,
                                    .grace_s = cfg->storage_gc_grace_s };
        return r;
}

/* The pools of warm sandboxes and ready workspaces, and the bin of kept
 * job directories; each is optional (NULL), none is fatal. */
static void start_pools(struct loop *l)
{
        const struct worker_config *cfg = l->cfg;
        worker_start_sandbox_pool(cfg, l->cgroup_parent, l->store.images, l->metrics,
                                  &l->sandbox_pool);
        l->ws_pool = worker_start_ws_pool(cfg, l->private_mounts, l->metrics);
        l->slots.ws_pool = l->ws_pool;
        l->dirs = dir_bin_new(cfg->work_dir, cfg->concurrency + WS_POOL_PREFETCH);
        l->slots.dirs = l->dirs;
        l->slots.cgroup_parent = l->cgroup_parent;
        l->slots.sandbox_pool = l->sandbox_pool;
}

static void log_started(const struct loop *l, const char *no_webhooks)
{
        const struct worker_config *cfg = l->cfg;
        log_event(LOG_INFO, "worker.started", "worker_id", cfg->worker_id,
                  LOG_INT("concurrency", cfg->concurrency), "sandbox",
                  cfg->sandbox == BACKEND_NAMESPACE ? "namespace" : "none", "s3",
                  l->store.s3 ? "configured" : "not configured", "version", BOXCAR_VERSION,
                  "instance", l->instance, NULL);
        if (no_webhooks)
                log_event(LOG_WARN, "webhooks.disabled", "worker_id", cfg->worker_id, "reason",
                          no_webhooks, "detail",
                          "this worker delivers no webhooks; workers "
                          "with a secret deliver them",
                          NULL);
}

int loop_open(struct loop *l, struct bc_error *err)
{
        const struct worker_config *cfg = l->cfg;
        int r = worker_new_instance_id(l->instance, err);
        if (r < 0)
                return r;
        r = worker_setup_work_dir(cfg, &l->private_mounts, err);
        if (r < 0)
                return r;
        r = worker_setup_signals(&l->signal_fd, err);
        if (r < 0)
                return r;
        /* Before start_metrics: the first thread of the process. */
        l->cgroup_parent = worker_setup_cgroup(cfg);
        r = start_metrics(l, err);
        l->slots.metrics = l->metrics;
        l->deliverer.metrics = l->metrics;
        if (r < 0)
                return r;
        r = open_store(l, err);
        if (r < 0)
                return r;
        /* Always checked: a missing bucket or a wrong key shows at start
         * in the log (and in /readyz), not in the first job. */
        r = l->store.s3 ? s3_check_start(l->store.s3, cfg->worker_id, &l->s3_check, err) : 0;
        if (r < 0)
                return r;
        r = worker_wait_for_schema(cfg, l->signal_fd, l->watchdog_ms, err);
        if (r != 0)
                return r;
        /* Before the pools: the caches keep the reserve from their start. */
        r = worker_open_disk_budget(cfg, &l->disk, err);
        if (l->disk)
                store_give_way(&l->store, l->disk, l->metrics);
        l->slots.disk = l->disk;
        l->slots.instance = l->instance;
        if (r < 0)
                return r;
        start_pools(l);
        r = slots_start(&l->slots, cfg, &l->store, err);
        if (r < 0)
                return r;
        const char *no_webhooks = NULL;
        r = deliverer_start(&l->deliverer, cfg, &no_webhooks, err);
        /* Stopped even when it failed: a failed start leaves threads. */
        l->deliverer_started = true;
        if (r < 0)
                return r;
        log_started(l, no_webhooks);
        return 0;
}

/* One order for every exit: whatever uses a part stops before that part
 * goes.
 *  1. The control connection, after resigning the housekeeping lease and
 *     marking this worker stopped: another worker takes the leader's work
 *     now, not a lease later, while the steps below may take seconds (the
 *     helpers alone up to 10).  Nothing below uses the connection.
 *  2. The slots: their jobs and reporter use all that follows (the store,
 *     both pools, the dir bin, the disk budget, the cgroup parent, the
 *     metrics).  After a drain they are idle.
 *  3. The warm sandbox pool, unhooked from the backend first: no pointer
 *     to it outlives it.  It holds image cache entries (the store) and
 *     sets gauges (the metrics).
 *  4. The sandbox helpers still tearing down, the jobs' and the pool's:
 *     the process's exit would kill them and leave their cgroups behind.
 *  5. The janitor: what it still has to do for finished jobs gives
 *     workspaces back to the pool, directories to the dir bin, entries to
 *     the caches and disk to the budget; it finishes before those go.
 *  6. The dir bin, the workspace pool (gauges: before the metrics), then
 *     the disk budget the jobs and the janitor took from and gave back
 *     to.  The budget before the store: it calls into the store's caches
 *     to reclaim room.  Then the cgroup parent: no job or pool makes a
 *     job cgroup now.
 *  7. The webhook deliverer: needs none of the above but the metrics;
 *     in-flight deliveries end within their timeout.
 *  8. The HTTP server, kept until here so /readyz says "draining" (not
 *     a refused connection) and /metrics is served during the steps
 *     above; it goes before what they read (the S3 check, the metrics).
 *     The S3 check before the store, whose S3 settings it uses.
 *  9. The store, then the metrics everything above counted into, and the
 *     signalfd. */
void loop_close(struct loop *l)
{
        const struct worker_config *cfg = l->cfg;
        if (l->conn) {
                struct bc_error ignored = BC_ERROR_INIT;
                if (l->leader)
                        queue_resign(l->conn, cfg->worker_id, &ignored);
                queue_set_state(l->conn, cfg->worker_id, "stopped", &ignored);
                bc_error_clear(&ignored);
        }
        loop_disconnect(l);
        gc_runner_join(&l->gc);
        if (l->slots.slot)
                slots_join(&l->slots);
        sandbox_pool_stop(l->sandbox_pool);
        reap_helpers(cfg);
        janitor_drain();
        dir_bin_free(l->dirs);
        ws_pool_stop(l->ws_pool);
        disk_budget_close(l->disk);
        free(l->cgroup_parent);
        if (l->deliverer_started)
                deliverer_stop(&l->deliverer);
        http_server_stop(l->http);
        s3_check_stop(l->s3_check);
        if (l->store_opened)
                store_close(&l->store);
        metrics_free(l->metrics);
        if (l->signal_fd >= 0)
                close(l->signal_fd);
}
