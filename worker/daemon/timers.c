/* The main loop's periodic calls on the control connection, each setting
 * its own next time (loop.c's do_timers says when they are due): the
 * heartbeat that renews this worker's leases, the housekeeping lease
 * (leadership), and the leader's work: rescue of expired leases (with
 * its grace after an outage), periodic jobs, pruning; and the queue depth
 * gauges. */
#include <stdlib.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "worker/daemon/daemon-internal.h"
#include "worker/daemon/queue.h"
#include "worker/db/db.h"
#include "worker/log/log.h"
#include "worker/metrics/wmetrics.h"

/* Leases that ran out while the database was out of reach (down, frozen,
 * cut off) or while this process stalled are nobody's fault: every live
 * worker, this one included, renews its own within a third of a lease of
 * getting the database back.  Rescuing them sooner would run jobs twice
 * whose workers are alive.  A worker that died meanwhile has its jobs
 * rescued one lease later.  Out of reach for less than a third of a lease
 * (a dropped connection, back at once), no live worker's lease can have
 * run out: no grace, or a flapping connection would put rescues off for
 * good. */
void loop_defer_rescue(struct loop *l, const char *why)
{
        l->settled_at = bc_mono_ms() + ms(l->cfg->lease_s);
        l->deferred_why = why;
}

/* Every second on the leader: enqueue the periodic jobs that are due. */
void loop_schedule_tick(struct loop *l)
{
        l->next_schedule = bc_mono_ms() + 1000;
        struct bc_error err = BC_ERROR_INIT;
        int n = queue_schedule_tick(l->conn, &err);
        if (n < 0) {
                loop_control_failed(l, "schedule_tick", &err);
                return;
        }
        if (n > 0)
                log_event(LOG_INFO, "schedules.enqueued", "worker_id", l->cfg->worker_id,
                          LOG_INT("count", n), NULL);
}

void loop_heartbeat(struct loop *l)
{
        uint64_t sent = bc_mono_ms();
        l->next_heartbeat = sent + ms(l->cfg->lease_s / 3);
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_free_ char *held = NULL;
        if (queue_heartbeat(l->conn, l->cfg, l->instance, &held, &err) < 0) {
                loop_control_failed(l, "heartbeat", &err);
                return;
        }
        /* A beat or more missed: the database or this process stalled (a
         * frozen server answers late, not with an error). */
        uint64_t done = bc_mono_ms();
        if (l->last_beat_ms && done - l->last_beat_ms > ms(l->cfg->lease_s) * 2 / 3)
                loop_defer_rescue(l, "heartbeats stalled");
        l->last_beat_ms = done;
        slots_stop_unheld(&l->slots, held, sent);
        loop_release_unrun(l, held);
}

/* Every lease/3: renew leadership (housekeeping runs on the leader only)
 * and notice a drain requested from another host, in case its NOTIFY was
 * missed. */
void loop_lead(struct loop *l)
{
        l->next_lead = bc_mono_ms() + ms(l->cfg->lease_s / 3);
        struct bc_error err = BC_ERROR_INIT;
        int r = queue_try_lead(l->conn, l->cfg, &err);
        if (r < 0) {
                loop_control_failed(l, "try_lead", &err);
                return;
        }
        if (r != l->leader)
                log_event(LOG_INFO, r ? "leader.elected" : "leader.lost", "worker_id",
                          l->cfg->worker_id, NULL);
        l->leader = r;
        wmetrics_leader(l->metrics, l->leader);
        r = l->draining ? 0 : queue_drain_requested(l->conn, l->cfg->worker_id, &err);
        if (r < 0)
                loop_control_failed(l, "drain_requested", &err);
        else if (r > 0)
                loop_start_drain(l, "boxcar worker drain");
}

/* Every ten minutes on the leader: jobs past --retention go, PRUNE_BATCH
 * at a time with the loop's other work (claims) in between; each batch
 * holds the loop about 10 ms. */
#define PRUNE_BATCH 500
#define PRUNE_GAP_MS 200

void loop_storage_gc(struct loop *l)
{
        l->next_storage_gc = bc_mono_ms() + ms(l->cfg->storage_gc_interval_s);
        gc_runner_kick(&l->gc);
}

void loop_prune(struct loop *l)
{
        l->next_prune = bc_mono_ms() + 10 * 60 * 1000;
        struct bc_error err = BC_ERROR_INIT;
        int n = queue_prune(l->conn, l->cfg->retention_s, PRUNE_BATCH, &err);
        if (n < 0) {
                l->pruned = 0;
                loop_control_failed(l, "prune", &err);
                return;
        }
        l->pruned += (unsigned)n;
        log_event(LOG_DEBUG, "jobs.prune_batch", "worker_id", l->cfg->worker_id,
                  LOG_INT("count", n), NULL);
        if (n == PRUNE_BATCH) {
                l->next_prune = bc_mono_ms() + PRUNE_GAP_MS;
                return;
        }
        log_event(l->pruned ? LOG_INFO : LOG_DEBUG, "jobs.pruned", "worker_id", l->cfg->worker_id,
                  LOG_INT("count", l->pruned), NULL);
        l->pruned = 0;
}

void loop_rescue(struct loop *l)
{
        /* A beat first, and the rescue only if it came back in time: sent
         * into a frozen server, the rescue itself would run at the thaw,
         * before the other workers' heartbeats.  The beat waits there
         * instead, and starts the grace (heartbeat). */
        loop_heartbeat(l);
        if (!l->conn)
                return;
        uint64_t now = bc_mono_ms();
        if (now < l->settled_at) {
                if (l->deferred_why)
                        log_event(LOG_INFO, "jobs.rescue_deferred", "worker_id", l->cfg->worker_id,
                                  "reason", l->deferred_why,
                                  LOG_INT("for_ms", l->settled_at - now), NULL);
                l->deferred_why = NULL;
                l->next_rescue = l->settled_at;
                return;
        }
        l->next_rescue = now + ms(l->cfg->lease_s / 2);
        struct bc_error err = BC_ERROR_INIT;
        int n = queue_rescue(l->conn, &err);
        if (n < 0) {
                loop_control_failed(l, "rescue_expired", &err);
                return;
        }
        if (n > 0)
                log_event(LOG_INFO, "jobs.rescued", "worker_id", l->cfg->worker_id,
                          LOG_INT("count", n), NULL);
}

/* The queue depth gauges, refreshed every poll interval. */
void loop_refresh_queue_stats(struct loop *l)
{
        l->next_stats = bc_mono_ms() + ms(l->cfg->poll_interval_s);
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgresult_ PGresult *res = queue_stats(l->conn, &err);
        if (!res) {
                loop_control_failed(l, "queue_stats", &err);
                return;
        }
        wmetrics_queue_depth_begin(l->metrics);
        /* The queues this worker serves show as empty rather than not at
         * all when nothing is queued or running on them (a row below
         * overwrites the zeros). */
        for (char *const *q = l->cfg->queues; *q; q++)
                wmetrics_queue_depth(l->metrics, *q, 0, 0, 0, 0);
        for (int i = 0; i < PQntuples(res); i++)
                wmetrics_queue_depth(l->metrics, PQgetvalue(res, i, 0),
                                     atof(PQgetvalue(res, i, 1)), atof(PQgetvalue(res, i, 2)),
                                     atof(PQgetvalue(res, i, 3)), atof(PQgetvalue(res, i, 4)));
}
