#include "worker/daemon/slots-internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/deadline.h"
#include "worker/db/db_pool.h"
#include "worker/secrets/keyring.h"
#include "worker/session/session.h"
#include "worker/log/log.h"
#include "worker/metrics/wmetrics.h"
#include "worker/exec/backend.h"

static void run_one(struct slot *sl, struct claimed_job *job)
{
        const struct worker_config *cfg = sl->owner->cfg;
        log_event(LOG_DEBUG, "job.started", "job_id", job->id, "queue", job->queue,
                  LOG_INT("attempt", job->attempt), "worker_id", cfg->worker_id, NULL);
        struct job_services svc;
        slot_services(sl, job, &svc);
        sl->current = job;
        struct job_outcome o;
        atomic_store(&sl->running_since_ms, bc_mono_ms());
        job_execute(&svc, job, sl->cancel_fd, &sl->stop, &o);
        /* A claim that did not commit (claim.c says so): its job never
         * started, and was never this worker's to record or count. */
        if (!slot_claim_held(job)) {
                slot_no_report(sl);
                slot_forget_events(sl);
                sl->current = NULL;
                job_outcome_done(&o);
                return;
        }
        sl->reporting = true;
        slot_report(sl, job, &o);
        sl->current = NULL;
        static const char *const actions[] = { "complete", "retry", "release", "drop" };
        static const char *const outcomes[] = { NULL, "retried", "released", "lost" };
        wmetrics_finished(sl->owner->metrics, job->queue,
                          o.action == JOB_COMPLETE ? o.status : outcomes[o.action], o.error_code,
                          o.duration_s);
        log_event(LOG_INFO, "job.finished", "job_id", job->id, "queue", job->queue, "worker_id",
                  cfg->worker_id, LOG_INT("attempt", job->attempt), "action", actions[o.action],
                  "status", o.status, "error_code", o.error_code, NULL);
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
                if (sl->releasing) {
                        sl->releasing = false;
                        atomic_fetch_sub(&s->releasing, 1);
                }
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
        struct backend_options o = { .cgroup_parent = s->cgroup_parent,
                                     .pool = s->sandbox_pool,
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
        const char *instance = s->instance;
        memset(s, 0, sizeof(*s));
        s->instance = instance;
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
        /* The reporter waits on it with a deadline (linger). */
        bc_cond_init_monotonic(&s->report_wake);
        pthread_cond_init(&s->report_recorded, NULL);
        s->slot = calloc(cfg->concurrency, sizeof(*s->slot));
        s->db = db_pool_new(cfg->database_url, "boxcar-worker", cfg->db_connections);
        if (s->done_fd < 0 || !s->slot || !s->db)
                return bc_error_set(err, BC_INTERNAL, errno ? errno : ENOMEM, "slots: %m");
        int rr = open_backend(s, err);
        if (rr < 0)
                return rr;
        if (cfg->secret_keys_dir) {
                rr = secret_keyring_load(cfg->secret_keys_dir, &s->secret_keys, err);
                if (rr < 0)
                        return rr;
        }
        if (cfg->sandbox == BACKEND_NAMESPACE && cfg->max_sessions > 0) {
                struct session_registry_options so = { .cfg = cfg,
                                                       .backend = s->backend,
                                                       .store = store,
                                                       .metrics = s->metrics,
                                                       .db = s->db,
                                                       .worker_id = cfg->worker_id,
                                                       .instance = s->instance,
                                                       .lease_s = cfg->lease_s };
                rr = session_registry_new(&so, &s->sessions, err);
                if (rr < 0)
                        return rr;
        }
        rr = pthread_create(&s->reporter, NULL, slots_reporter_main, s);
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

static unsigned collect_finished(struct slots *s)
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

unsigned slots_collect(struct slots *s)
{
        unsigned freed = collect_finished(s);
        uint64_t deadline = bc_mono_ms() + s->cfg->report_wait_ms;
        while (atomic_load(&s->releasing) > 0) {
                uint64_t now = bc_mono_ms();
                if (now >= deadline)
                        break;
                struct pollfd p = { .fd = s->done_fd, .events = POLLIN };
                if (poll(&p, 1, (int)(deadline - now)) <= 0)
                        break;
                freed += collect_finished(s);
        }
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
                                  sl->job->queue, "worker_id", s->cfg->worker_id, "detail",
                                  "stopping it: the job is no longer "
                                  "this worker's",
                                  NULL);
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
        /* No job runs now: every session is idle, checkpointed and stopped. */
        session_registry_free(s->sessions);
        s->sessions = NULL;
        secret_keyring_free(s->secret_keys);
        s->secret_keys = NULL;
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
        free(s->slot); /* the reporter looks at them */
        s->slot = NULL;
        db_pool_free(s->db);
        s->db = NULL;
        pthread_cond_destroy(&s->report_wake);
        pthread_cond_destroy(&s->report_recorded);
        pthread_mutex_destroy(&s->report_lock);
        if (s->done_fd >= 0)
                close(s->done_fd);
        pthread_mutex_destroy(&s->lock);
}
