/* The sessions a worker holds: at most --max-sessions, least recently
 * used first out; a thread of the registry's own ends idle ones and those
 * past their lifetime, and renews their leases, so that a final
 * checkpoint (a walk of the workspace and an upload) never holds up the
 * worker's loop or a job's slot. */
#include "worker/session/session-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/deadline.h"
#include "worker/config/config.h"
#include "worker/db/db_pool.h"
#include "worker/log/log.h"
#include "worker/metrics/wmetrics.h"

#define TICK_MS 1000
#define RENEW_MAX_MS 2000

PGresult *session_db(struct session_registry *r, const char *sql, int n, const char *const *p,
                     struct bc_error *err)
{
        return db_pool_exec(r->o.db, sql, n, p, err);
}

static void unlink_session(struct session_registry *r, struct session *s)
{
        for (struct session **pp = &r->list; *pp; pp = &(*pp)->next)
                if (*pp == s) {
                        *pp = s->next;
                        r->n--;
                        break;
                }
        wmetrics_sessions_live(r->o.metrics, r->n);
}

/* The idle sessions that must end now, taken out of the list (under the
 * lock), to be stopped without it. */
static struct session *take_expired(struct session_registry *r, uint64_t now, bool all,
                                    const char **reasons, size_t max, size_t *ret_n)
{
        struct session *out = NULL;
        size_t n = 0;
        double lifetime_ms = r->o.cfg->session_max_lifetime_s * 1000;
        for (struct session *s = r->list, *next; s && n < max; s = next) {
                next = s->next;
                if (s->state != SESSION_IDLE)
                        continue;
                const char *why = all                                            ? "drain"
                                  : !session_alive(s)                            ? "failed"
                                  : s->end_requested                             ? "ended"
                                  : (double)(now - s->started_ms) >= lifetime_ms ? "lifetime"
                                  : (double)(now - s->last_used_ms) >= s->idle_timeout_s * 1000
                                          ? "idle"
                                          : NULL;
                if (!why)
                        continue;
                s->state = SESSION_STOPPING;
                unlink_session(r, s);
                s->next = out;
                out = s;
                reasons[n++] = why;
        }
        *ret_n = n;
        return out;
}

static void stop_taken(struct session_registry *r, struct session *list, const char **reasons,
                       size_t n)
{
        /* take_expired pushed them in reverse: reasons[n-1] is the head's. */
        for (struct session *s = list, *next; s; s = next) {
                next = s->next;
                const char *why = reasons[--n];
                if (strcmp(why, "idle") == 0)
                        wmetrics_session_event(r->o.metrics, "idle_end");
                session_stop(s, why, true);
        }
}

static void renew(struct session_registry *r)
{
        char lease[32];
        snprintf(lease, sizeof(lease), "%g seconds", r->o.lease_s);
        const char *p[] = { r->o.worker_id, r->o.instance, lease };
        struct bc_error err = BC_ERROR_INIT;
        PGresult *res = session_db(
                r,
                "select scope, id, end_requested from boxcar.session_renew($1, $2, $3::interval)",
                3, p, &err);
        if (!res) {
                /* The leases lapse if this goes on: the sessions' next
                 * jobs then start elsewhere, and these sessions are
                 * found lost at the next renewal that works. */
                log_event(LOG_WARN, "session.renew", "error", bc_error_message(&err), NULL);
                bc_error_clear(&err);
                return;
        }
        struct session *lost = NULL;
        pthread_mutex_lock(&r->lock);
        for (struct session *s = r->list; s; s = s->next) {
                bool held = false, end = false;
                for (int i = 0; i < PQntuples(res); i++)
                        if (strcmp(PQgetvalue(res, i, 0), s->scope) == 0 &&
                            strcmp(PQgetvalue(res, i, 1), s->id) == 0) {
                                held = true;
                                end = PQgetvalue(res, i, 2)[0] == 't';
                        }
                s->end_requested |= end;
                /* Not ours any more: a busy one is stopped when its job
                 * gives it back (session_put sees broken). */
                if (!held)
                        s->broken = true;
        }
        for (struct session *s = r->list, *next; s; s = next) {
                next = s->next;
                if (s->broken && s->state == SESSION_IDLE) {
                        s->state = SESSION_STOPPING;
                        unlink_session(r, s);
                        s->next = lost;
                        lost = s;
                }
        }
        pthread_mutex_unlock(&r->lock);
        PQclear(res);
        for (struct session *s = lost, *next; s; s = next) {
                next = s->next;
                /* Another worker may hold it now: no checkpoint, no
                 * release of a lease that is not ours. */
                session_stop(s, NULL, false);
        }
}

void session_registry_tick(struct session_registry *r)
{
        const char *reasons[64];
        size_t n = 0;
        pthread_mutex_lock(&r->lock);
        struct session *list = take_expired(r, bc_mono_ms(), false, reasons, 64, &n);
        pthread_mutex_unlock(&r->lock);
        stop_taken(r, list, reasons, n);
}

void session_registry_renew(struct session_registry *r)
{
        renew(r);
}

/* A third of the lease, as the jobs' heartbeat; at most RENEW_MAX_MS, so
 * that an end asked with boxcar.end_session is seen soon. */
static double renew_every_ms(const struct session_registry *r)
{
        double third = r->o.lease_s * 1000 / 3;
        return third < RENEW_MAX_MS ? third : RENEW_MAX_MS;
}

static void *registry_thread(void *arg)
{
        struct session_registry *r = arg;
        pthread_mutex_lock(&r->lock);
        while (!r->stopping) {
                struct timespec until = bc_monotonic_after_ms(TICK_MS);
                pthread_cond_timedwait(&r->changed, &r->lock, &until);
                if (r->stopping)
                        break;
                pthread_mutex_unlock(&r->lock);
                session_registry_tick(r);
                uint64_t now = bc_mono_ms();
                if (r->n && (double)(now - r->last_renew_ms) >= renew_every_ms(r)) {
                        r->last_renew_ms = now;
                        renew(r);
                }
                pthread_mutex_lock(&r->lock);
        }
        pthread_mutex_unlock(&r->lock);
        return NULL;
}

int session_registry_new(const struct session_registry_options *o, struct session_registry **ret,
                         struct bc_error *err)
{
        struct session_registry *r = calloc(1, sizeof(*r));
        if (!r)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        r->o = *o;
        pthread_mutex_init(&r->lock, NULL);
        bc_cond_init_monotonic(&r->changed);
        r->last_renew_ms = bc_mono_ms();
        if (pthread_create(&r->thread, NULL, registry_thread, r) != 0) {
                pthread_cond_destroy(&r->changed);
                pthread_mutex_destroy(&r->lock);
                free(r);
                return bc_error_set(err, BC_INTERNAL, EAGAIN, "cannot start a thread");
        }
        r->thread_running = true;
        *ret = r;
        return 0;
}

void session_registry_free(struct session_registry *r)
{
        if (!r)
                return;
        pthread_mutex_lock(&r->lock);
        r->stopping = true;
        pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
        if (r->thread_running)
                pthread_join(r->thread, NULL);
        /* The slots are stopped by now: every session is idle. */
        for (;;) {
                const char *reasons[64];
                size_t n = 0;
                pthread_mutex_lock(&r->lock);
                struct session *list = take_expired(r, bc_mono_ms(), true, reasons, 64, &n);
                pthread_mutex_unlock(&r->lock);
                if (!list)
                        break;
                stop_taken(r, list, reasons, n);
        }
        pthread_cond_destroy(&r->changed);
        pthread_mutex_destroy(&r->lock);
        free(r);
}

size_t session_registry_count(struct session_registry *r)
{
        pthread_mutex_lock(&r->lock);
        size_t n = r->n;
        pthread_mutex_unlock(&r->lock);
        return n;
}

int session_take(struct session_registry *r, const char *scope, const char *id,
                 struct session **ret)
{
        pthread_mutex_lock(&r->lock);
        for (;;) {
                struct session *found = NULL;
                for (struct session *s = r->list; s; s = s->next)
                        if (strcmp(s->scope, scope) == 0 && strcmp(s->id, id) == 0)
                                found = s;
                if (!found) {
                        pthread_mutex_unlock(&r->lock);
                        return 0;
                }
                /* Its jobs run one at a time (the queue's artifact order),
                 * but the last one may still be giving it back. */
                if (found->state == SESSION_IDLE && (found->broken || !session_alive(found))) {
                        /* Lost (another worker may hold it now: no
                         * checkpoint, no release), or its sandbox died
                         * while idle (the agent killed, the OOM killer):
                         * the workspace is still here, checkpointed
                         * before a new start. */
                        bool lost = found->broken;
                        found->state = SESSION_STOPPING;
                        unlink_session(r, found);
                        pthread_mutex_unlock(&r->lock);
                        session_stop(found, lost ? NULL : "failed", !lost);
                        return 0;
                }
                if (found->state == SESSION_IDLE) {
                        found->state = SESSION_BUSY;
                        found->first_job = false;
                        pthread_mutex_unlock(&r->lock);
                        *ret = found;
                        return 1;
                }
                struct timespec until = bc_monotonic_after_ms(1000);
                pthread_cond_timedwait(&r->changed, &r->lock, &until);
        }
}

/* Room for one more: the least recently used idle session is evicted
 * (checkpoint, then stop) when the worker holds --max-sessions. */
static int make_room(struct session_registry *r, struct bc_error *err)
{
        pthread_mutex_lock(&r->lock);
        if (r->n < r->o.cfg->max_sessions) {
                pthread_mutex_unlock(&r->lock);
                return 0;
        }
        struct session *lru = NULL;
        for (struct session *s = r->list; s; s = s->next)
                if (s->state == SESSION_IDLE && (!lru || s->last_used_ms < lru->last_used_ms))
                        lru = s;
        if (lru) {
                lru->state = SESSION_STOPPING;
                unlink_session(r, lru);
        }
        pthread_mutex_unlock(&r->lock);
        if (!lru)
                return bc_error_set(err, BC_SANDBOX_SETUP, EBUSY,
                                    "every session this worker holds (--max-sessions %u) is busy",
                                    r->o.cfg->max_sessions);
        wmetrics_session_event(r->o.metrics, "eviction");
        session_stop(lru, "evicted", true);
        return 0;
}

static int hold_lease(struct session_registry *r, struct session *s, struct bc_error *err)
{
        char lease[32];
        snprintf(lease, sizeof(lease), "%g seconds", r->o.lease_s);
        const char *p[] = { r->o.worker_id, r->o.instance, s->scope, s->id, lease };
        PGresult *res = session_db(
                r, "select resumed from boxcar.session_hold($1, $2, $3, $4, $5::interval)", 5, p,
                err);
        if (!res)
                return -EIO;
        int r2 = 0;
        if (PQntuples(res) != 1)
                r2 = bc_error_set(err, BC_SANDBOX_SETUP, EBUSY,
                                  "session %s is held by another worker", s->id);
        else
                s->resumed = PQgetvalue(res, 0, 0)[0] == 't';
        PQclear(res);
        return r2;
}

static char *dup_or_null(const char *s)
{
        return s ? strdup(s) : NULL;
}

/* The sandbox's job: the session's own copies of what bj points to. */
static int copy_job(struct session *s, const struct backend_job *bj, struct bc_error *err)
{
        s->bj = *bj;
        s->bj.spec = s->spec;
        s->bj.workspace = s->home.ws;
        s->bj.meta_dir = s->home.meta;
        size_t n = 0;
        while (bj->volume_paths && bj->volume_paths[n])
                n++;
        s->volume_paths = calloc(n + 1, sizeof(char *));
        if (!s->volume_paths)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
                if (!(s->volume_paths[i] = strdup(bj->volume_paths[i])))
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        s->bj.volume_paths = (const char *const *)s->volume_paths;
        s->scratch = dup_or_null(bj->scratch);
        s->bj.scratch = s->scratch;
        s->image_path = dup_or_null(bj->image_path);
        s->image_sha = dup_or_null(bj->image_sha);
        s->bj.image_path = s->image_path;
        s->bj.image_sha = s->image_sha;
        return 0;
}

int session_start(struct session_registry *r, const char *scope, const char *id,
                  double idle_timeout_s, const char *spec_json, struct session_home *home,
                  const struct backend_job *bj, struct session **ret, struct bc_error *err)
{
        struct session *s = calloc(1, sizeof(*s));
        if (!s) {
                if (home->release)
                        home->release(home->resources);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        s->reg = r;
        s->home = *home;
        s->sock = s->cancel_fd = s->done_fd = -1;
        s->state = SESSION_BUSY;
        s->first_job = true;
        s->idle_timeout_s = idle_timeout_s;
        sw_stream_init(&s->in);
        if (home->checkpoint)
                session_set_checkpoint(s, home->checkpoint);
        s->home.checkpoint = NULL;
        memset(home, 0, sizeof(*home));
        s->scope = strdup(scope);
        s->id = strdup(id);
        if (!s->scope || !s->id) {
                session_stop(s, NULL, false);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        int rc = spec_parse(spec_json, strlen(spec_json), &s->spec, err);
        /* The session's storage is the job's artifact, which the database
         * filled in with the name of its scope (boxcar.session_storage_name). */
        if (rc >= 0 && !(s->storage = strdup(s->spec->artifact_storage)))
                rc = bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        if (rc >= 0)
                rc = copy_job(s, bj, err);
        if (rc >= 0)
                rc = make_room(r, err);
        bool held = false;
        if (rc >= 0)
                held = (rc = hold_lease(r, s, err)) >= 0;
        if (rc >= 0)
                rc = session_boot(s, err);
        if (rc < 0) {
                session_stop(s, held ? "failed" : NULL, false);
                return rc;
        }
        uint64_t now = bc_mono_ms();
        s->started_ms = s->last_used_ms = now;
        wmetrics_session_event(r->o.metrics, s->resumed ? "resume" : "start");
        log_event(LOG_INFO, "session.started", "session", id, "scope", scope, "resumed",
                  s->resumed ? "true" : "false", NULL);
        pthread_mutex_lock(&r->lock);
        s->next = r->list;
        r->list = s;
        r->n++;
        wmetrics_sessions_live(r->o.metrics, r->n);
        pthread_mutex_unlock(&r->lock);
        *ret = s;
        return 0;
}

void session_put(struct session *s, bool broken)
{
        struct session_registry *r = s->reg;
        pthread_mutex_lock(&r->lock);
        s->last_used_ms = bc_mono_ms();
        s->broken |= broken;
        bool stop = s->broken;
        if (stop)
                unlink_session(r, s);
        s->state = stop ? SESSION_STOPPING : SESSION_IDLE;
        pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
        if (stop)
                session_stop(s, "failed", false);
}
