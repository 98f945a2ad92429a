#include "worker/daemon/loop.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "worker/exec/backend.h"
#include "worker/db/db.h"
#include "worker/webhook/deliver.h"
#include "worker/http/server.h"
#include "worker/metrics/wmetrics.h"
#include "worker/exec/claim_gate.h"
#include "worker/workdir/dir_bin.h"
#include "worker/workdir/ws_pool.h"
#include "worker/log/log.h"
#include "worker/daemon/notify.h"
#include "worker/daemon/in_doubt.h"
#include "worker/daemon/queue.h"
#include "worker/daemon/s3_check.h"
#include "worker/exec/sandbox_pool.h"
#include "worker/daemon/slots.h"
#include "worker/daemon/startup.h"
#include "worker/workdir/disk_budget.h"
#include "worker/workdir/janitor.h"
#include "worker/exec/proc_reaper.h"
#include "worker/job/store.h"
#include "version.h"

struct loop {
        const struct worker_config *cfg;
        char instance[33];         /* new at every start; leases are held by it */
        struct slots slots;
        struct store store;
        struct deliverer deliverer;
        struct metrics *metrics;       /* NULL without --metrics-addr */
        struct ws_pool *ws_pool;       /* ready workspace filesystems, or NULL */
        struct dir_bin *dirs;          /* kept job directories, or NULL */
        struct disk_budget *disk;      /* what workspaces may take, or NULL */
        struct http_server *http;
        struct s3_check *s3_check;     /* NULL without S3 */
        /* What worker_run started that teardown() must stop; with the
         * pointers above, NULL or false when it was not started. */
        struct sandbox_pool *sandbox_pool; /* warm sandboxes, or NULL */
        char *cgroup_parent;       /* of job cgroups (owned), or NULL */
        bool store_opened, deliverer_started;
        _Atomic bool ready_db;         /* read by the HTTP thread */
        _Atomic bool ready_draining;
        uint64_t next_stats;
        PGconn *conn;              /* control connection: claim, heartbeat, housekeeping */
        PGconn *listen;            /* LISTEN: conn itself, a direct connection, or NULL */
        bool leader;               /* holds the housekeeping lease */
        uint64_t next_lead, next_prune;
        unsigned pruned;           /* jobs deleted since the last jobs.pruned report */
        int signal_fd;
        bool private_mounts;       /* job mounts live in our own mount namespace */
        bool want_claim;
        bool draining;
        bool stopping_all;         /* drain deadline passed or second signal */
        unsigned reconnect_ms;     /* current backoff */
        /* The leader rescues expired leases only from settled_at on: a lease
         * after the database was out of reach, or this process stalled
         * (see defer_rescue). */
        uint64_t lost_at;          /* the database out of reach since; 0: it is not */
        uint64_t settled_at, last_beat_ms;
        const char *deferred_why;  /* not logged yet */
        uint64_t next_reconnect, next_poll, next_heartbeat, next_rescue, next_schedule,
                drain_deadline;
        uint64_t watchdog_ms, next_watchdog; /* systemd WATCHDOG=1; 0: none asked */
        bool rated;                /* a queue of ours has a rate (claim_delay_ms) */
        uint64_t next_rate_check;
        struct in_doubt in_doubt;  /* jobs of claims whose commit is not known */
};

static uint64_t ms(double seconds)
{
        return (uint64_t)(seconds * 1000);
}

/* Sandbox helpers still in their teardown after reporting: the worker's
 * exit would kill them (PDEATHSIG) and leave their cgroups behind. */
static void reap_helpers(const struct worker_config *cfg)
{
        unsigned killed = proc_reaper_drain(10);
        if (killed)
                log_event(LOG_WARN, "sandbox.teardown_killed", "worker_id", cfg->worker_id,
                          LOG_INT("helpers", killed), "detail", "sandbox helpers still tearing "
                          "down 10 s after the worker stopped were killed", NULL);
}

/* Leases that ran out while the database was out of reach (down, frozen,
 * cut off) or while this process stalled are nobody's fault: every live
 * worker, this one included, renews its own within a third of a lease of
 * getting the database back.  Rescuing them sooner would run jobs twice
 * whose workers are alive.  A worker that died meanwhile has its jobs
 * rescued one lease later.  Out of reach for less than a third of a lease
 * (a dropped connection, back at once), no live worker's lease can have
 * run out: no grace, or a flapping connection would put rescues off for
 * good. */
static void defer_rescue(struct loop *l, const char *why)
{
        l->settled_at = bc_mono_ms() + ms(l->cfg->lease_s);
        l->deferred_why = why;
}

static void note_out_of_reach(struct loop *l)
{
        if (!l->lost_at)
                l->lost_at = bc_mono_ms();
}

static void lose_connection(struct loop *l, const struct bc_error *err)
{
        note_out_of_reach(l);
        log_event(LOG_WARN, "db.lost", "worker_id", l->cfg->worker_id, "error",
                  bc_error_message(err), LOG_INT("retry_ms", 100), NULL);
        if (l->listen && l->listen != l->conn)
                PQfinish(l->listen);
        PQfinish(l->conn);
        l->conn = NULL;
        l->listen = NULL;
        l->ready_db = false;
        wmetrics_db_up(l->metrics, false);
        if (!l->draining)
                notify_status(false, "database connection lost, reconnecting");
        l->reconnect_ms = 100;
        l->next_reconnect = bc_mono_ms() + l->reconnect_ms;
}

/* Called for every failed control statement: a lost connection is retried
 * later, a statement error is logged and the loop goes on. */
static void control_failed(struct loop *l, const char *what, struct bc_error *err)
{
        if (db_connection_lost(l->conn)) {
                lose_connection(l, err);
        } else {
                log_event(LOG_ERROR, "db.error", "worker_id", l->cfg->worker_id, "call", what,
                          "error", bc_error_message(err), NULL);
        }
        bc_error_clear(err);
}

/* The next id of a space-separated list (a heartbeat's, a query's) into
 * one; the rest of the list, or NULL at its end. */
static const char *next_id(const char *list, char one[40])
{
        if (!list || !*list)
                return NULL;
        size_t n = strcspn(list, " ");
        snprintf(one, 40, "%.*s", (int)(n < 39 ? n : 39), list);
        return list + n + (list[n] == ' ');
}

static void catch_up_cancels(struct loop *l)
{
        _cleanup_free_ char *running = slots_running_ids(&l->slots);
        if (!running || !*running)
                return;
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_free_ char *ids = NULL;
        if (queue_cancel_requested(l->conn, running, &ids, &err) < 0) {
                control_failed(l, "cancel_requested", &err);
                return;
        }
        char one[40];
        for (const char *rest = next_id(ids, one); rest; rest = next_id(rest, one))
                slots_stop(&l->slots, one, JOB_STOP_CANCEL);
}

/* LISTEN on the control connection, or on a direct one when the control
 * connection goes through PgBouncer; nothing with --poll-only. */
static int open_listen(struct loop *l, PGconn *conn, PGconn **ret_listen, struct bc_error *err)
{
        *ret_listen = NULL;
        if (l->cfg->poll_only)
                return 0;
        PGconn *listen = l->cfg->listen_database_url
                                 ? db_connect(l->cfg->listen_database_url, "boxcar-listen", err)
                                 : conn;
        if (listen && queue_listen(listen, err) >= 0) {
                *ret_listen = listen;
                return 0;
        }
        if (listen != conn)
                PQfinish(listen);
        return -EPROTO;
}

/* Before the first claim: jobs this name still holds belong to a process
 * of the same name that is gone (kill -9, a restarted host or pod). */
static int rescue_orphans(struct loop *l, PGconn *conn, struct bc_error *err)
{
        int n = queue_rescue_orphans(conn, l->cfg->worker_id, l->instance, err);
        if (n > 0)
                log_event(LOG_WARN, "jobs.rescued", "worker_id", l->cfg->worker_id,
                          LOG_INT("count", n), "reason",
                          "left behind by an earlier process of this worker id", NULL);
        return n < 0 ? n : 0;
}

static void try_connect(struct loop *l)
{
        struct bc_error err = BC_ERROR_INIT;
        PGconn *conn = db_connect(l->cfg->database_url, "boxcar-worker", &err);
        PGconn *listen = NULL;
        if (conn && open_listen(l, conn, &listen, &err) >= 0 &&
            queue_register(conn, l->cfg, l->instance, &err) >= 0 &&
            rescue_orphans(l, conn, &err) >= 0 &&
            (!l->cfg->webhook_default_url ||
             queue_set_default_webhook(conn, l->cfg->webhook_default_url, &err) >= 0) &&
            (!l->draining || queue_set_state(conn, l->cfg->worker_id, "draining", &err) >= 0)) {
                l->conn = conn;
                l->listen = listen;
                l->next_lead = 0;
                l->ready_db = true;
                wmetrics_db_up(l->metrics, true);
                l->want_claim = true;
                l->next_heartbeat = 0;
                l->last_beat_ms = 0;
                log_event(LOG_INFO, "db.connected", "worker_id", l->cfg->worker_id, NULL);
                if (l->lost_at && bc_mono_ms() - l->lost_at >= ms(l->cfg->lease_s) / 3)
                        defer_rescue(l, "the database was out of reach");
                l->lost_at = 0;
                /* READY=1 here, the first time: registered, orphans
                 * rescued, LISTEN on, the next loop pass claims. */
                if (!l->draining) {
                        char queues[256] = "";
                        for (char *const *q = l->cfg->queues; *q; q++)
                                snprintf(queues + strlen(queues), sizeof(queues) - strlen(queues),
                                         "%s%s", q == l->cfg->queues ? "" : ",", *q);
                        notify_status(true, "serving %s with %u slots as %s", queues,
                                      l->cfg->concurrency, l->cfg->worker_id);
                }
                catch_up_cancels(l);
                return;
        }
        if (listen && listen != conn)
                PQfinish(listen);
        PQfinish(conn);
        note_out_of_reach(l);
        log_event(LOG_WARN, "db.connect_failed", "worker_id", l->cfg->worker_id, "error",
                  bc_error_message(&err), LOG_INT("retry_ms", l->reconnect_ms), NULL);
        bc_error_clear(&err);
        l->next_reconnect = bc_mono_ms() + l->reconnect_ms;
        l->reconnect_ms = l->reconnect_ms * 2 > 5000 ? 5000 : l->reconnect_ms * 2;
}

static bool wanted_queue(const struct loop *l, const char *queue)
{
        for (char *const *q = l->cfg->queues; *q; q++)
                if (strcmp(*q, queue) == 0)
                        return true;
        return false;
}

static void start_drain(struct loop *l, const char *why);

/* The notifications libpq holds.  A query on the listening connection
 * (the claim, a heartbeat, schedule_tick: the control connection listens
 * unless it goes through PgBouncer) reads those that arrive meanwhile
 * along with its result, so the socket has nothing left for poll() to
 * see: they are taken after every pass of the loop too, not only when the
 * socket wakes it.  Before, such a job waited for the next notification or
 * the poll interval (in the bench, 21 ms for the next job's). */
static void take_notifies(struct loop *l)
{
        for (PGnotify *n = PQnotifies(l->listen); n; n = PQnotifies(l->listen)) {
                if (strcmp(n->relname, "boxcar_jobs") == 0 && wanted_queue(l, n->extra))
                        l->want_claim = true;
                else if (strcmp(n->relname, "boxcar_cancel") == 0)
                        slots_stop(&l->slots, n->extra, JOB_STOP_CANCEL);
                else if (strcmp(n->relname, "boxcar_webhooks") == 0)
                        deliverer_kick(&l->deliverer);
                else if (strcmp(n->relname, "boxcar_drain") == 0 &&
                         strcmp(n->extra, l->cfg->worker_id) == 0 && !l->draining)
                        start_drain(l, "boxcar worker drain");
                PQfreemem(n);
        }
}

static void handle_notifies(struct loop *l)
{
        if (!PQconsumeInput(l->listen)) {
                struct bc_error err = BC_ERROR_INIT;
                db_conn_error(l->listen, &err);
                lose_connection(l, &err);
                bc_error_clear(&err);
                return;
        }
        take_notifies(l);
}

/* The jobs of a claim whose rows came before its commit (queue_claim's
 * pending): in their slots, being prepared, while the database makes the
 * claim durable; then the gate lets them start, or stops them unstarted.
 * One whose claim committed unseen (the answer lost with the connection)
 * is held in the database without running here: heartbeat() releases it. */
static bool settle_claim(struct loop *l, struct claimed_job **jobs, size_t got)
{
        /* Without a gate (out of memory), the jobs wait here for the commit. */
        struct claim_gate *gate = got ? claim_gate_new((unsigned)got + 1) : NULL;
        for (size_t i = 0; gate && i < got; i++) {
                jobs[i]->gate = gate;
                slots_assign(&l->slots, jobs[i]);
        }
        struct bc_error err = BC_ERROR_INIT;
        bool committed = queue_claim_commit(l->conn, &err) == 0;
        bool unknown = !committed && db_connection_lost(l->conn);
        /* Until the gate is decided no slot is done with its job: every
         * jobs[i] is still there. */
        for (size_t i = 0; i < got; i++) {
                if (committed)
                        wmetrics_claimed(l->metrics, jobs[i]->queue, jobs[i]->pickup_s);
                else if (gate)
                        slots_stop(&l->slots, jobs[i]->id, JOB_STOP_LOST);
                if (unknown)
                        in_doubt_add(&l->in_doubt, jobs[i]->id);
        }
        if (!committed)
                log_event(LOG_WARN, "claim.not_committed", "worker_id", l->cfg->worker_id,
                          LOG_INT("jobs", (long long)got), "error", bc_error_message(&err),
                          "effect", "its jobs were stopped before they started; they stay "
                          "queued (or are released by the next heartbeat)", NULL);
        claim_gate_decide(gate, committed);
        claim_gate_unref(gate);
        for (size_t i = 0; !gate && i < got; i++) {
                if (committed)
                        slots_assign(&l->slots, jobs[i]);
                else
                        claimed_job_free(jobs[i]);
        }
        if (!committed)
                control_failed(l, "claim", &err);
        return committed;
}

static void claim(struct loop *l)
{
        unsigned n = slots_free(&l->slots);
        struct claimed_job **jobs = NULL;
        size_t got = 0;
        bool pending = false;
        struct bc_error err = BC_ERROR_INIT;
        l->want_claim = false;
        l->next_poll = bc_mono_ms() + ms(l->cfg->poll_interval_s);
        if (queue_claim(l->conn, l->cfg, l->instance, n, &jobs, &got, &pending, &err) < 0) {
                control_failed(l, "claim", &err);
                return;
        }
        bool held = pending ? settle_claim(l, jobs, got) : true;
        for (size_t i = 0; !pending && i < got; i++) {
                wmetrics_claimed(l->metrics, jobs[i]->queue, jobs[i]->pickup_s);
                slots_assign(&l->slots, jobs[i]);
        }
        free(jobs);
        if (!held)
                return;
        wmetrics_slots(l->metrics, l->slots.busy, l->slots.n);
        /* A full batch means more may be waiting: claim again as soon as a
         * slot frees up, without waiting for a notification. */
        l->want_claim = got == n;
        /* A short one may be a rate limit: claim again at its next token
         * (no notification says when), not at the next poll.  Asked only
         * while one of our queues has a rate, and once a poll interval in
         * case one was set since: not a second round trip per claim. */
        uint64_t now = bc_mono_ms();
        bool ask = got < n && (l->rated || now >= l->next_rate_check);
        if (ask)
                l->next_rate_check = now + ms(l->cfg->poll_interval_s);
        int delay = ask ? queue_claim_delay_ms(l->conn, l->cfg, &l->rated, &err) : 0;
        if (delay < 0)
                control_failed(l, "claim_delay_ms", &err);
        else if (delay > 0 && bc_mono_ms() + (uint64_t)delay < l->next_poll)
                l->next_poll = bc_mono_ms() + (uint64_t)delay;
}

/* Jobs the database says this worker holds that no slot runs.  Renewed by
 * every heartbeat, they would stay "running" for as long as this process
 * lives.  A claim that committed while its answer was lost with the
 * connection (in_doubt.h): its jobs never started, and go back to the
 * queue, their attempt not counted.  Any other (a result the database
 * refused to record, after the command ran): retried as a lost attempt,
 * counted.  Claims run on this thread, so a held job claimed before the
 * heartbeat is in its slot by now. */
static void release_unrun(struct loop *l, const char *held)
{
        _cleanup_free_ char *running = slots_running_ids(&l->slots);
        char one[40];
        for (const char *rest = next_id(held, one); rest; rest = next_id(rest, one)) {
                if (!running || strstr(running, one))
                        continue;
                struct bc_error err = BC_ERROR_INIT;
                bool never_ran = in_doubt_take(&l->in_doubt, one);
                int r = never_ran ? queue_release(l->conn, l->cfg->worker_id, one, &err)
                                  : queue_retry_lost(l->conn, l->cfg->worker_id, one,
                                                     "held by its worker, which no longer ran it "
                                                     "(its result could not be recorded)", &err);
                if (r < 0) {
                        control_failed(l, never_ran ? "release" : "retry_or_fail", &err);
                        return;
                }
                if (r > 0)
                        log_event(LOG_WARN, "job.released_unrun", "job_id", one, "worker_id",
                                  l->cfg->worker_id, "detail", never_ran
                                  ? "its claim committed unseen (the connection was lost): "
                                    "back in the queue, its attempt not counted"
                                  : "held by this worker in the database but run by none of "
                                    "its slots: retried as a lost attempt", NULL);
        }
}

/* Every second on the leader: enqueue the periodic jobs that are due. */
static void schedule_tick(struct loop *l)
{
        l->next_schedule = bc_mono_ms() + 1000;
        struct bc_error err = BC_ERROR_INIT;
        int n = queue_schedule_tick(l->conn, &err);
        if (n < 0) {
                control_failed(l, "schedule_tick", &err);
                return;
        }
        if (n > 0)
                log_event(LOG_INFO, "schedules.enqueued", "worker_id", l->cfg->worker_id,
                          LOG_INT("count", n), NULL);
}

static void heartbeat(struct loop *l)
{
        uint64_t sent = bc_mono_ms();
        l->next_heartbeat = sent + ms(l->cfg->lease_s / 3);
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_free_ char *held = NULL;
        if (queue_heartbeat(l->conn, l->cfg, l->instance, &held, &err) < 0) {
                control_failed(l, "heartbeat", &err);
                return;
        }
        /* A beat or more missed: the database or this process stalled (a
         * frozen server answers late, not with an error). */
        uint64_t done = bc_mono_ms();
        if (l->last_beat_ms && done - l->last_beat_ms > ms(l->cfg->lease_s) * 2 / 3)
                defer_rescue(l, "heartbeats stalled");
        l->last_beat_ms = done;
        slots_stop_unheld(&l->slots, held, sent);
        release_unrun(l, held);
}

/* Every lease/3: renew leadership (housekeeping runs on the leader only)
 * and notice a drain requested from another host, in case its NOTIFY was
 * missed. */
static void lead(struct loop *l)
{
        l->next_lead = bc_mono_ms() + ms(l->cfg->lease_s / 3);
        struct bc_error err = BC_ERROR_INIT;
        int r = queue_try_lead(l->conn, l->cfg, &err);
        if (r < 0) {
                control_failed(l, "try_lead", &err);
                return;
        }
        if (r != l->leader)
                log_event(LOG_INFO, r ? "leader.elected" : "leader.lost", "worker_id",
                          l->cfg->worker_id, NULL);
        l->leader = r;
        wmetrics_leader(l->metrics, l->leader);
        r = l->draining ? 0 : queue_drain_requested(l->conn, l->cfg->worker_id, &err);
        if (r < 0)
                control_failed(l, "drain_requested", &err);
        else if (r > 0)
                start_drain(l, "boxcar worker drain");
}

/* Every ten minutes on the leader: jobs past --retention go, PRUNE_BATCH
 * at a time with the loop's other work (claims) in between; each batch
 * holds the loop about 10 ms. */
#define PRUNE_BATCH 500
#define PRUNE_GAP_MS 200

static void prune(struct loop *l)
{
        l->next_prune = bc_mono_ms() + 10 * 60 * 1000;
        struct bc_error err = BC_ERROR_INIT;
        int n = queue_prune(l->conn, l->cfg->retention_s, PRUNE_BATCH, &err);
        if (n < 0) {
                l->pruned = 0;
                control_failed(l, "prune", &err);
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

static void rescue(struct loop *l)
{
        /* A beat first, and the rescue only if it came back in time: sent
         * into a frozen server, the rescue itself would run at the thaw,
         * before the other workers' heartbeats.  The beat waits there
         * instead, and starts the grace (heartbeat). */
        heartbeat(l);
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
                control_failed(l, "rescue_expired", &err);
                return;
        }
        if (n > 0)
                log_event(LOG_INFO, "jobs.rescued", "worker_id", l->cfg->worker_id,
                          LOG_INT("count", n), NULL);
}

/* The queue depth gauges, refreshed every poll interval. */
static void refresh_queue_stats(struct loop *l)
{
        l->next_stats = bc_mono_ms() + ms(l->cfg->poll_interval_s);
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgresult_ PGresult *res = queue_stats(l->conn, &err);
        if (!res) {
                control_failed(l, "queue_stats", &err);
                return;
        }
        wmetrics_queue_depth_begin(l->metrics);
        /* The queues this worker serves show as empty rather than not at
         * all when nothing is queued or running on them (a row below
         * overwrites the zeros). */
        for (char *const *q = l->cfg->queues; *q; q++)
                wmetrics_queue_depth(l->metrics, *q, 0, 0, 0, 0);
        for (int i = 0; i < PQntuples(res); i++)
                wmetrics_queue_depth(l->metrics, PQgetvalue(res, i, 0), atof(PQgetvalue(res, i, 1)),
                                     atof(PQgetvalue(res, i, 2)), atof(PQgetvalue(res, i, 3)),
                                     atof(PQgetvalue(res, i, 4)));
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

static void start_drain(struct loop *l, const char *why)
{
        if (l->draining) {
                /* A second signal: stop now, handing every job back. */
                l->stopping_all = true;
                l->slots.hard = true;
                slots_stop(&l->slots, NULL, JOB_STOP_DRAIN);
                log_event(LOG_WARN, "worker.stop_now", "worker_id", l->cfg->worker_id, NULL);
                return;
        }
        l->draining = true;
        l->ready_draining = true;
        disk_budget_drain(l->disk);
        wmetrics_draining(l->metrics, true);
        l->drain_deadline = bc_mono_ms() + ms(l->cfg->drain_timeout_s);
        notify_stopping(why);
        log_event(LOG_INFO, "worker.draining", "worker_id", l->cfg->worker_id, "reason", why,
                  NULL);
        struct bc_error err = BC_ERROR_INIT;
        if (l->conn && queue_set_state(l->conn, l->cfg->worker_id, "draining", &err) < 0)
                control_failed(l, "set_worker_state", &err);
}

static void handle_signals(struct loop *l)
{
        struct signalfd_siginfo si;
        while (read(l->signal_fd, &si, sizeof(si)) == sizeof(si))
                start_drain(l, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
}

static int next_timeout(const struct loop *l)
{
        /* A notification taken after the loop's work asks for a claim now. */
        if (l->conn && l->want_claim && !l->draining && slots_free(&l->slots))
                return 0;
        uint64_t now = bc_mono_ms();
        uint64_t next = now + 60000;
        if (!l->conn)
                next = l->next_reconnect < next ? l->next_reconnect : next;
        else {
                if (!l->draining && slots_free(&l->slots) && l->next_poll < next)
                        next = l->next_poll;
                if (l->next_heartbeat < next)
                        next = l->next_heartbeat;
                if (l->leader && l->next_rescue < next)
                        next = l->next_rescue;
                if (l->leader && l->next_schedule < next)
                        next = l->next_schedule;
                if (l->leader && l->cfg->retention_s > 0 && l->next_prune < next)
                        next = l->next_prune;
                if (l->next_lead < next)
                        next = l->next_lead;
        }
        if (l->draining && !l->stopping_all && l->drain_deadline < next)
                next = l->drain_deadline;
        if (l->stopping_all && !l->slots.hard && l->drain_deadline + 10000 < next)
                next = l->drain_deadline + 10000;
        if (l->watchdog_ms && l->next_watchdog < next)
                next = l->next_watchdog;
        return next <= now ? 0 : (int)(next - now);
}

static void do_timers(struct loop *l)
{
        uint64_t now = bc_mono_ms();
        /* From the main loop itself: a loop stuck in a call stops the
         * pings, and systemd restarts the worker. */
        if (l->watchdog_ms && now >= l->next_watchdog) {
                notify_watchdog();
                l->next_watchdog = now + l->watchdog_ms;
        }
        if (!l->conn && now >= l->next_reconnect)
                try_connect(l);
        if (l->draining && !l->stopping_all && now >= l->drain_deadline && l->slots.busy) {
                l->stopping_all = true;
                log_event(LOG_WARN, "worker.drain_timeout", "worker_id", l->cfg->worker_id,
                          "detail", "handing running jobs back to the queue", NULL);
                slots_stop(&l->slots, NULL, JOB_STOP_DRAIN);
        }
        /* Reports still retrying 10 s after the deadline (the database is
         * away): give up, the jobs are rescued once their leases expire. */
        if (l->stopping_all && !l->slots.hard && now >= l->drain_deadline + 10000)
                l->slots.hard = true;
        /* Also when idle: it keeps this worker's row alive in worker_status. */
        if (l->conn && now >= l->next_heartbeat)
                heartbeat(l);
        if (l->conn && now >= l->next_lead)
                lead(l);
        if (l->conn && l->leader && now >= l->next_rescue)
                rescue(l);
        if (l->conn && l->leader && now >= l->next_schedule)
                schedule_tick(l);
        if (l->conn && l->leader && l->cfg->retention_s > 0 && now >= l->next_prune)
                prune(l);
        if (l->conn && l->metrics && now >= l->next_stats)
                refresh_queue_stats(l);
        if (l->conn && !l->draining && slots_free(&l->slots) &&
            (l->want_claim || now >= l->next_poll))
                claim(l);
}

static void run_loop(struct loop *l)
{
        while (!(l->draining && l->slots.busy == 0)) {
                struct pollfd p[3] = {
                        { .fd = l->signal_fd, .events = POLLIN },
                        { .fd = l->slots.done_fd, .events = POLLIN },
                        { .fd = l->listen ? PQsocket(l->listen) : -1, .events = POLLIN },
                };
                int n = poll(p, 3, next_timeout(l));
                if (n < 0 && errno != EINTR)
                        break;
                if (p[0].revents)
                        handle_signals(l);
                if (p[1].revents) {
                        slots_collect(&l->slots);
                        wmetrics_slots(l->metrics, l->slots.busy, l->slots.n);
                }
                if (l->listen && p[2].revents)
                        handle_notifies(l);
                do_timers(l);
                if (l->listen)
                        take_notifies(l);
        }
}

/* One order for every exit, each step before the ones that what it stops
 * still uses:
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
static void teardown(struct loop *l)
{
        const struct worker_config *cfg = l->cfg;
        if (l->conn) {
                struct bc_error ignored = BC_ERROR_INIT;
                if (l->leader)
                        queue_resign(l->conn, cfg->worker_id, &ignored);
                queue_set_state(l->conn, cfg->worker_id, "stopped", &ignored);
                bc_error_clear(&ignored);
        }
        if (l->listen && l->listen != l->conn)
                PQfinish(l->listen);
        PQfinish(l->conn);
        l->conn = NULL;
        l->listen = NULL;
        if (l->slots.slot)
                slots_join(&l->slots);
        backend_sandbox_set_pool(NULL, NULL);
        sandbox_pool_stop(l->sandbox_pool);
        reap_helpers(cfg);
        janitor_drain();
        dir_bin_free(l->dirs);
        ws_pool_stop(l->ws_pool);
        disk_budget_close(l->disk);
        backend_sandbox_set_cgroup_parent(NULL);
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

int worker_run(const struct worker_config *cfg, struct bc_error *err)
{
        struct loop l = { .cfg = cfg, .signal_fd = -1, .reconnect_ms = 100,
                          .watchdog_ms = notify_watchdog_interval_ms() };
        int r = worker_new_instance_id(l.instance, err);
        if (r >= 0)
                r = worker_setup_work_dir(cfg, &l.private_mounts, err);
        if (r >= 0)
                r = worker_setup_signals(&l.signal_fd, err);
        /* Before start_metrics: the first thread of the process. */
        l.cgroup_parent = r >= 0 ? worker_setup_cgroup(cfg) : NULL;
        if (r >= 0)
                r = start_metrics(&l, err);
        l.slots.metrics = l.metrics;
        l.deliverer.metrics = l.metrics;
        _cleanup_free_ char *cache_dir = NULL, *image_dir = NULL, *artifact_dir = NULL;
        if (r >= 0 && (asprintf(&cache_dir, "%s/volumes", cfg->work_dir) < 0 ||
                       asprintf(&image_dir, "%s/images", cfg->work_dir) < 0 ||
                       worker_artifact_cache_dir(cfg, &artifact_dir) < 0))
                r = bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        if (r >= 0) {
                r = store_open(&l.store, cache_dir, image_dir, artifact_dir,
                               cfg->volume_cache_bytes,
                               (long)cfg->artifact_url_ttl_s, err);
                l.store_opened = r >= 0;
                l.store.url_guard = &cfg->url_guard;
        }
        /* Always checked: a missing bucket or a wrong key shows at start
         * in the log (and in /readyz), not in the first job. */
        if (r >= 0 && l.store.s3)
                r = s3_check_start(l.store.s3, cfg->worker_id, &l.s3_check, err);
        int stop = 0;
        if (r >= 0) {
                stop = worker_wait_for_schema(cfg, l.signal_fd, l.watchdog_ms, err);
                r = stop < 0 ? stop : 0;
        }
        /* Before the pools: the caches keep the reserve from their start. */
        if (r >= 0 && !stop) {
                r = worker_open_disk_budget(cfg, &l.disk, err);
                if (l.disk)
                        store_give_way(&l.store, l.disk, l.metrics);
                l.slots.disk = l.disk;
        }
        if (r >= 0 && !stop)
                worker_start_sandbox_pool(cfg, l.cgroup_parent, l.store.images, l.metrics,
                                          &l.sandbox_pool);
        if (r >= 0 && !stop) {
                l.ws_pool = worker_start_ws_pool(cfg, l.private_mounts, l.metrics);
                l.slots.ws_pool = l.ws_pool;
                l.dirs = dir_bin_new(cfg->work_dir, cfg->concurrency + WS_POOL_PREFETCH);
                l.slots.dirs = l.dirs;
        }
        if (r >= 0 && !stop)
                r = slots_start(&l.slots, cfg, &l.store, err);
        const char *no_webhooks = NULL;
        if (r >= 0 && !stop) {
                r = deliverer_start(&l.deliverer, cfg, &no_webhooks, err);
                /* Stopped even when it failed: a failed start leaves threads. */
                l.deliverer_started = true;
        }
        if (r < 0 || stop) {
                teardown(&l);
                return r < 0 ? r : 0;
        }
        log_event(LOG_INFO, "worker.started", "worker_id", cfg->worker_id,
                  LOG_INT("concurrency", cfg->concurrency),
                  "sandbox", cfg->sandbox == BACKEND_NAMESPACE ? "namespace" : "none",
                  "s3", l.store.s3 ? "configured" : "not configured",
                  "version", BOXCAR_VERSION, "instance", l.instance, NULL);
        if (no_webhooks)
                log_event(LOG_WARN, "webhooks.disabled", "worker_id", cfg->worker_id, "reason",
                          no_webhooks, "detail", "this worker delivers no webhooks; workers "
                          "with a secret deliver them", NULL);
        try_connect(&l);
        run_loop(&l);
        teardown(&l);
        log_event(LOG_INFO, "worker.stopped", "worker_id", cfg->worker_id, NULL);
        return 0;
}
