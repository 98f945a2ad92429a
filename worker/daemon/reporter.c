/* The slots' reporter thread: records the results the slots hand it,
 * several per call (boxcar.report_batch), waiting a few milliseconds for
 * the results of the slots still running (--report-wait), and
 * retrying through a lost database while the results wait in memory. */
#include <errno.h>
#include <time.h>

#include "common/clock.h"
#include "common/deadline.h"
#include "worker/daemon/slots-internal.h"
#include "worker/db/db.h"
#include "worker/log/log.h"

/* Most results recorded by one call. */
#define REPORT_BATCH_MAX 64
/* A result waits for others to go in the same call (--report-wait at
 * most) until no other slot runs a job that started less than
 * REPORT_SOON_WAITS times the wait ago (a second at the default 5 ms): a
 * job running for longer is unlikely to end within the wait, and must not
 * hold every other result back.  The window scales with the wait, so a
 * result never waits longer than 1/200 of the age of the youngest job it
 * waits for, whatever the wait is set to.  Each call costs
 * the database about as much again as the job it records (its
 * statements, triggers and commit); under the sandboxed bench's load,
 * results waited for 5 ms went 3.2 to a call instead of 1.6, and a call's
 * slots are then filled by one claim (slots_collect). */
#define REPORT_SOON_WAITS 200

static void sleep_ms(unsigned ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
        nanosleep(&ts, NULL);
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
                int r = conn_get(conn, cfg, &err)
                                ? queue_report_batch(*conn, cfg->worker_id, rows, n, &err)
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

/* Whether another slot runs a job that started less than
 * REPORT_SOON_WAITS times --report-wait ago. */
static bool results_soon(const struct slots *s)
{
        const uint64_t soon_ms = (uint64_t)s->cfg->report_wait_ms * REPORT_SOON_WAITS;
        uint64_t now = bc_mono_ms();
        for (unsigned i = 0; i < s->cfg->concurrency; i++) {
                uint64_t since = atomic_load(&s->slot[i].running_since_ms);
                if (since && now - since < soon_ms)
                        return true;
        }
        return false;
}

/* Under report_lock: whether a whole batch is queued. */
static bool batch_full(const struct slots *s)
{
        size_t n = 0;
        for (const struct slot *sl = s->report_head; sl && n < REPORT_BATCH_MAX;
             sl = sl->report_next)
                n++;
        return n == REPORT_BATCH_MAX;
}

/* Under report_lock, with a result waiting: while results may come soon
 * (results_soon), waits up to --report-wait for them to go in the same
 * call.  A worker with nothing else running records at once. */
static void linger(struct slots *s)
{
        const struct timespec deadline = bc_monotonic_after_ms(s->cfg->report_wait_ms);
        while (s->cfg->report_wait_ms && !s->report_stop && !s->hard && !batch_full(s) &&
               results_soon(s)) {
                if (pthread_cond_timedwait(&s->report_wake, &s->report_lock, &deadline) ==
                    ETIMEDOUT)
                        return;
        }
}

/* The reporter thread: records the results the slots hand it, all those
 * waiting in one call, so slots that finish close together cost one round
 * trip (while one call is out, the next batch gathers). */
void *slots_reporter_main(void *arg)
{
        struct slots *s = arg;
        PGconn *conn = NULL;
        for (;;) {
                pthread_mutex_lock(&s->report_lock);
                while (!s->report_head && !s->report_stop)
                        pthread_cond_wait(&s->report_wake, &s->report_lock);
                if (s->report_head)
                        linger(s);
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
                atomic_fetch_add(&s->releasing, (unsigned)n);
                for (size_t i = 0; i < n; i++)
                        batch[i]->report_done = true;
                pthread_cond_broadcast(&s->report_recorded);
                pthread_mutex_unlock(&s->report_lock);
        }
        PQfinish(conn);
        return NULL;
}

void slot_no_report(struct slot *sl)
{
        struct slots *s = sl->owner;
        pthread_mutex_lock(&s->report_lock);
        atomic_store(&sl->running_since_ms, 0);
        pthread_cond_signal(&s->report_wake);
        pthread_mutex_unlock(&s->report_lock);
}

/* Hands the outcome (and the job's kept-back events) to the reporter and
 * waits until it is recorded: the slot is free only then. */
void slot_report(struct slot *sl, const struct claimed_job *job, const struct job_outcome *o)
{
        struct slots *s = sl->owner;
        _cleanup_free_ char *events = slot_kept_events(sl);
        slot_forget_events(sl);
        if (o->action == JOB_DROP && !events) {
                slot_no_report(sl);
                return;
        }
        sl->row = (struct queue_report_row){ .job = job, .o = o, .events_json = events };
        sl->report_done = false;
        sl->report_retried = false;
        sl->report_next = NULL;
        pthread_mutex_lock(&s->report_lock);
        /* Running until its result is queued, under the lock the reporter
         * looks under: cleared when the job ended, a result the reporter
         * was woken for meanwhile (another slot's) would be recorded
         * without this one, which had not come yet (t_report_batch). */
        atomic_store(&sl->running_since_ms, 0);
        if (s->report_tail)
                s->report_tail->report_next = sl;
        else
                s->report_head = sl;
        s->report_tail = sl;
        pthread_cond_signal(&s->report_wake);
        while (!sl->report_done)
                pthread_cond_wait(&s->report_recorded, &s->report_lock);
        sl->releasing = true;
        pthread_mutex_unlock(&s->report_lock);
        if (sl->report_rc == 0 && o->action != JOB_DROP)
                log_event(sl->report_retried ? LOG_INFO : LOG_WARN, "job.not_held", "job_id",
                          job->id, "queue", job->queue, "worker_id", s->cfg->worker_id, "detail",
                          sl->report_retried ? "already recorded or rescued while the database "
                                               "was away"
                                             : "lease lost: another worker owns the job",
                          NULL);
}
