#include "worker/daemon/slots.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/dynbuf.h"
#include "worker/db/db.h"
#include "worker/db/db_pool.h"
#include "worker/log/log.h"
#include "worker/daemon/queue.h"
#include "worker/daemon/startup.h"
#include "worker/metrics/wmetrics.h"
#include "worker/exec/backend.h"
#include "worker/exec/claim_gate.h"
#include "worker/job/livelog.h"
#include "worker/job/services.h"

struct slot {
        struct slots *owner;
        unsigned index;
        pthread_t thread;
        pthread_cond_t wake;
        struct claimed_job *job;     /* under owner->lock */
        bool busy;                   /* assigned and not yet collected */
        bool finished;               /* the thread is done with the job */
        uint64_t assigned_ms;
        _Atomic int stop;            /* enum job_stop */
        _Atomic bool reporting;      /* the job ended; its outcome is being recorded */
        int cancel_fd;               /* eventfd the job's supervisor polls */
        const struct claimed_job *current;  /* the slot thread's job */
        /* Events kept back to go with a later call: comma-separated JSON
         * objects, and when the first was kept (0: none). */
        struct dynbuf events;
        uint64_t events_since_ms;
        /* The report handed to the reporter thread (under report_lock). */
        struct queue_report_row row;
        struct slot *report_next;
        bool report_done;
        bool report_retried;         /* recorded after a lost connection */
        int report_rc;               /* 1 held, 0 not held, <0 not recorded */
};

/* A kept-back event waits at most this long for the job's result before it
 * is written on its own: "started" shows soon for a long job, and a short
 * job's events go with its result, in the same call. */
#define KEEP_BACK_MS 500
/* Most results recorded by one call. */
#define REPORT_BATCH_MAX 64

static void sleep_ms(unsigned ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
        nanosleep(&ts, NULL);
}

/* The events that follow from the command's run and are soon followed by
 * its result: kept back and written with it. */
static bool kept_back(const char *kind)
{
        return strcmp(kind, "started") == 0 || strcmp(kind, "exited") == 0;
}

static void keep_event(struct slot *sl, const char *kind, const char *details_json)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        char at[32];
        strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%S", &tm);
        dynbuf_printf(&sl->events, "%s{\"kind\": \"%s\", \"at\": \"%s.%06ldZ\", \"details\": %s}",
                      sl->events.len ? ", " : "", kind, at, ts.tv_nsec / 1000,
                      details_json ? details_json : "null");
        if (!sl->events_since_ms)
                sl->events_since_ms = bc_mono_ms();
}

/* The kept-back events as a JSON array (caller frees), or NULL if none. */
static char *kept_events(const struct slot *sl)
{
        char *json = NULL;
        if (sl->events.len && asprintf(&json, "[%s]", sl->events.data) < 0)
                return NULL;
        return json;
}

static void forget_events(struct slot *sl)
{
        dynbuf_reset(&sl->events);
        sl->events_since_ms = 0;
}

/* Whether job's claim committed (claim_gate.h), waiting until it is
 * decided: the one place the worker asks, for the job's services
 * (svc_claim_wait) and for what the slot itself writes about the job.
 * Nothing about a job whose claim did not commit is ever written: it
 * never started, and was never this worker's. */
static bool claim_held(const struct claimed_job *job)
{
        return claim_gate_wait(job->gate);
}

/* Writes the kept-back events now.  Best effort, as the audit trail must
 * not hold the job back: when the database is away they stay kept and go
 * with the result (written once either way, see add_worker_events). */
static void flush_events(struct slot *sl, const struct claimed_job *job)
{
        if (!claim_held(job)) {
                forget_events(sl);   /* the claim did not commit: not ours */
                return;
        }
        _cleanup_free_ char *json = kept_events(sl);
        if (!json)
                return;
        struct bc_error err = BC_ERROR_INIT;
        PGconn *conn = db_pool_get(sl->owner->db, &err);
        if (conn && queue_add_events(conn, sl->owner->cfg->worker_id, job, json, &err) >= 0)
                forget_events(sl);
        else
                sl->events_since_ms = bc_mono_ms() + 900;   /* try again in a second */
        db_pool_put(sl->owner->db, conn);
        bc_error_clear(&err);
}

static void svc_event(void *ctx, const struct claimed_job *job, const char *kind,
                      const char *details_json)
{
        struct slot *sl = ctx;
        keep_event(sl, kind, details_json);
        /* Any other event goes now, after those kept before it. */
        if (!kept_back(kind))
                flush_events(sl, job);
}

static void svc_tick(void *ctx)
{
        struct slot *sl = ctx;
        if (sl->events_since_ms && sl->current &&
            bc_mono_ms() >= sl->events_since_ms + KEEP_BACK_MS)
                flush_events(sl, sl->current);
}

static int svc_append_logs(void *ctx, const struct livelog_batch *batch, struct bc_error *err)
{
        struct slot *sl = ctx;
        if (!claim_held(sl->current))
                return bc_error_set(err, BC_INTERNAL, ECANCELED,
                                    "not stored: the claim of the job did not commit");
        PGconn *conn = db_pool_get(sl->owner->db, err);
        int r = conn ? livelog_batch_store(conn, batch, err) : -ECONNREFUSED;
        db_pool_put(sl->owner->db, conn);
        return r;
}

static PGresult *svc_lookup(void *ctx, const char *sql, int nparams, const char *const *params,
                            struct bc_error *err)
{
        struct slot *sl = ctx;
        return db_pool_exec(sl->owner->db, sql, nparams, params, err);
}

static bool svc_claim_wait(void *ctx)
{
        struct slot *sl = ctx;
        return claim_held(sl->current);
}

/* *c, reconnected first when it is missing or lost; NULL with err set
 * when the database cannot be reached. */
static PGconn *conn_get(PGconn **c, const struct worker_config *cfg, struct bc_error *err)
{
        if (*c && !db_connection_lost(*c))
                return *c;
        PQfinish(*c);
        *c = db_connect(cfg->database_url, "boxcar-worker", err);
        return *c;
}

/* Records one batch of results, retrying through a lost database with
 * backoff (the results are kept in memory meanwhile) until they are
 * recorded or the worker must exit now. */
static void record_batch(struct slots *s, PGconn **conn, struct slot **batch, size_t n)
{
        const struct worker_config *cfg = s->cfg;
        struct queue_report_row rows[REPORT_BATCH_MAX];
        for (size_t i = 0; i < n; i++)
                rows[i] = batch[i]->row;
        unsigned backoff = 100;
        bool retried = false;
        for (;;) {
                struct bc_error err = BC_ERROR_INIT;
                int r = conn_get(conn, cfg, &err) ? queue_report_batch(*conn, cfg->worker_id, rows,
                                                                       n, &err)
                                                  : -ECONNREFUSED;
                if (r >= 0) {
                        for (size_t i = 0; i < n; i++) {
                                batch[i]->report_rc = rows[i].held;
                                batch[i]->report_retried = retried;
                        }
                        bc_error_clear(&err);
                        return;
                }
                bool lost = !*conn || db_connection_lost(*conn);
                if (!lost && n > 1) {
                        /* The database refused the call (one row it cannot
                         * take): each row on its own, so only that one fails. */
                        bc_error_clear(&err);
                        for (size_t i = 0; i < n; i++)
                                record_batch(s, conn, &batch[i], 1);
                        return;
                }
                for (size_t i = 0; i < n; i++)
                        log_event(LOG_WARN, "job.report_failed", "job_id", rows[i].job->id,
                                  "queue", rows[i].job->queue, "worker_id", cfg->worker_id,
                                  "error", bc_error_message(&err),
                                  LOG_BOOL("will_retry", lost && !s->hard), NULL);
                bc_error_clear(&err);
                if (!lost || s->hard) {
                        for (size_t i = 0; i < n; i++)
                                batch[i]->report_rc = r;
                        return;
                }
                retried = true;
                for (unsigned waited = 0; waited < backoff && !s->hard; waited += 100)
                        sleep_ms(100);
                backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
        }
}

/* The reporter thread: records the results the slots hand it, all those
 * waiting in one call, so slots that finish close together cost one round
 * trip (while one call is out, the next batch gathers). */
static void *reporter_main(void *arg)
{
        struct slots *s = arg;
        PGconn *conn = NULL;
        for (;;) {
                pthread_mutex_lock(&s->report_lock);
                while (!s->report_head && !s->report_stop)
                        pthread_cond_wait(&s->report_wake, &s->report_lock);
                struct slot *batch[REPORT_BATCH_MAX];
                size_t n = 0;
                while (s->report_head && n < REPORT_BATCH_MAX) {
                        batch[n++] = s->report_head;
                        s->report_head = s->report_head->report_next;
                }
                if (!s->report_head)
                        s->report_tail = NULL;
                pthread_mutex_unlock(&s->report_lock);
                if (!n)
                        break;
                /* A job with an artifact takes its storage's advisory lock
                 * when it finishes (sql/35_artifact_order.sql): alone in
                 * its call, as before batching, so a call never holds two
                 * storages' locks that an enqueue could take the other way
                 * round. */
                struct slot *plain[REPORT_BATCH_MAX];
                size_t np = 0;
                for (size_t i = 0; i < n; i++) {
                        if (batch[i]->row.o->report_alone)
                                record_batch(s, &conn, &batch[i], 1);
                        else
                                plain[np++] = batch[i];
                }
                if (np)
                        record_batch(s, &conn, plain, np);
                pthread_mutex_lock(&s->report_lock);
                for (size_t i = 0; i < n; i++)
                        batch[i]->report_done = true;
                pthread_cond_broadcast(&s->report_recorded);
                pthread_mutex_unlock(&s->report_lock);
        }
        PQfinish(conn);
        return NULL;
}

/* Hands the outcome (and the job's kept-back events) to the reporter and
 * waits until it is recorded: the slot is free only then. */
static void report(struct slot *sl, const struct claimed_job *job, const struct job_outcome *o)
{
        struct slots *s = sl->owner;
        _cleanup_free_ char *events = kept_events(sl);
        forget_events(sl);
        if (o->action == JOB_DROP && !events)
                return;
        sl->row = (struct queue_report_row){ .job = job, .o = o, .events_json = events };
        sl->report_done = false;
        sl->report_retried = false;
        sl->report_next = NULL;
        pthread_mutex_lock(&s->report_lock);
        if (s->report_tail)
                s->report_tail->report_next = sl;
        else
                s->report_head = sl;
        s->report_tail = sl;
        pthread_cond_signal(&s->report_wake);
        while (!sl->report_done)
                pthread_cond_wait(&s->report_recorded, &s->report_lock);
        pthread_mutex_unlock(&s->report_lock);
        if (sl->report_rc == 0 && o->action != JOB_DROP)
                log_event(sl->report_retried ? LOG_INFO : LOG_WARN, "job.not_held", "job_id",
                          job->id, "queue", job->queue, "worker_id", s->cfg->worker_id, "detail",
                          sl->report_retried ? "already recorded or rescued while the database "
                                               "was away"
                                             : "lease lost: another worker owns the job",
                          NULL);
}

static void run_one(struct slot *sl, struct claimed_job *job)
{
        const struct worker_config *cfg = sl->owner->cfg;
        log_event(LOG_DEBUG, "job.started", "job_id", job->id, "queue", job->queue,
                  LOG_INT("attempt", job->attempt), "worker_id", cfg->worker_id, NULL);
        struct job_services svc = { .cfg = cfg, .backend = sl->owner->backend,
                                    .store = sl->owner->store,
                                    .metrics = sl->owner->metrics,
                                    .ws_pool = sl->owner->ws_pool, .dirs = sl->owner->dirs,
                                    .disk = sl->owner->disk,
                                    .ctx = sl, .event = svc_event, .tick = svc_tick,
                                    .append_logs = svc_append_logs, .lookup = svc_lookup,
                                    .claim_wait = svc_claim_wait,
                                    .claim_fd = claim_gate_fd(job->gate) };
        sl->current = job;
        struct job_outcome o;
        job_execute(&svc, job, sl->cancel_fd, &sl->stop, &o);
        /* A claim that did not commit (loop.c says so): its job never
         * started, and was never this worker's to record or count. */
        if (!claim_held(job)) {
                forget_events(sl);
                sl->current = NULL;
                job_outcome_done(&o);
                return;
        }
        sl->reporting = true;
        report(sl, job, &o);
        sl->current = NULL;
        static const char *const actions[] = { "complete", "retry", "release", "drop" };
        static const char *const outcomes[] = { NULL, "retried", "released", "lost" };
        wmetrics_finished(sl->owner->metrics, job->queue,
                          o.action == JOB_COMPLETE ? o.status : outcomes[o.action],
                          o.error_code, o.duration_s);
        log_event(LOG_INFO, "job.finished", "job_id", job->id, "queue", job->queue,
                  "worker_id", cfg->worker_id, LOG_INT("attempt", job->attempt), "action",
                  actions[o.action], "status", o.status, "error_code", o.error_code, NULL);
        job_outcome_done(&o);
}

static void *slot_main(void *arg)
{
        struct slot *sl = arg;
        struct slots *s = sl->owner;
        for (;;) {
                pthread_mutex_lock(&s->lock);
                while (!sl->job && !s->closing)
                        pthread_cond_wait(&sl->wake, &s->lock);
                struct claimed_job *job = sl->job;
                pthread_mutex_unlock(&s->lock);
                if (!job)
                        break;
                run_one(sl, job);
                pthread_mutex_lock(&s->lock);
                sl->job = NULL;
                sl->finished = true;
                pthread_mutex_unlock(&s->lock);
                claimed_job_free(job);
                uint64_t one = 1;
                ssize_t w = write(s->done_fd, &one, sizeof(one));
                (void)w;
        }
        dynbuf_done(&sl->events);
        return NULL;
}

/* The jobs' backend, with what start-up set up for it. */
static int open_backend(struct slots *s, struct bc_error *err)
{
        /* Until worker_run sets cgroup_parent and sandbox_pool itself. */
        if (!s->cgroup_parent && !s->sandbox_pool)
                worker_backend_setup(&s->cgroup_parent, &s->sandbox_pool);
        struct backend_options o = { .cgroup_parent = s->cgroup_parent, .pool = s->sandbox_pool,
                                     .metrics = s->metrics };
        return backend_new(s->cfg, &o, &s->backend, err);
}

int slots_start(struct slots *s, const struct worker_config *cfg, struct store *store,
                struct bc_error *err)
{
        struct metrics *m = s->metrics;
        struct ws_pool *wp = s->ws_pool;
        struct dir_bin *dirs = s->dirs;
        struct disk_budget *disk = s->disk;
        const char *cgroup_parent = s->cgroup_parent;
        struct sandbox_pool *sandbox_pool = s->sandbox_pool;
        memset(s, 0, sizeof(*s));
        s->metrics = m;
        s->ws_pool = wp;
        s->dirs = dirs;
        s->disk = disk;
        s->cgroup_parent = cgroup_parent;
        s->sandbox_pool = sandbox_pool;
        s->cfg = cfg;
        s->store = store;
        pthread_mutex_init(&s->lock, NULL);
        s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        pthread_mutex_init(&s->report_lock, NULL);
        pthread_cond_init(&s->report_wake, NULL);
        pthread_cond_init(&s->report_recorded, NULL);
        s->slot = calloc(cfg->concurrency, sizeof(*s->slot));
        s->db = db_pool_new(cfg->database_url, "boxcar-worker", cfg->db_connections);
        if (s->done_fd < 0 || !s->slot || !s->db)
                return bc_error_set(err, BC_INTERNAL, errno ? errno : ENOMEM, "slots: %m");
        int rr = open_backend(s, err);
        if (rr < 0)
                return rr;
        rr = pthread_create(&s->reporter, NULL, reporter_main, s);
        if (rr != 0)
                return bc_error_set(err, BC_INTERNAL, rr, "slots: thread: %s", strerror(rr));
        s->reporter_started = true;
        for (unsigned i = 0; i < cfg->concurrency; i++) {
                struct slot *sl = &s->slot[i];
                sl->owner = s;
                sl->index = i;
                dynbuf_init(&sl->events, 1u << 20);
                pthread_cond_init(&sl->wake, NULL);
                sl->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                if (sl->cancel_fd < 0)
                        return bc_error_set(err, BC_INTERNAL, errno, "slots: eventfd: %m");
                int r = pthread_create(&sl->thread, NULL, slot_main, sl);
                if (r != 0)
                        return bc_error_set(err, BC_INTERNAL, r, "slots: thread: %s", strerror(r));
                s->n++;
        }
        return 0;
}

int slots_assign(struct slots *s, struct claimed_job *job)
{
        for (unsigned i = 0; i < s->n; i++) {
                struct slot *sl = &s->slot[i];
                if (sl->busy)
                        continue;
                uint64_t drained;
                while (read(sl->cancel_fd, &drained, sizeof(drained)) > 0)
                        ;
                sl->stop = JOB_STOP_NONE;
                sl->reporting = false;
                sl->busy = true;
                sl->assigned_ms = bc_mono_ms();
                pthread_mutex_lock(&s->lock);
                sl->finished = false;
                sl->job = job;
                pthread_cond_signal(&sl->wake);
                pthread_mutex_unlock(&s->lock);
                s->busy++;
                return 0;
        }
        return -EBUSY;
}

unsigned slots_collect(struct slots *s)
{
        uint64_t v;
        while (read(s->done_fd, &v, sizeof(v)) > 0)
                ;
        unsigned freed = 0;
        pthread_mutex_lock(&s->lock);
        for (unsigned i = 0; i < s->n; i++) {
                if (s->slot[i].busy && s->slot[i].finished) {
                        s->slot[i].busy = false;
                        s->slot[i].finished = false;
                        freed++;
                }
        }
        pthread_mutex_unlock(&s->lock);
        s->busy -= freed;
        return freed;
}

unsigned slots_free(const struct slots *s)
{
        return s->n - s->busy;
}

static void stop_slot(struct slot *sl, enum job_stop why)
{
        int expected = JOB_STOP_NONE;
        atomic_compare_exchange_strong(&sl->stop, &expected, (int)why);
        uint64_t one = 1;
        ssize_t w = write(sl->cancel_fd, &one, sizeof(one));
        (void)w;
}

unsigned slots_stop(struct slots *s, const char *job_id, enum job_stop why)
{
        unsigned n = 0;
        pthread_mutex_lock(&s->lock);
        for (unsigned i = 0; i < s->n; i++) {
                struct slot *sl = &s->slot[i];
                if (sl->job && (!job_id || strcmp(sl->job->id, job_id) == 0)) {
                        stop_slot(sl, why);
                        n++;
                }
        }
        pthread_mutex_unlock(&s->lock);
        return n;
}

char *slots_running_ids(struct slots *s)
{
        struct dynbuf b;
        dynbuf_init(&b, 1u << 20);
        pthread_mutex_lock(&s->lock);
        for (unsigned i = 0; i < s->n; i++)
                if (s->slot[i].job)
                        dynbuf_printf(&b, "%s%s", b.len ? " " : "", s->slot[i].job->id);
        pthread_mutex_unlock(&s->lock);
        return dynbuf_steal(&b);
}

void slots_stop_unheld(struct slots *s, const char *held, uint64_t since_ms)
{
        pthread_mutex_lock(&s->lock);
        for (unsigned i = 0; i < s->n; i++) {
                struct slot *sl = &s->slot[i];
                /* A job whose outcome is being recorded is missing from a
                 * heartbeat that crossed its completion: nothing to stop,
                 * and the report says itself if the job was not held. */
                if (sl->job && !sl->reporting && sl->assigned_ms < since_ms &&
                    !strstr(held, sl->job->id)) {
                        log_event(LOG_WARN, "job.lease_lost", "job_id", sl->job->id, "queue",
                                  sl->job->queue, "worker_id", s->cfg->worker_id, "detail", "stopping it: the job is no longer "
                                  "this worker's", NULL);
                        stop_slot(sl, JOB_STOP_LOST);
                }
        }
        pthread_mutex_unlock(&s->lock);
}

void slots_join(struct slots *s)
{
        pthread_mutex_lock(&s->lock);
        s->closing = true;
        for (unsigned i = 0; i < s->n; i++)
                pthread_cond_signal(&s->slot[i].wake);
        pthread_mutex_unlock(&s->lock);
        for (unsigned i = 0; i < s->n; i++) {
                pthread_join(s->slot[i].thread, NULL);
                pthread_cond_destroy(&s->slot[i].wake);
                close(s->slot[i].cancel_fd);
        }
        free(s->slot);
        s->slot = NULL;
        backend_free(s->backend);
        s->backend = NULL;
        /* Last: the slots waited for it to record their results. */
        if (s->reporter_started) {
                pthread_mutex_lock(&s->report_lock);
                s->report_stop = true;
                pthread_cond_signal(&s->report_wake);
                pthread_mutex_unlock(&s->report_lock);
                pthread_join(s->reporter, NULL);
                s->reporter_started = false;
        }
        db_pool_free(s->db);
        s->db = NULL;
        pthread_cond_destroy(&s->report_wake);
        pthread_cond_destroy(&s->report_recorded);
        pthread_mutex_destroy(&s->report_lock);
        if (s->done_fd >= 0)
                close(s->done_fd);
        pthread_mutex_destroy(&s->lock);
}
