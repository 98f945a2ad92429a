/* The shared SQL API calls (api.h) about sessions: the list and the end. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "worker/db/api-internal.h"
#include "worker/db/api.h"
#include "worker/db/db.h"

int api_sessions(PGconn *conn, const char *scope, struct api_session_rows *ret,
                 struct bc_error *err)
{
        const char *p[] = { scope };
        PGresult *res = db_exec(
                conn,
                "select scope, id, storage, state, coalesce(holder, ''), jobs, starts, resumes,"
                " idle_ends, evictions,"
                " coalesce(to_char(last_job_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS'), '-'),"
                " coalesce(checkpoint, ''), queued, running, coalesce(holder_alive, false),"
                " end_requested_at is not null"
                " from boxcar.session_list($1) order by scope, id",
                1, p, err);
        if (!res)
                return -EPROTO;
        int n = PQntuples(res);
        struct api_session_row *rows = api_rows_for(res, sizeof(*rows), err);
        if (!rows)
                return -ENOMEM;
        for (int i = 0; i < n; i++)
                rows[i] = (struct api_session_row){
                        .scope = PQgetvalue(res, i, 0),
                        .id = PQgetvalue(res, i, 1),
                        .storage = PQgetvalue(res, i, 2),
                        .state = PQgetvalue(res, i, 3),
                        .holder = PQgetvalue(res, i, 4),
                        .jobs = PQgetvalue(res, i, 5),
                        .starts = PQgetvalue(res, i, 6),
                        .resumes = PQgetvalue(res, i, 7),
                        .idle_ends = PQgetvalue(res, i, 8),
                        .evictions = PQgetvalue(res, i, 9),
                        .last_job_utc = PQgetvalue(res, i, 10),
                        .checkpoint = PQgetvalue(res, i, 11),
                        .queued = PQgetvalue(res, i, 12),
                        .running = PQgetvalue(res, i, 13),
                        .holder_alive = strcmp(PQgetvalue(res, i, 14), "t") == 0,
                        .end_requested = strcmp(PQgetvalue(res, i, 15), "t") == 0,
                };
        *ret = (struct api_session_rows){ .res = res, .rows = rows, .n = (size_t)n };
        return 0;
}

void api_session_rows_done(struct api_session_rows *s)
{
        if (!s)
                return;
        free(s->rows);
        PQclear(s->res);
        *s = (struct api_session_rows){ 0 };
}

int api_sessions_json(PGconn *conn, const char *scope, struct api_json_rows *ret,
                      struct bc_error *err)
{
        const char *p[] = { scope };
        PGresult *res = db_exec(conn,
                                "select coalesce(jsonb_agg(to_jsonb(s) order by s.scope, s.id),"
                                " '[]') from boxcar.session_list($1) s",
                                1, p, err);
        if (!res)
                return -EPROTO;
        return api_json_rows_from(res, ret, err);
}

int api_end_session(PGconn *conn, const char *scope, const char *id,
                    char ret_status[API_STATUS_MAX], struct bc_error *err)
{
        const char *p[] = { scope, id };
        return api_status_call(conn, "select boxcar.end_session($1, $2)", 2, p, ret_status, err);
}
