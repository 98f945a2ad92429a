/* The overview pages: queues (boxcar.queue_overview), workers
 * (boxcar.worker_status), webhook deliveries (boxcar.webhook_list) and
 * periodic jobs (boxcar.schedule_ls). */
#include <cjson/cJSON.h>
#include <string.h>

#include "worker/db/db.h"
#include "worker/http/ui-internal.h"

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

static void cell(struct dynbuf *b, const char *cls, const char *text)
{
        if (cls)
                dynbuf_printf(b, "<td class=\"%s\">", cls);
        else
                dynbuf_addstr(b, "<td>");
        ui_esc(b, text);
        dynbuf_addstr(b, "</td>");
}

static void head(struct dynbuf *b, const char *id, const char *const *cols)
{
        dynbuf_printf(b, "<table id=\"%s\"><thead><tr>", id);
        for (; *cols; cols++)
                dynbuf_printf(b, "<th>%s</th>", *cols);
        dynbuf_addstr(b, "</tr></thead><tbody>\n");
}

enum MHD_Result ui_page_queues(struct ui *ui, struct ui_req *r)
{
        enum MHD_Result sent = MHD_NO;
        _cleanup_pgresult_ PGresult *res = ui_query(
                ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR,
                "select queue, queued, scheduled, running, round(oldest_queued_age_s::numeric, 1),"
                " succeeded_last_hour, failed_last_hour,"
                " coalesce(round(wait_avg_s::numeric, 2)::text, '-'),"
                " coalesce(round(run_avg_s::numeric, 2)::text, '-')"
                " from boxcar.queue_overview()", 0, NULL, &sent);
        if (!res)
                return sent;
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Queues");
        static const char *const cols[] = { "queue", "queued", "scheduled", "running",
                                            "oldest queued (s)", "succeeded (1 h)",
                                            "failed (1 h)", "avg wait (s)", "avg run (s)", NULL };
        head(&b, "queues", cols);
        for (int i = 0; i < PQntuples(res); i++) {
                const char *q = PQgetvalue(res, i, 0);
                dynbuf_addstr(&b, "<tr data-queue=\"");
                ui_esc(&b, q);
                dynbuf_addstr(&b, "\"><td><a href=\"/jobs?queue=");
                ui_urlenc(&b, q);
                dynbuf_addstr(&b, "\">");
                ui_esc(&b, q);
                dynbuf_addstr(&b, "</a></td>");
                static const char *const names[] = { NULL, "queued", "scheduled", "running",
                                                     "oldest", "succeeded", "failed", "wait",
                                                     "run" };
                for (int col = 1; col < 9; col++)
                        cell(&b, names[col], PQgetvalue(res, i, col));
                dynbuf_addstr(&b, "</tr>\n");
        }
        dynbuf_addstr(&b, "</tbody></table>\n");
        if (PQntuples(res) == 0)
                dynbuf_addstr(&b, "<p>No jobs yet.</p>");
        dynbuf_addstr(&b, "<p class=\"note\">Rates are the jobs finished in the last hour; "
                          "the wait is from due to started, the run from started to finished, "
                          "averaged over them.</p>");
        ui_page_end(&b);
        return ui_send_page(r->c, MHD_HTTP_OK, &b);
}

enum MHD_Result ui_page_workers(struct ui *ui, struct ui_req *r)
{
        enum MHD_Result sent = MHD_NO;
        _cleanup_pgresult_ PGresult *res = ui_query(
                ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR,
                "select id, host, state, running || '/' || concurrency, version,"
                " to_char(heartbeat_at, 'YYYY-MM-DD HH24:MI:SS'), is_leader,"
                " drain_requested_at is not null, array_to_string(queues, ', ')"
                " from boxcar.worker_status order by id", 0, NULL, &sent);
        if (!res)
                return sent;
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Workers");
        static const char *const cols[] = { "id", "host", "state", "running", "queues",
                                            "version", "heartbeat", "leader", "", NULL };
        head(&b, "workers", cols);
        for (int i = 0; i < PQntuples(res); i++) {
                const char *id = PQgetvalue(res, i, 0), *state = PQgetvalue(res, i, 2);
                dynbuf_addstr(&b, "<tr data-id=\"");
                ui_esc(&b, id);
                dynbuf_addstr(&b, "\">");
                cell(&b, "id", id);
                cell(&b, "host", PQgetvalue(res, i, 1));
                cell(&b, "state", state);
                cell(&b, "running", PQgetvalue(res, i, 3));
                cell(&b, "queues", PQgetvalue(res, i, 8));
                cell(&b, "version", PQgetvalue(res, i, 4));
                cell(&b, "heartbeat", PQgetvalue(res, i, 5));
                cell(&b, "leader", strcmp(PQgetvalue(res, i, 6), "t") == 0 ? "yes" : "");
                dynbuf_addstr(&b, "<td>");
                if (strcmp(state, "running") == 0 && strcmp(PQgetvalue(res, i, 7), "t") != 0)
                        ui_action_button(&b, ui, r, "drain", id, "Drain");
                else if (strcmp(PQgetvalue(res, i, 7), "t") == 0)
                        dynbuf_addstr(&b, "drain requested");
                dynbuf_addstr(&b, "</td></tr>\n");
        }
        dynbuf_addstr(&b, "</tbody></table>\n<p class=\"note\">Drain: the worker stops "
                          "claiming, finishes its jobs and exits.</p>");
        ui_page_end(&b);
        return ui_send_page(r->c, MHD_HTTP_OK, &b);
}

static void webhook_row(struct dynbuf *b, struct ui *ui, struct ui_req *r, const cJSON *d)
{
        const char *id = ui_jstr(d, "id", ""), *status = ui_jstr(d, "status", "");
        const cJSON *att = cJSON_GetObjectItemCaseSensitive(d, "attempts");
        const cJSON *last = cJSON_GetObjectItemCaseSensitive(d, "last_status");
        char n[32] = "", ls[32] = "";
        if (cJSON_IsNumber(att))
                snprintf(n, sizeof(n), "%d", att->valueint);
        if (cJSON_IsNumber(last))
                snprintf(ls, sizeof(ls), "%d", last->valueint);
        dynbuf_addstr(b, "<tr data-id=\"");
        ui_esc(b, id);
        dynbuf_addstr(b, "\">");
        cell(b, "id", id);
        dynbuf_addstr(b, "<td><a href=\"/jobs/");
        ui_urlenc(b, ui_jstr(d, "job_id", ""));
        dynbuf_addstr(b, "\">");
        ui_esc(b, ui_jstr(d, "job_id", ""));
        dynbuf_addstr(b, "</a></td>");
        cell(b, "type", ui_jstr(d, "type", ""));
        cell(b, "status", status);
        cell(b, "attempts", n);
        cell(b, "last", ls);
        cell(b, "error", ui_jstr(d, "last_error", ""));
        cell(b, "created", ui_jstr(d, "created_at", ""));
        dynbuf_addstr(b, "<td>");
        if (strcmp(status, "delivered") != 0)
                ui_action_button(b, ui, r, "redrive", id, "Redrive");
        dynbuf_addstr(b, "</td></tr>\n");
}

enum MHD_Result ui_page_webhooks(struct ui *ui, struct ui_req *r)
{
        const char *f = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "failed");
        bool failed = f && strcmp(f, "1") == 0;
        const char *p[] = { failed ? "true" : "false" };
        enum MHD_Result sent = MHD_NO;
        _cleanup_pgresult_ PGresult *res =
                ui_query(ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR,
                         "select boxcar.webhook_list($1::boolean, 200)", 1, p, &sent);
        if (!res)
                return sent;
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Webhooks");
        dynbuf_addstr(&b, failed ? "<p><a href=\"/webhooks\">All deliveries</a> &middot; "
                                   "<strong>failed only</strong></p>"
                                 : "<p><strong>All deliveries</strong> &middot; "
                                   "<a href=\"/webhooks?failed=1\">failed only</a></p>");
        static const char *const cols[] = { "delivery", "job", "type", "status", "attempts",
                                            "last HTTP", "last error", "created", "", NULL };
        head(&b, "webhooks", cols);
        for (int i = 0; i < PQntuples(res); i++) {
                _cleanup_(cJSON_Deletep) cJSON *d = cJSON_Parse(PQgetvalue(res, i, 0));
                if (d)
                        webhook_row(&b, ui, r, d);
        }
        dynbuf_addstr(&b, "</tbody></table>\n<p class=\"note\">The 200 newest. Redrive sends a "
                          "delivery again now, with the same webhook-id and a fresh retry "
                          "schedule.</p>");
        ui_page_end(&b);
        return ui_send_page(r->c, MHD_HTTP_OK, &b);
}

static void schedule_row(struct dynbuf *b, const cJSON *s)
{
        const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enabled");
        dynbuf_addstr(b, "<tr data-id=\"");
        ui_esc(b, ui_jstr(s, "name", ""));
        dynbuf_addstr(b, "\">");
        cell(b, "name", ui_jstr(s, "name", ""));
        cell(b, "cron", ui_jstr(s, "cron", ""));
        cell(b, "tz", ui_jstr(s, "time_zone", ""));
        cell(b, "queue", ui_jstr(s, "queue", ""));
        cell(b, "state", cJSON_IsTrue(en) ? "enabled" : "paused");
        cell(b, "next", cJSON_IsTrue(en) ? ui_jstr(s, "next_run_at", "") : "");
        cell(b, "last", ui_jstr(s, "last_run_at", ""));
        const char *job = ui_jstr(s, "last_job_id", "");
        dynbuf_addstr(b, "<td class=\"job\">");
        if (*job) {
                dynbuf_addstr(b, "<a href=\"/jobs/");
                ui_urlenc(b, job);
                dynbuf_addstr(b, "\">");
                ui_esc(b, job);
                dynbuf_addstr(b, "</a>");
        }
        dynbuf_addstr(b, "</td>");
        cell(b, "error", ui_jstr(s, "last_error", ""));
        dynbuf_addstr(b, "</tr>\n");
}

enum MHD_Result ui_page_schedules(struct ui *ui, struct ui_req *r)
{
        enum MHD_Result sent = MHD_NO;
        _cleanup_pgresult_ PGresult *res = ui_query(ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                                    "select boxcar.schedule_ls()", 0, NULL, &sent);
        if (!res)
                return sent;
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Schedules");
        static const char *const cols[] = { "name", "cron", "time zone", "queue", "state",
                                            "next run", "last run", "last job", "last error",
                                            NULL };
        head(&b, "schedules", cols);
        for (int i = 0; i < PQntuples(res); i++) {
                _cleanup_(cJSON_Deletep) cJSON *s = cJSON_Parse(PQgetvalue(res, i, 0));
                if (s)
                        schedule_row(&b, s);
        }
        dynbuf_addstr(&b, "</tbody></table>\n<p class=\"note\">Managed with <code>boxcar "
                          "schedule add|rm|pause|resume</code>. Times are UTC; each cron "
                          "expression is read on its time zone's clock.</p>");
        ui_page_end(&b);
        return ui_send_page(r->c, MHD_HTTP_OK, &b);
}
