/* The shared SQL API calls (api.h) about jobs: the list, one job, its
 * state, events and log, cancel and retry. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/db/api-internal.h"
#include "worker/db/api.h"
#include "worker/db/db.h"

int api_jobs_list(PGconn *conn, const struct api_jobs_filter *f, long limit,
                  struct api_jobs_page *ret, struct bc_error *err)
{
        /* One row more than the page: whether a next page exists. */
        char lim[24];
        snprintf(lim, sizeof(lim), "%ld", limit + 1);
        const char *p[] = { f->queue, f->status, f->since, lim, f->after };
        PGresult *res = db_exec(conn,
                                "select job, cursor"
                                " from boxcar.jobs_list($1, $2, $3::timestamptz, $4::int, $5)",
                                5, p, err);
        if (!res)
                return -EPROTO;
        int rows = PQntuples(res);
        bool more = rows > limit;
        const char *next = more ? PQgetvalue(res, (int)limit - 1, 1) : NULL;
        struct api_jobs_page page = { .next_cursor = next };
        int r = api_json_rows_from(res, &page.jobs, err);
        if (r < 0)
                return r;
        if (more) {
                /* The extra row only said that more follow. */
                cJSON_Delete(page.jobs.rows[limit].json);
                page.jobs.n = (size_t)limit;
        }
        *ret = page;
        return 0;
}

void api_jobs_page_done(struct api_jobs_page *p)
{
        if (!p)
                return;
        api_json_rows_done(&p->jobs);
        p->next_cursor = NULL;
}

int api_job(PGconn *conn, const char *id, struct api_json_rows *ret, struct bc_error *err)
{
        const char *p[] = { id };
        PGresult *res = db_exec(conn, "select boxcar.job_json($1::uuid)", 1, p, err);
        if (!res)
                return -EPROTO;
        bool found = !PQgetisnull(res, 0, 0);
        int r = api_json_rows_from(res, ret, err);
        if (r < 0)
                return r;
        if (!found)
                ret->n = 0; /* the one row is a SQL null, no JSON to free */
        return found;
}

int api_job_state(PGconn *conn, const char *id, struct api_job_state *ret, struct bc_error *err)
{
        const char *p[] = { id };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn,
                /* Through job_json, not the table: an application's role
                 * reads jobs by the API's functions only (sql/99_roles.sql). */
                "select j->>'status', (j->'result'->>'exit_code')::int"
                " from boxcar.job_json($1::uuid) j where j is not null",
                1, p, err);
        if (!res)
                return -EPROTO;
        if (PQntuples(res) == 0)
                return 0;
        struct api_job_state st = { .has_exit_code = !PQgetisnull(res, 0, 1) };
        snprintf(st.status, sizeof(st.status), "%s", PQgetvalue(res, 0, 0));
        st.exit_code = st.has_exit_code ? atoi(PQgetvalue(res, 0, 1)) : 0;
        *ret = st;
        return 1;
}

int api_job_events(PGconn *conn, const char *id, struct api_json_rows *ret, struct bc_error *err)
{
        const char *p[] = { id };
        PGresult *res = db_exec(conn, "select boxcar.job_events_json($1::uuid)", 1, p, err);
        if (!res)
                return -EPROTO;
        return api_json_rows_from(res, ret, err);
}

int api_job_logs_after(PGconn *conn, const char *id, int attempt, int seq,
                       struct api_log_chunks *ret, struct bc_error *err)
{
        char a[16], s[16], lim[16];
        snprintf(a, sizeof(a), "%d", attempt);
        snprintf(s, sizeof(s), "%d", seq);
        snprintf(lim, sizeof(lim), "%d", API_LOG_CHUNKS_MAX);
        const char *p[] = { id, a, s, lim };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn,
                "select attempt, seq, stream, data "
                "from boxcar.job_logs_after($1::uuid, $2::int, $3::int, $4::int)",
                4, p, err);
        if (!res)
                return -EPROTO;
        struct api_log_chunks c = { .n = (size_t)PQntuples(res) };
        c.rows = calloc(c.n ? c.n : 1, sizeof(*c.rows));
        if (!c.rows)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        for (size_t i = 0; i < c.n; i++) {
                struct api_log_chunk *k = &c.rows[i];
                int row = (int)i;
                k->attempt = atoi(PQgetvalue(res, row, 0));
                k->seq = atoi(PQgetvalue(res, row, 1));
                k->stream = atoi(PQgetvalue(res, row, 2));
                k->data = PQunescapeBytea((const unsigned char *)PQgetvalue(res, row, 3), &k->len);
                if (!k->data) {
                        api_log_chunks_done(&c);
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                }
        }
        *ret = c;
        return 0;
}

void api_log_chunks_done(struct api_log_chunks *c)
{
        if (!c)
                return;
        for (size_t i = 0; c->rows && i < c->n; i++)
                PQfreemem(c->rows[i].data);
        free(c->rows);
        *c = (struct api_log_chunks){ 0 };
}

int api_cancel(PGconn *conn, const char *id, char ret_status[API_STATUS_MAX], struct bc_error *err)
{
        const char *p[] = { id };
        return api_status_call(conn, "select boxcar.cancel($1::uuid)", 1, p, ret_status, err);
}

int api_retry(PGconn *conn, const char *id, const char *by, struct api_json_rows *ret,
              struct bc_error *err)
{
        const char *p[] = { id, by };
        PGresult *res = db_exec(conn, "select boxcar.retry($1::uuid, $2)", 2, p, err);
        if (!res)
                return -EPROTO;
        return api_json_rows_from(res, ret, err);
}
