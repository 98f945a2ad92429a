#include "worker/daemon/queue.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dynbuf.h"
#include "worker/db/db.h"
#include "version.h"

int queue_listen(PGconn *conn, struct bc_error *err)
{
        return db_exec_script(conn,
                              "listen boxcar_jobs; listen boxcar_cancel; "
                              "listen boxcar_webhooks; listen boxcar_drain",
                              err);
}

/* {"a","b"}: queue names are checked against [A-Za-z0-9_.-/], which need
 * no quoting inside an array literal. */
static char *queues_literal(char *const *queues)
{
        struct dynbuf b;
        dynbuf_init(&b, 1 << 20);
        dynbuf_addstr(&b, "{");
        for (char *const *q = queues; *q; q++)
                dynbuf_printf(&b, "%s%s", q == queues ? "" : ",", *q);
        dynbuf_addstr(&b, "}");
        return dynbuf_steal(&b);
}

int queue_register(PGconn *conn, const struct worker_config *cfg, const char *instance,
                   struct bc_error *err)
{
        char host[256] = "";
        gethostname(host, sizeof(host) - 1);
        char pid[16], conc[16];
        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        snprintf(conc, sizeof(conc), "%u", cfg->concurrency);
        _cleanup_free_ char *queues = queues_literal(cfg->queues);
        char lease[32];
        snprintf(lease, sizeof(lease), "%.3f", cfg->lease_s);
        const char *p[] = { cfg->worker_id, host,           pid,   queues,
                            conc,           BOXCAR_VERSION, lease, instance };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn,
                "select boxcar.register_worker($1, $2, $3::int, $4::text[], $5::int, $6, "
                "$7::float8, $8)",
                8, p, err);
        return res ? 0 : -EPROTO;
}

int queue_rescue_orphans(PGconn *conn, const char *worker_id, const char *instance,
                         struct bc_error *err)
{
        const char *p[] = { worker_id, instance };
        _cleanup_pgresult_ PGresult *res = db_exec(conn, "select boxcar.rescue_orphans($1, $2)", 2,
                                                   p, err);
        return res ? atoi(PQgetvalue(res, 0, 0)) : -EPROTO;
}

int queue_set_default_webhook(PGconn *conn, const char *url, struct bc_error *err)
{
        const char *p[] = { url };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn, "select boxcar.set_default_webhook_url($1)", 1, p, err);
        return res ? 0 : -EPROTO;
}

int queue_set_state(PGconn *conn, const char *worker_id, const char *state, struct bc_error *err)
{
        const char *p[] = { worker_id, state };
        _cleanup_pgresult_ PGresult *res = db_exec(conn, "select boxcar.set_worker_state($1, $2)",
                                                   2, p, err);
        return res ? 0 : -EPROTO;
}

static struct claimed_job *job_from_row(const PGresult *res, int row)
{
        struct claimed_job *job = calloc(1, sizeof(*job));
        if (!job)
                return NULL;
        snprintf(job->id, sizeof(job->id), "%s", PQgetvalue(res, row, 0));
        job->queue = strdup(PQgetvalue(res, row, 1));
        job->attempt = atoi(PQgetvalue(res, row, 2));
        job->max_attempts = atoi(PQgetvalue(res, row, 3));
        job->spec_json = strdup(PQgetvalue(res, row, 4));
        job->pickup_s = atof(PQgetvalue(res, row, 5));
        job->log_seq = atoi(PQgetvalue(res, row, 6));
        job->log_bytes = strtoull(PQgetvalue(res, row, 7), NULL, 10);
        if (!job->queue || !job->spec_json) {
                claimed_job_free(job);
                return NULL;
        }
        return job;
}

int queue_claim(PGconn *conn, const struct worker_config *cfg, const char *instance, unsigned n,
                struct claimed_job ***ret_jobs, size_t *ret_n, bool *ret_pending,
                struct bc_error *err)
{
        char count[16], lease[32];
        snprintf(count, sizeof(count), "%u", n);
        snprintf(lease, sizeof(lease), "%.3f seconds", cfg->lease_s);
        _cleanup_free_ char *queues = queues_literal(cfg->queues);
        const char *p[] = { cfg->worker_id, queues, count, lease, instance };
        _cleanup_pgresult_ PGresult *res = db_exec_early(
                conn,
                "select c.id, c.queue, c.attempts, c.max_attempts, c.spec, "
                "extract(epoch from c.started_at - c.run_at), l.seq, l.bytes "
                "from boxcar.claim($1, $2::text[], $3::int, $4::interval, $5) "
                "     with ordinality c "
                /* What an earlier run of this attempt stored (one read). */
                "cross join lateral (select coalesce(max(l.seq), 0) seq, "
                "                           coalesce(sum(octet_length(l.data)), 0) bytes "
                "                      from boxcar.job_logs l "
                "                     where l.job_id = c.id and l.attempt = c.attempts) l "
                "order by c.ordinality",
                5, p, ret_pending, err);
        if (!res)
                return -EPROTO;
        int rows = PQntuples(res);
        struct claimed_job **jobs = calloc((size_t)rows + 1, sizeof(*jobs));
        if (!jobs)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "claim: out of memory");
        for (int i = 0; i < rows; i++) {
                jobs[i] = job_from_row(res, i);
                if (!jobs[i]) {
                        /* Out of memory with jobs claimed: they are rescued
                         * when their lease expires. */
                        for (int k = 0; k < i; k++)
                                claimed_job_free(jobs[k]);
                        free(jobs);
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "claim: out of memory");
                }
        }
        *ret_jobs = jobs;
        *ret_n = (size_t)rows;
        return 0;
}

int queue_claim_commit(PGconn *conn, struct bc_error *err)
{
        return db_early_commit(conn, err);
}

static char *ids_of(const PGresult *res)
{
        struct dynbuf b;
        dynbuf_init(&b, 64u << 20);
        for (int i = 0; i < PQntuples(res); i++)
                dynbuf_printf(&b, "%s%s", i ? " " : "", PQgetvalue(res, i, 0));
        return dynbuf_steal(&b);
}

int queue_heartbeat(PGconn *conn, const struct worker_config *cfg, const char *instance,
                    char **ret_ids, struct bc_error *err)
{
        char lease[32];
        snprintf(lease, sizeof(lease), "%.3f seconds", cfg->lease_s);
        const char *p[] = { cfg->worker_id, lease, instance };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn, "select boxcar.heartbeat($1, $2::interval, $3)", 3, p, err);
        if (!res)
                return -EPROTO;
        *ret_ids = ids_of(res);
        return 0;
}

int queue_rescue(PGconn *conn, struct bc_error *err)
{
        _cleanup_pgresult_ PGresult *res = db_exec(conn, "select boxcar.rescue_expired()", 0, NULL,
                                                   err);
        if (!res)
                return -EPROTO;
        return atoi(PQgetvalue(res, 0, 0));
}

static int bool_call(PGconn *conn, const char *sql, int n, const char *const *p,
                     struct bc_error *err)
{
        _cleanup_pgresult_ PGresult *res = db_exec(conn, sql, n, p, err);
        if (!res)
                return -EPROTO;
        return strcmp(PQgetvalue(res, 0, 0), "t") == 0;
}

int queue_release(PGconn *conn, const char *worker_id, const char *job_id, struct bc_error *err)
{
        const char *p[] = { job_id, worker_id };
        return bool_call(conn, "select boxcar.release($1::uuid, $2)", 2, p, err);
}

int queue_retry_lost(PGconn *conn, const char *worker_id, const char *job_id, const char *message,
                     struct bc_error *err)
{
        const char *p[] = { job_id, worker_id, message };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn,
                "select boxcar.retry_or_fail($1::uuid, $2, jsonb_build_object("
                "'code', 'WORKER_LOST', 'message', $3::text))",
                3, p, err);
        if (!res)
                return -EPROTO;
        return !PQgetisnull(res, 0, 0);
}

int queue_try_lead(PGconn *conn, const struct worker_config *cfg, struct bc_error *err)
{
        char ttl[32];
        snprintf(ttl, sizeof(ttl), "%.3f seconds", cfg->lease_s);
        const char *p[] = { cfg->worker_id, ttl };
        return bool_call(conn, "select boxcar.try_lead($1, $2::interval)", 2, p, err);
}

int queue_resign(PGconn *conn, const char *worker_id, struct bc_error *err)
{
        const char *p[] = { worker_id };
        _cleanup_pgresult_ PGresult *res = db_exec(conn, "select boxcar.resign($1)", 1, p, err);
        return res ? 0 : -EPROTO;
}

int queue_drain_requested(PGconn *conn, const char *worker_id, struct bc_error *err)
{
        const char *p[] = { worker_id };
        return bool_call(conn, "select boxcar.drain_requested($1)", 1, p, err);
}

int queue_prune(PGconn *conn, double retention_s, unsigned max_rows, struct bc_error *err)
{
        char older[32], max[16];
        snprintf(older, sizeof(older), "%.0f seconds", retention_s);
        snprintf(max, sizeof(max), "%u", max_rows);
        const char *p[] = { older, max };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn, "select boxcar.prune($1::interval, $2::int)", 2, p, err);
        return res ? atoi(PQgetvalue(res, 0, 0)) : -EPROTO;
}

int queue_schedule_tick(PGconn *conn, struct bc_error *err)
{
        _cleanup_pgresult_ PGresult *res = db_exec(conn, "select boxcar.schedule_tick()", 0, NULL,
                                                   err);
        return res ? atoi(PQgetvalue(res, 0, 0)) : -EPROTO;
}

int queue_claim_delay_ms(PGconn *conn, const struct worker_config *cfg, bool *ret_rated,
                         struct bc_error *err)
{
        _cleanup_free_ char *queues = queues_literal(cfg->queues);
        const char *p[] = { queues };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn, "select boxcar.claim_delay_ms($1::text[])", 1, p, err);
        if (!res)
                return -EPROTO;
        *ret_rated = !PQgetisnull(res, 0, 0);
        return *ret_rated ? atoi(PQgetvalue(res, 0, 0)) : 0;
}

PGresult *queue_stats(PGconn *conn, struct bc_error *err)
{
        return db_exec(conn,
                       "select queue, queued, scheduled, running, oldest_queued_age_s "
                       "from boxcar.active_queue_stats",
                       0, NULL, err);
}

int queue_cancel_requested(PGconn *conn, const char *ids, char **ret_ids, struct bc_error *err)
{
        const char *p[] = { ids };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn, "select boxcar.cancel_requested(string_to_array($1, ' ')::uuid[])", 1, p,
                err);
        if (!res)
                return -EPROTO;
        *ret_ids = ids_of(res);
        return 0;
}


/* One element of an array literal: NULL, or the text quoted ("…" with "
 * and \ escaped). */
static int array_elem(struct dynbuf *b, bool first, const char *s)
{
        int r = first ? 0 : dynbuf_addstr(b, ",");
        if (!s)
                return r | dynbuf_addstr(b, "NULL");
        r |= dynbuf_addstr(b, "\"");
        for (const char *p = s; *p && r == 0;) {
                size_t plain = strcspn(p, "\"\\");
                r |= dynbuf_add(b, p, plain);
                p += plain;
                if (*p) {
                        char esc[2] = { '\\', *p++ };
                        r |= dynbuf_add(b, esc, 2);
                }
        }
        return r | dynbuf_addstr(b, "\"");
}

enum {
        COL_ID,
        COL_ATTEMPT,
        COL_ACTION,
        COL_STATUS,
        COL_RESULT,
        COL_ERROR,
        COL_EVENTS,
        COL_ARTIFACT,
        COL_LOGS,
        N_COLS
};

int queue_report_batch(PGconn *conn, const char *worker_id, struct queue_report_row *rows,
                       size_t n, struct bc_error *err)
{
        static const char *const actions[] = { [JOB_COMPLETE] = "complete",
                                               [JOB_RETRY] = "retry",
                                               [JOB_RELEASE] = "release",
                                               [JOB_DROP] = "none" };
        struct dynbuf col[N_COLS];
        bool any_artifact = false, any_logs = false;
        int r = 0;
        for (int c = 0; c < N_COLS; c++) {
                dynbuf_init(&col[c], 256u << 20);
                r |= dynbuf_addstr(&col[c], "{");
        }
        for (size_t i = 0; i < n && r == 0; i++) {
                const struct job_outcome *o = rows[i].o;
                char attempt[16];
                snprintf(attempt, sizeof(attempt), "%d", rows[i].job->attempt);
                bool first = i == 0;
                r |= array_elem(&col[COL_ID], first, rows[i].job->id);
                r |= array_elem(&col[COL_ATTEMPT], first, attempt);
                r |= array_elem(&col[COL_ACTION], first, actions[o->action]);
                r |= array_elem(&col[COL_STATUS], first,
                                o->action == JOB_COMPLETE ? o->status : NULL);
                r |= array_elem(&col[COL_RESULT], first, o->result_json);
                r |= array_elem(&col[COL_ERROR], first, o->error_json);
                r |= array_elem(&col[COL_EVENTS], first, rows[i].events_json);
                r |= array_elem(&col[COL_ARTIFACT], first, o->artifact_json);
                r |= array_elem(&col[COL_LOGS], first, o->logs_json);
                any_artifact |= o->artifact_json != NULL;
                any_logs |= o->logs_json != NULL;
        }
        const char *p[N_COLS + 1] = { worker_id };
        for (int c = 0; c < N_COLS; c++) {
                r |= dynbuf_addstr(&col[c], "}");
                p[c + 1] = col[c].data;
        }
        /* No artifact or no output in the whole batch: the array itself is
         * NULL, and report_batch skips what it would do with it (the logs'
         * checks, insert and notify cost the database 40-50 us a call even
         * when every job of the batch printed nothing). */
        if (!any_artifact)
                p[COL_ARTIFACT + 1] = NULL;
        if (!any_logs)
                p[COL_LOGS + 1] = NULL;
        _cleanup_pgresult_ PGresult *res = NULL;
        if (r == 0)
                res = db_exec_hot(conn,
                                  "select ord, held from boxcar.report_batch($1, $2::uuid[], "
                                  "$3::int[], $4::text[], $5::text[], $6::jsonb[], $7::jsonb[], "
                                  "$8::jsonb[], $9::jsonb[], $10::jsonb[])",
                                  N_COLS + 1, p, err);
        for (int c = 0; c < N_COLS; c++)
                dynbuf_done(&col[c]);
        if (r != 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "report: out of memory");
        if (!res)
                return -EPROTO;
        for (size_t i = 0; i < n; i++)
                rows[i].held = 0;
        for (int k = 0; k < PQntuples(res); k++) {
                int ord = atoi(PQgetvalue(res, k, 0));
                if (ord >= 1 && (size_t)ord <= n)
                        rows[ord - 1].held = strcmp(PQgetvalue(res, k, 1), "t") == 0;
        }
        return 0;
}

int queue_add_events(PGconn *conn, const char *worker_id, const struct claimed_job *job,
                     const char *events_json, struct bc_error *err)
{
        char attempt[16];
        snprintf(attempt, sizeof(attempt), "%d", job->attempt);
        const char *p[] = { job->id, worker_id, attempt, events_json };
        _cleanup_pgresult_ PGresult *res = db_exec_hot(
                conn, "select boxcar.add_worker_events($1, $2, $3::int, $4::jsonb)", 4, p, err);
        return res ? 0 : -EPROTO;
}
