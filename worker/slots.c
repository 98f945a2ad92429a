#include "worker/slots.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/dynbuf.h"
#include "worker/db.h"
#include "worker/log.h"
#include "worker/queue.h"
#include "worker/wmetrics.h"

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
        PGconn *conn;
};

uint64_t slots_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
        nanosleep(&ts, NULL);
}

static PGconn *slot_conn(struct slot *sl, struct bc_error *err);

static PGconn *svc_conn(void *ctx, struct bc_error *err)
{
        return slot_conn(ctx, err);
}

static void svc_event(void *ctx, const struct claimed_job *job, const char *kind,
                      const char *details_json)
{
        struct slot *sl = ctx;
        struct bc_error err = BC_ERROR_INIT;
        PGconn *conn = slot_conn(sl, &err);
        /* Best effort: the audit trail must not hold the job back. */
        if (conn)
                queue_event(conn, sl->owner->cfg->worker_id, job, kind, details_json, &err);
        bc_error_clear(&err);
}

static PGconn *slot_conn(struct slot *sl, struct bc_error *err)
{
        if (sl->conn && !db_connection_lost(sl->conn))
                return sl->conn;
        PQfinish(sl->conn);
        sl->conn = db_connect(sl->owner->cfg->database_url, "boxcar-worker", err);
        return sl->conn;
}

/* Reports the outcome, retrying through a lost database with backoff (the
 * result is kept in memory meanwhile) until it is recorded or the worker
 * must exit now. */
static void report(struct slot *sl, const struct claimed_job *job, const struct job_outcome *o)
{
        const struct worker_config *cfg = sl->owner->cfg;
        unsigned backoff = 100;
        bool retried = false;
        for (;;) {
                struct bc_error err = BC_ERROR_INIT;
                PGconn *conn = slot_conn(sl, &err);
                int r = conn ? queue_report(conn, cfg->worker_id, job, o, &err) : -ECONNREFUSED;
                if (r >= 0) {
                        if (r == 0 && o->action != JOB_DROP)
                                log_event(retried ? LOG_INFO : LOG_WARN, "job.not_held",
                                          "job_id", job->id, "queue", job->queue,
                                          "worker_id", cfg->worker_id, "detail", retried ? "already recorded or rescued "
                                                              "while the database was away"
                                                            : "lease lost: another worker "
                                                              "owns the job",
                                          NULL);
                        bc_error_clear(&err);
                        return;
                }
                bool lost = !conn || db_connection_lost(conn);
                log_event(LOG_WARN, "job.report_failed", "job_id", job->id, "queue", job->queue,
                          "worker_id", cfg->worker_id, "error", bc_error_message(&err),
                          LOG_BOOL("will_retry", lost && !sl->owner->hard), NULL);
                bc_error_clear(&err);
                if (!lost || sl->owner->hard)
                        return;
                retried = true;
                for (unsigned waited = 0; waited < backoff && !sl->owner->hard; waited += 100)
                        sleep_ms(100);
                backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
        }
}


static void run_one(struct slot *sl, struct claimed_job *job)
{
        const struct worker_config *cfg = sl->owner->cfg;
        log_event(LOG_DEBUG, "job.started", "job_id", job->id, "queue", job->queue,
                  LOG_INT("attempt", job->attempt), "worker_id", cfg->worker_id, NULL);
        struct job_services svc = { .cfg = cfg, .store = sl->owner->store,
                                    .metrics = sl->owner->metrics,
                                    .ws_pool = sl->owner->ws_pool, .conn = svc_conn,
                                    .conn_ctx = sl, .event = svc_event };
        struct job_outcome o;
        job_execute(&svc, job, sl->cancel_fd, &sl->stop, &o);
        sl->reporting = true;
        report(sl, job, &o);
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
        PQfinish(sl->conn);
        sl->conn = NULL;
        return NULL;
}

int slots_start(struct slots *s, const struct worker_config *cfg, struct store *store,
                struct bc_error *err)
{
        struct metrics *m = s->metrics;
        struct ws_pool *wp = s->ws_pool;
        memset(s, 0, sizeof(*s));
        s->metrics = m;
        s->ws_pool = wp;
        s->cfg = cfg;
        s->store = store;
        pthread_mutex_init(&s->lock, NULL);
        s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        s->slot = calloc(cfg->concurrency, sizeof(*s->slot));
        if (s->done_fd < 0 || !s->slot)
                return bc_error_set(err, BC_INTERNAL, errno ? errno : ENOMEM, "slots: %m");
        for (unsigned i = 0; i < cfg->concurrency; i++) {
                struct slot *sl = &s->slot[i];
                sl->owner = s;
                sl->index = i;
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
                sl->assigned_ms = slots_now_ms();
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
        if (s->done_fd >= 0)
                close(s->done_fd);
        pthread_mutex_destroy(&s->lock);
}
