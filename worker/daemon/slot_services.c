/* The services a slot gives its job (worker/job/services.h): its events,
 * kept back a moment to go with its result, its live output and its
 * storage lookups through the slots' shared connections, and the claim
 * gate, so that nothing about a job is written unless its claim
 * committed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "worker/daemon/slots-internal.h"
#include "worker/db/db.h"
#include "worker/db/db_pool.h"
#include "worker/exec/claim_gate.h"
#include "worker/job/livelog.h"

/* A kept-back event waits at most this long for the job's result before it
 * is written on its own: "started" shows soon for a long job, and a short
 * job's events go with its result, in the same call. */
#define KEEP_BACK_MS 500
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
char *slot_kept_events(const struct slot *sl)
{
        char *json = NULL;
        if (sl->events.len && asprintf(&json, "[%s]", sl->events.data) < 0)
                return NULL;
        return json;
}

void slot_forget_events(struct slot *sl)
{
        dynbuf_reset(&sl->events);
        sl->events_since_ms = 0;
}

/* Whether job's claim committed (claim_gate.h), waiting until it is
 * decided: the one place the worker asks, for the job's services
 * (svc_claim_wait) and for what the slot itself writes about the job.
 * Nothing about a job whose claim did not commit is ever written: it
 * never started, and was never this worker's. */
bool slot_claim_held(const struct claimed_job *job)
{
        return claim_gate_wait(job->gate);
}

/* Writes the kept-back events now.  Best effort, as the audit trail must
 * not hold the job back: when the database is away they stay kept and go
 * with the result (written once either way, see add_worker_events). */
static void flush_events(struct slot *sl, const struct claimed_job *job)
{
        if (!slot_claim_held(job)) {
                slot_forget_events(sl); /* the claim did not commit: not ours */
                return;
        }
        _cleanup_free_ char *json = slot_kept_events(sl);
        if (!json)
                return;
        struct bc_error err = BC_ERROR_INIT;
        PGconn *conn = db_pool_get(sl->owner->db, &err);
        if (conn && queue_add_events(conn, sl->owner->cfg->worker_id, job, json, &err) >= 0)
                slot_forget_events(sl);
        else
                sl->events_since_ms = bc_mono_ms() + 900; /* try again in a second */
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
        if (!slot_claim_held(sl->current))
                return bc_error_set(err, BC_INTERNAL, ECANCELED,
                                    "not stored: the claim of the job did not commit");
        PGconn *conn = db_pool_get(sl->owner->db, err);
        int r = conn ? livelog_batch_store(conn, batch, err) : -ECONNREFUSED;
        db_pool_put(sl->owner->db, conn);
        return r;
}

static int svc_report_progress(void *ctx, const struct claimed_job *job, const char *json,
                               struct bc_error *err)
{
        struct slot *sl = ctx;
        if (!slot_claim_held(job))
                return bc_error_set(err, BC_INTERNAL, ECANCELED,
                                    "not stored: the claim of the job did not commit");
        char attempt[16];
        snprintf(attempt, sizeof(attempt), "%d", job->attempt);
        const char *p[] = { job->id, sl->owner->cfg->worker_id, attempt, json };
        PGconn *conn = db_pool_get(sl->owner->db, err);
        PGresult *res = conn ? db_exec_hot(conn,
                                           "select boxcar.report_progress($1::uuid, $2, $3::int, "
                                           "$4::jsonb)",
                                           4, p, err)
                             : NULL;
        db_pool_put(sl->owner->db, conn);
        if (!res)
                return conn ? -EIO : -ECONNREFUSED;
        PQclear(res);
        return 0;
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
        return slot_claim_held(sl->current);
}

void slot_services(struct slot *sl, const struct claimed_job *job, struct job_services *ret)
{
        const struct slots *s = sl->owner;
        *ret = (struct job_services){ .cfg = s->cfg,
                                      .backend = s->backend,
                                      .store = s->store,
                                      .metrics = s->metrics,
                                      .ws_pool = s->ws_pool,
                                      .dirs = s->dirs,
                                      .disk = s->disk,
                                      .sessions = s->sessions,
                                      .secret_keys = s->secret_keys,
                                      .ctx = sl,
                                      .event = svc_event,
                                      .tick = svc_tick,
                                      .append_logs = svc_append_logs,
                                      .report_progress = svc_report_progress,
                                      .lookup = svc_lookup,
                                      .claim_wait = svc_claim_wait,
                                      .claim_fd = claim_gate_fd(job->gate) };
}
