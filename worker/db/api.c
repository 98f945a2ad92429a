/* The shared SQL API calls (api.h) about queues, workers, webhook
 * deliveries and schedules, and the result structs' readers; the jobs'
 * calls are in api_jobs.c, the sessions' in api_sessions.c. */
#include "worker/db/api.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/db/api-internal.h"
#include "worker/db/db.h"

int api_json_rows_from(PGresult *res, struct api_json_rows *ret, struct bc_error *err)
{
        size_t n = (size_t)PQntuples(res);
        struct api_json *rows = calloc(n ? n : 1, sizeof(*rows));
        if (!rows) {
                PQclear(res);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < n; i++) {
                rows[i].text = PQgetvalue(res, (int)i, 0);
                rows[i].json = cJSON_Parse(rows[i].text);
        }
        *ret = (struct api_json_rows){ .res = res, .rows = rows, .n = n };
        return 0;
}

void api_json_rows_done(struct api_json_rows *r)
{
        if (!r)
                return;
        for (size_t i = 0; r->rows && i < r->n; i++)
                cJSON_Delete(r->rows[i].json);
        free(r->rows);
        PQclear(r->res);
        *r = (struct api_json_rows){ 0 };
}

/* A call whose rows are one JSON value each. */
static int json_call(PGconn *conn, const char *sql, int nparams, const char *const *params,
                     struct api_json_rows *ret, struct bc_error *err)
{
        PGresult *res = db_exec(conn, sql, nparams, params, err);
        if (!res)
                return -EPROTO;
        return api_json_rows_from(res, ret, err);
}

int api_status_call(PGconn *conn, const char *sql, int nparams, const char *const *params,
                    char ret_status[API_STATUS_MAX], struct bc_error *err)
{
        _cleanup_pgresult_ PGresult *res = db_exec(conn, sql, nparams, params, err);
        if (!res)
                return -EPROTO;
        snprintf(ret_status, API_STATUS_MAX, "%s", PQgetvalue(res, 0, 0));
        return 0;
}

void *api_rows_for(PGresult *res, size_t size, struct bc_error *err)
{
        int n = PQntuples(res);
        void *rows = calloc(n ? (size_t)n : 1, size);
        if (!rows) {
                PQclear(res);
                bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        return rows;
}

/* ---- queues ---- */

int api_queue_overview(PGconn *conn, struct api_queue_rows *ret, struct bc_error *err)
{
        PGresult *res = db_exec(
                conn,
                "select queue, queued, scheduled, running, round(oldest_queued_age_s::numeric, 1),"
                " succeeded_last_hour, failed_last_hour,"
                " coalesce(round(wait_avg_s::numeric, 2)::text, '-'),"
                " coalesce(round(run_avg_s::numeric, 2)::text, '-')"
                " from boxcar.queue_overview()",
                0, NULL, err);
        if (!res)
                return -EPROTO;
        int n = PQntuples(res);
        struct api_queue_row *rows = api_rows_for(res, sizeof(*rows), err);
        if (!rows)
                return -ENOMEM;
        for (int i = 0; i < n; i++)
                rows[i] = (struct api_queue_row){
                        .queue = PQgetvalue(res, i, 0),
                        .queued = PQgetvalue(res, i, 1),
                        .scheduled = PQgetvalue(res, i, 2),
                        .running = PQgetvalue(res, i, 3),
                        .oldest_queued_s = PQgetvalue(res, i, 4),
                        .succeeded_last_hour = PQgetvalue(res, i, 5),
                        .failed_last_hour = PQgetvalue(res, i, 6),
                        .wait_avg_s = PQgetvalue(res, i, 7),
                        .run_avg_s = PQgetvalue(res, i, 8),
                };
        *ret = (struct api_queue_rows){ .res = res, .rows = rows, .n = (size_t)n };
        return 0;
}

void api_queue_rows_done(struct api_queue_rows *q)
{
        if (!q)
                return;
        free(q->rows);
        PQclear(q->res);
        *q = (struct api_queue_rows){ 0 };
}

int api_queue_overview_json(PGconn *conn, struct api_json_rows *ret, struct bc_error *err)
{
        return json_call(conn,
                         "select coalesce(jsonb_agg(to_jsonb(q) order by q.queue), '[]')"
                         " from boxcar.queue_overview() q",
                         0, NULL, ret, err);
}

int api_queue_chart(PGconn *conn, const char *queue, const char *span, struct api_json_rows *ret,
                    struct bc_error *err)
{
        const char *params[] = { queue, span };
        return json_call(conn,
                         "select jsonb_build_object('start', extract(epoch from c.bucket_start),"
                         " 'end', extract(epoch from c.bucket_end), 'succeeded', c.succeeded,"
                         " 'failed', c.failed, 'wait_p50_s', c.wait_p50_s,"
                         " 'wait_p95_s', c.wait_p95_s, 'run_p50_s', c.run_p50_s,"
                         " 'run_p95_s', c.run_p95_s) from boxcar.queue_chart($1, $2) c",
                         2, params, ret, err);
}

/* ---- workers ---- */

int api_workers(PGconn *conn, struct api_worker_rows *ret, struct bc_error *err)
{
        PGresult *res = db_exec(
                conn,
                "select id, host, pid, state, version, running || '/' || concurrency,"
                " array_to_string(queues, ','),"
                " to_char(heartbeat_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
                " to_char(heartbeat_at, 'YYYY-MM-DD HH24:MI:SS'),"
                " is_leader, drain_requested_at is not null"
                " from boxcar.worker_status order by id",
                0, NULL, err);
        if (!res)
                return -EPROTO;
        int n = PQntuples(res);
        struct api_worker_row *rows = api_rows_for(res, sizeof(*rows), err);
        if (!rows)
                return -ENOMEM;
        for (int i = 0; i < n; i++)
                rows[i] = (struct api_worker_row){
                        .id = PQgetvalue(res, i, 0),
                        .host = PQgetvalue(res, i, 1),
                        .pid = PQgetvalue(res, i, 2),
                        .state = PQgetvalue(res, i, 3),
                        .version = PQgetvalue(res, i, 4),
                        .load = PQgetvalue(res, i, 5),
                        .queues = PQgetvalue(res, i, 6),
                        .heartbeat_utc = PQgetvalue(res, i, 7),
                        .heartbeat = PQgetvalue(res, i, 8),
                        .leader = strcmp(PQgetvalue(res, i, 9), "t") == 0,
                        .drain_requested = strcmp(PQgetvalue(res, i, 10), "t") == 0,
                };
        *ret = (struct api_worker_rows){ .res = res, .rows = rows, .n = (size_t)n };
        return 0;
}

void api_worker_rows_done(struct api_worker_rows *w)
{
        if (!w)
                return;
        free(w->rows);
        PQclear(w->res);
        *w = (struct api_worker_rows){ 0 };
}

int api_workers_json(PGconn *conn, struct api_json_rows *ret, struct bc_error *err)
{
        return json_call(conn, "select to_jsonb(w)::text from boxcar.worker_status w order by id",
                         0, NULL, ret, err);
}

int api_request_drain(PGconn *conn, const char *worker_id, struct bc_error *err)
{
        const char *p[] = { worker_id };
        _cleanup_pgresult_ PGresult *res = db_exec(conn, "select boxcar.request_drain($1)", 1, p,
                                                   err);
        if (!res)
                return -EPROTO;
        return strcmp(PQgetvalue(res, 0, 0), "t") == 0;
}

/* ---- webhook deliveries, schedules ---- */

int api_webhook_list(PGconn *conn, bool failed_only, long limit, struct api_json_rows *ret,
                     struct bc_error *err)
{
        char lim[24];
        snprintf(lim, sizeof(lim), "%ld", limit);
        const char *p[] = { failed_only ? "true" : "false", lim };
        return json_call(conn, "select boxcar.webhook_list($1::boolean, $2::int)", 2, p, ret, err);
}

int api_webhook_retry(PGconn *conn, const char *id, char ret_status[API_STATUS_MAX],
                      struct bc_error *err)
{
        const char *p[] = { id };
        return api_status_call(conn, "select boxcar.webhook_retry($1)", 1, p, ret_status, err);
}

int api_schedule_ls(PGconn *conn, struct api_json_rows *ret, struct bc_error *err)
{
        return json_call(conn, "select boxcar.schedule_ls()", 0, NULL, ret, err);
}
