/* Retry or cancel many jobs at once from the job list: the ids ticked on
 * the page, or every job matching the list's filter (the newest
 * UI_BULK_MAX of them).  The same gate as one job's action (--actions, the
 * Origin and the CSRF token), each job through the same SQL API call
 * (boxcar.retry, boxcar.cancel), each logged with who asked; the answer is
 * a page with every job's outcome and the refusals grouped by reason. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/db/api.h"
#include "worker/http/ui-internal.h"
#include "worker/log/log.h"

struct outcome {
        char id[37];
        bool done;
        char what[API_STATUS_MAX + 32]; /* "retried", "cancelled", "cancel requested" */
        char *why;                      /* a refusal's reason; owned */
};

struct bulk {
        struct outcome *o;
        size_t n;
        bool capped; /* more jobs matched than were acted on */
};

static void bulk_done(struct bulk *k)
{
        for (size_t i = 0; k->o && i < k->n; i++)
                free(k->o[i].why);
        free(k->o);
}

/* A refusal's reason without the job's id ("job <id> is succeeded: ..."
 * reads "job is succeeded: ..."), so that one reason groups every job it
 * refused; its first line only. */
static char *reason(const char *msg, const char *id)
{
        char prefix[48];
        snprintf(prefix, sizeof(prefix), "job %s ", id);
        bool named = strncmp(msg, prefix, strlen(prefix)) == 0;
        if (named)
                msg += strlen(prefix);
        size_t n = strcspn(msg, "\n");
        char *r = NULL;
        if (asprintf(&r, "%s%.*s", named ? "job " : "", (int)n, msg) < 0)
                return NULL;
        return r;
}

/* A refusal's reason to show (its text lost to a lack of memory: still a
 * refusal). */
static const char *refusal(const struct outcome *o)
{
        return o->why ? o->why : "refused";
}

static void act(PGconn *conn, const char *op, const char *who, struct outcome *o)
{
        struct bc_error err = BC_ERROR_INIT;
        char status[API_STATUS_MAX] = "";
        int rc;
        if (strcmp(op, "retry") == 0) {
                char by[sizeof(((struct ui_req *)NULL)->who) + 3];
                snprintf(by, sizeof(by), "ui:%s", who);
                _cleanup_(api_json_rows_done) struct api_json_rows job = { 0 };
                rc = api_retry(conn, o->id, by, &job, &err);
                snprintf(o->what, sizeof(o->what), "retried");
        } else {
                /* boxcar.cancel answers a finished job with its status and
                 * leaves it: asked first, so that a job cancelled long ago
                 * is not counted as cancelled now. */
                struct api_job_state st = { .status = "" };
                rc = api_job_state(conn, o->id, &st, &err);
                if (rc == 0) {
                        o->why = strdup("job not found");
                        rc = -1;
                } else if (rc > 0 && strcmp(st.status, "queued") != 0 &&
                           strcmp(st.status, "running") != 0) {
                        char msg[96];
                        snprintf(msg, sizeof(msg),
                                 "job is %s: only a queued or running job can be cancelled",
                                 st.status);
                        o->why = strdup(msg);
                        rc = -1;
                } else if (rc > 0) {
                        rc = api_cancel(conn, o->id, status, &err);
                        if (rc >= 0 && strcmp(status, "cancelled") != 0 &&
                            strcmp(status, "running") != 0) {
                                /* It finished in the meantime. */
                                char msg[96];
                                snprintf(msg, sizeof(msg), "job is %s: it finished first", status);
                                o->why = strdup(msg);
                                rc = -1;
                        }
                }
                if (rc >= 0)
                        snprintf(o->what, sizeof(o->what), "%s",
                                 strcmp(status, "running") == 0 ? "cancel requested"
                                                                : "cancelled");
        }
        o->done = rc >= 0;
        if (rc < 0 && !o->why)
                o->why = reason(bc_error_message(&err), o->id);
        log_event(o->done ? LOG_INFO : LOG_WARN, "ui.action", "action", op, "id", o->id, "who",
                  who, "bulk", "1", "error", o->done ? NULL : refusal(o), NULL);
        bc_error_clear(&err);
}

/* The ids: ticked ones, or the filter's newest UI_BULK_MAX. */
static int pick(struct ui_req *r, PGconn *conn, struct bulk *k, struct bc_error *err)
{
        k->o = calloc(UI_BULK_MAX, sizeof(*k->o));
        if (!k->o)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        char all[8] = "", id[64];
        ui_form_value(&r->body, "all", all, sizeof(all));
        if (strcmp(all, "1") == 0) {
                char q[256] = "", st[32] = "", since[64] = "";
                ui_form_value(&r->body, "queue", q, sizeof(q));
                ui_form_value(&r->body, "status", st, sizeof(st));
                ui_form_value(&r->body, "since", since, sizeof(since));
                const struct api_jobs_filter f = { *q ? q : NULL, *st ? st : NULL,
                                                   *since ? since : NULL, NULL };
                _cleanup_(api_jobs_page_done) struct api_jobs_page page = { 0 };
                if (api_jobs_list(conn, &f, UI_BULK_MAX, &page, err) < 0)
                        return -1;
                for (size_t i = 0; i < page.jobs.n; i++) {
                        const char *jid = ui_jstr(page.jobs.rows[i].json, "id", "");
                        if (ui_is_uuid(jid))
                                memcpy(k->o[k->n++].id, jid, 37);
                }
                k->capped = page.next_cursor != NULL;
                return 0;
        }
        size_t pos = 0;
        while (ui_form_next(&r->body, "id", &pos, id, sizeof(id))) {
                if (!ui_is_uuid(id))
                        return bc_error_set(err, BC_USAGE, EINVAL, "malformed job id in the form");
                if (k->n == UI_BULK_MAX)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "more than %d jobs ticked: use fewer, or all "
                                            "matching the filter",
                                            UI_BULK_MAX);
                memcpy(k->o[k->n++].id, id, 37); /* a UUID's 36 and its NUL */
        }
        if (k->n == 0)
                return bc_error_set(err, BC_USAGE, EINVAL, "no job ticked");
        return 0;
}

static void summary(struct dynbuf *b, const struct bulk *k, const char *op)
{
        size_t done = 0;
        for (size_t i = 0; i < k->n; i++)
                done += k->o[i].done;
        dynbuf_printf(b, "<p id=\"bulk-summary\" class=\"summary\"><b>%zu %s</b>", done,
                      strcmp(op, "retry") == 0 ? "retried" : "cancelled");
        /* The refusals, one clause per distinct reason. */
        for (size_t i = 0; i < k->n; i++) {
                if (k->o[i].done)
                        continue;
                bool seen = false;
                for (size_t j = 0; j < i && !seen; j++)
                        seen = !k->o[j].done && strcmp(refusal(&k->o[j]), refusal(&k->o[i])) == 0;
                if (seen)
                        continue;
                size_t same = 0;
                for (size_t j = i; j < k->n; j++)
                        same += !k->o[j].done && strcmp(refusal(&k->o[j]), refusal(&k->o[i])) == 0;
                dynbuf_printf(b, ", <span class=\"refused\">%zu refused: ", same);
                ui_esc(b, refusal(&k->o[i]));
                dynbuf_addstr(b, "</span>");
        }
        dynbuf_addstr(b, "</p>\n");
        if (k->capped)
                dynbuf_printf(b,
                              "<p class=\"note\" id=\"bulk-capped\">More jobs match the "
                              "filter: only the newest %d were acted on. Run it again for "
                              "the next ones.</p>\n",
                              UI_BULK_MAX);
}

enum MHD_Result ui_bulk(struct ui *ui, struct ui_req *r)
{
        if (!ui->actions)
                return ui_error_page(ui, r, MHD_HTTP_FORBIDDEN,
                                     "read-only: this dashboard was started without --actions");
        const char *why = NULL;
        if (!ui_auth_csrf_ok(r, &why))
                return ui_error_page(ui, r, MHD_HTTP_FORBIDDEN, why);
        char op[16] = "";
        ui_form_value(&r->body, "op", op, sizeof(op));
        if (strcmp(op, "retry") != 0 && strcmp(op, "cancel") != 0)
                return ui_error_page(ui, r, MHD_HTTP_BAD_REQUEST, "op: must be retry or cancel");
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(bulk_done) struct bulk k = { 0 };
        PGconn *conn = ui_db(ui, &err);
        if (!conn || pick(r, conn, &k, &err) < 0)
                return ui_fail(ui, r, MHD_HTTP_BAD_REQUEST, &err);
        for (size_t i = 0; i < k.n; i++)
                act(conn, op, r->who, &k.o[i]);
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, strcmp(op, "retry") == 0 ? "Bulk retry" : "Bulk cancel");
        summary(&b, &k, op);
        dynbuf_addstr(&b, "<table id=\"bulk\"><thead><tr><th>job</th><th>outcome</th></tr>"
                          "</thead><tbody>\n");
        for (size_t i = 0; i < k.n; i++) {
                dynbuf_printf(&b, "<tr data-id=\"%s\" data-outcome=\"%s\"><td>", k.o[i].id,
                              k.o[i].done ? "done" : "refused");
                ui_short_id_html(&b, "/jobs/", k.o[i].id);
                dynbuf_printf(&b, "</td><td class=\"%s\">", k.o[i].done ? "ok" : "error");
                ui_esc(&b, k.o[i].done ? k.o[i].what : "refused: ");
                if (!k.o[i].done)
                        ui_esc(&b, refusal(&k.o[i]));
                dynbuf_addstr(&b, "</td></tr>\n");
        }
        dynbuf_addstr(&b, "</tbody></table>\n<p><a href=\"/jobs\">Back to the jobs</a></p>");
        ui_page_end(&b);
        return ui_send_page(r->c, MHD_HTTP_OK, &b);
}
