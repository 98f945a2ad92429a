/* boxcar status --wait: the job's end, pushed on boxcar_job_updates, and
 * read again every REREAD_MS in case the push never comes: through a
 * transaction-mode pooler (PgBouncer) LISTEN lands on a server session
 * that is reset after the statement, so nothing is ever delivered. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "worker/cli/job_wait.h"
#include "worker/db/db.h"

enum { REREAD_MS = 1000 };

bool job_status_final(const cJSON *job, char ret_status[API_STATUS_MAX])
{
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(job, "status");
        snprintf(ret_status, API_STATUS_MAX, "%s", cJSON_IsString(st) ? st->valuestring : "?");
        return strcmp(ret_status, "succeeded") == 0 || strcmp(ret_status, "failed") == 0 ||
               strcmp(ret_status, "cancelled") == 0;
}

/* Whether a boxcar_job_updates payload tells of job id's end (progress
 * reports, "running", are not ends). */
static bool is_end_of(const char *payload, const char *id)
{
        cJSON *m = cJSON_Parse(payload);
        const cJSON *mid = cJSON_GetObjectItemCaseSensitive(m, "id");
        char st[API_STATUS_MAX];
        bool end = cJSON_IsString(mid) && strcasecmp(mid->valuestring, id) == 0 &&
                   job_status_final(m, st);
        cJSON_Delete(m);
        return end;
}

/* Consumes the notifications libpq holds; whether one was id's end. */
static bool take_ends(PGconn *conn, const char *id)
{
        bool end = false;
        for (PGnotify *n = PQnotifies(conn); n; n = PQnotifies(conn)) {
                if (strcmp(n->relname, "boxcar_job_updates") == 0 && is_end_of(n->extra, id))
                        end = true;
                PQfreemem(n);
        }
        return end;
}

static int listen_updates(PGconn *conn, struct bc_error *err)
{
        return db_exec_script(conn, "listen boxcar_job_updates", err);
}

/* Opens the connection again after it was lost, and LISTENs on it. */
static int reconnect(PGconn **conn, const char *url, struct bc_error *err)
{
        PQfinish(*conn);
        *conn = db_connect(url, "boxcar-cli", err);
        if (!*conn)
                return -EIO;
        return listen_updates(*conn, err);
}

/* Until id's end is heard, REREAD_MS passed, the deadline passes
 * (-ETIMEDOUT) or the connection had to be opened again (1: read the job
 * again in each of those). */
static int wait_end(PGconn **conn, const char *url, const char *id, uint64_t deadline,
                    struct bc_error *err)
{
        uint64_t reread_at = bc_mono_ms() + REREAD_MS;
        for (;;) {
                if (take_ends(*conn, id))
                        return 1;
                uint64_t now = bc_mono_ms();
                if (deadline && now >= deadline)
                        return -ETIMEDOUT;
                if (now >= reread_at)
                        return 1;
                uint64_t until = deadline && deadline < reread_at ? deadline : reread_at;
                struct pollfd pfd = { .fd = PQsocket(*conn), .events = POLLIN };
                if (poll(&pfd, 1, (int)(until - now)) < 0 && errno != EINTR)
                        return bc_error_set(err, BC_INTERNAL, errno, "poll");
                if (!PQconsumeInput(*conn)) {
                        int r = reconnect(conn, url, err);
                        return r < 0 ? r : 1;
                }
        }
}

int job_wait(PGconn **conn, const char *url, const char *id, long timeout_ms,
             struct api_json_rows *ret, char ret_status[API_STATUS_MAX], struct bc_error *err)
{
        uint64_t deadline = timeout_ms > 0 ? bc_mono_ms() + (uint64_t)timeout_ms : 0;
        int r = listen_updates(*conn, err);
        if (r < 0)
                return r;
        for (;;) {
                api_json_rows_done(ret);
                r = api_job(*conn, id, ret, err);
                if (r <= 0)
                        return r;
                if (job_status_final(ret->rows[0].json, ret_status))
                        return 1;
                r = wait_end(conn, url, id, deadline, err);
                if (r < 0)
                        return r;
        }
}
