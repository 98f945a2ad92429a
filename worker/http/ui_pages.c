/* The overview pages: queues (boxcar.queue_overview), workers
 * (boxcar.worker_status), sessions (boxcar.session_list), webhook
 * deliveries (boxcar.webhook_list) and periodic jobs (boxcar.schedule_ls). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/db/api.h"
#include "worker/http/ui-internal.h"

static void cell(struct dynbuf *b, const char *cls, const char *text)
{
        if (cls)
                dynbuf_printf(b, "<td class=\"%s\">", cls);
        else
                dynbuf_addstr(b, "<td>");
        ui_esc(b, text);
        dynbuf_addstr(b, "</td>");
}

/* A number of seconds as the server wrote it ("12.34", "-") as "12 s",
 * the number itself in the title. */
static void seconds_cell(struct dynbuf *b, const char *cls, const char *text)
{
        char *end = NULL;
        double v = text ? strtod(text, &end) : 0;
        if (!text || end == text || *end) {
                cell(b, cls, text);
                return;
        }
        char d[48];
        ui_fmt_duration(d, sizeof(d), v);
        dynbuf_printf(b, "<td class=\"%s\" title=\"", cls);
        ui_esc(b, text);
        dynbuf_addstr(b, " s\">");
        ui_esc(b, d);
        dynbuf_addstr(b, "</td>");
}

static void time_cell(struct dynbuf *b, const char *cls, const char *ts)
{
        dynbuf_printf(b, "<td class=\"%s\">", cls);
        ui_time_html(b, ts, ui_now_us());
        dynbuf_addstr(b, "</td>");
}

/* The queue's last hour as small bars; the first UI_SPARK_QUEUES queues
 * only (one query each), the others' cells empty. */
#define UI_SPARK_QUEUES 50
static void spark_cell(struct dynbuf *b, PGconn *conn, const char *queue, size_t i)
{
        dynbuf_addstr(b, "<td class=\"spark\">");
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(api_json_rows_done) struct api_json_rows rows = { 0 };
        if (i < UI_SPARK_QUEUES && api_queue_chart(conn, queue, "hour", &rows, &err) == 0) {
                struct ui_chart_bucket bk[12];
                ui_chart_spark(b, "the last hour's jobs", bk, ui_chart_buckets(&rows, bk, 12));
        } else if (i < UI_SPARK_QUEUES) {
                dynbuf_addstr(b, "<span class=\"error\" title=\"");
                ui_esc(b, bc_error_message(&err));
                dynbuf_addstr(b, "\">?</span>");
        }
        bc_error_clear(&err);
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
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(api_queue_rows_done) struct api_queue_rows q = { 0 };
        PGconn *conn = ui_db(ui, &err);
        if (!conn || api_queue_overview(conn, &q, &err) < 0)
                return ui_fail(ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Queues");
        static const char *const cols[] = { "queue",
                                            "queued",
                                            "scheduled",
                                            "running",
                                            "oldest queued",
                                            "succeeded (1 h)",
                                            "failed (1 h)",
                                            "avg wait",
                                            "avg run",
                                            "last hour",
                                            "",
                                            NULL };
        head(&b, "queues", cols);
        for (size_t i = 0; i < q.n; i++) {
                const struct api_queue_row *o = &q.rows[i];
                dynbuf_addstr(&b, "<tr data-queue=\"");
                ui_esc(&b, o->queue);
                dynbuf_addstr(&b, "\"><td class=\"name\"><a href=\"/queue?name=");
                ui_urlenc(&b, o->queue);
                dynbuf_addstr(&b, "\">");
                ui_esc(&b, o->queue);
                dynbuf_addstr(&b, "</a></td>");
                cell(&b, "queued", o->queued);
                cell(&b, "scheduled", o->scheduled);
                cell(&b, "running", o->running);
                seconds_cell(&b, "oldest", strcmp(o->queued, "0") == 0 ? "-" : o->oldest_queued_s);
                cell(&b, "succeeded", o->succeeded_last_hour);
                cell(&b, "failed", o->failed_last_hour);
                seconds_cell(&b, "wait", o->wait_avg_s);
                seconds_cell(&b, "run", o->run_avg_s);
                spark_cell(&b, conn, o->queue, i);
                dynbuf_addstr(&b, "<td><a class=\"more\" href=\"/queue?name=");
                ui_urlenc(&b, o->queue);
                dynbuf_addstr(&b, "\">charts</a> &middot; <a class=\"more\" href=\"/jobs?queue=");
                ui_urlenc(&b, o->queue);
                dynbuf_addstr(&b, "\">jobs</a></td></tr>\n");
        }
        dynbuf_addstr(&b, "</tbody></table>\n");
        if (q.n == 0)
                dynbuf_addstr(&b, "<p>No jobs yet.</p>");
        dynbuf_addstr(&b, "<p class=\"note\">Rates are the jobs finished in the last hour; "
                          "the wait is from due to started, the run from started to finished, "
                          "averaged over them.</p>");
        ui_page_end(&b);
        return ui_send_page(r->c, MHD_HTTP_OK, &b);
}

/* The worker's queues, "a,b", shown as "a, b". */
static void queues_cell(struct dynbuf *b, const char *queues)
{
        dynbuf_addstr(b, "<td class=\"queues\">");
        for (const char *p = queues; *p;) {
                size_t n = strcspn(p, ",");
                ui_esc_n(b, p, n);
                p += n;
                if (*p) {
                        dynbuf_addstr(b, ", ");
                        p++;
                }
        }
        dynbuf_addstr(b, "</td>");
}

enum MHD_Result ui_page_workers(struct ui *ui, struct ui_req *r)
{
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(api_worker_rows_done) struct api_worker_rows w = { 0 };
        PGconn *conn = ui_db(ui, &err);
        if (!conn || api_workers(conn, &w, &err) < 0)
                return ui_fail(ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Workers");
        static const char *const cols[] = { "id",      "host",      "state",  "running", "queues",
                                            "version", "heartbeat", "leader", "",        NULL };
        head(&b, "workers", cols);
        for (size_t i = 0; i < w.n; i++) {
                const struct api_worker_row *o = &w.rows[i];
                dynbuf_addstr(&b, "<tr data-id=\"");
                ui_esc(&b, o->id);
                dynbuf_addstr(&b, "\">");
                cell(&b, "id", o->id);
                cell(&b, "host", o->host);
                cell(&b, "state", o->state);
                cell(&b, "running", o->load);
                queues_cell(&b, o->queues);
                cell(&b, "version", o->version);
                time_cell(&b, "heartbeat", o->heartbeat);
                cell(&b, "leader", o->leader ? "yes" : "");
                dynbuf_addstr(&b, "<td>");
                if (strcmp(o->state, "running") == 0 && !o->drain_requested)
                        ui_action_button(&b, ui, r, "drain", o->id, "Drain");
                else if (o->drain_requested)
                        dynbuf_addstr(&b, "drain requested");
                dynbuf_addstr(&b, "</td></tr>\n");
        }
        dynbuf_addstr(&b, "</tbody></table>\n<p class=\"note\">Drain: the worker stops "
                          "claiming, finishes its jobs and exits.</p>");
        ui_page_end(&b);
        return ui_send_page(r->c, MHD_HTTP_OK, &b);
}

/* A page of the sessions shows this many: beyond, the command line lists
 * them all (the page's size is capped). */
#define UI_SESSION_ROWS_SHOWN 1000

static void session_row(struct dynbuf *b, struct ui *ui, struct ui_req *r,
                        const struct api_session_row *o)
{
        /* The action's id: SCOPE/ID (neither has a '/'; a scope has at
         * most 128 characters, an id 120). */
        char key[API_SCOPE_MAX + 128];
        snprintf(key, sizeof(key), "%s/%s", o->scope, o->id);
        bool live = strcmp(o->state, "live") == 0, stale = strcmp(o->state, "stale") == 0;
        dynbuf_addstr(b, "<tr data-id=\"");
        ui_esc(b, key);
        dynbuf_addstr(b, "\"><td class=\"scope\"><a href=\"/sessions?scope=");
        ui_urlenc(b, o->scope);
        dynbuf_addstr(b, "\">");
        ui_esc(b, o->scope);
        dynbuf_addstr(b, "</a></td>");
        cell(b, "id", o->id);
        cell(b, "state", live && o->end_requested ? "ending" : o->state);
        dynbuf_addstr(b, "<td class=\"holder\">");
        ui_esc(b, o->holder);
        if (*o->holder && !o->holder_alive)
                dynbuf_addstr(b, " (gone)");
        dynbuf_addstr(b, "</td>");
        cell(b, "jobs", o->jobs);
        time_cell(b, "last", o->last_job_utc);
        cell(b, "queued", o->queued);
        dynbuf_addstr(b, "<td>");
        if ((live && !o->end_requested) || stale)
                ui_action_button(b, ui, r, "end-session", key, "End");
        dynbuf_addstr(b, "</td></tr>\n");
}

enum MHD_Result ui_page_sessions(struct ui *ui, struct ui_req *r)
{
        const char *scope = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "scope");
        if (scope && !*scope)
                scope = NULL;
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(api_session_rows_done) struct api_session_rows s = { 0 };
        PGconn *conn = ui_db(ui, &err);
        if (!conn || api_sessions(conn, scope, &s, &err) < 0)
                return ui_fail(ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Sessions");
        if (scope) {
                dynbuf_addstr(&b, "<p>Scope <strong>");
                ui_esc(&b, scope);
                dynbuf_addstr(&b, "</strong> &middot; <a href=\"/sessions\">all scopes</a></p>");
        }
        static const char *const cols[] = { "scope",    "session", "state", "holder", "jobs",
                                            "last job", "queued",  "",      NULL };
        head(&b, "sessions", cols);
        size_t shown = s.n < UI_SESSION_ROWS_SHOWN ? s.n : UI_SESSION_ROWS_SHOWN;
        for (size_t i = 0; i < shown; i++)
                session_row(&b, ui, r, &s.rows[i]);
        dynbuf_addstr(&b, "</tbody></table>\n");
        if (s.n == 0)
                dynbuf_addstr(&b, "<p>No sessions.</p>");
        if (s.n > shown)
                dynbuf_printf(&b, "<p>%zu more: <code>boxcar sessions</code> lists them all.</p>",
                              s.n - shown);
        dynbuf_addstr(&b, "<p class=\"note\">Stale: its worker stopped renewing its hold. "
                          "End: a live session is checkpointed and stopped by its worker; a "
                          "later job of the session starts it again from its last checkpoint. "
                          "Times are UTC.</p>");
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
        dynbuf_addstr(b, "<td class=\"id\">");
        ui_short_id_html(b, NULL, id);
        dynbuf_addstr(b, "</td><td>");
        ui_short_id_html(b, "/jobs/", ui_jstr(d, "job_id", ""));
        dynbuf_addstr(b, "</td>");
        cell(b, "type", ui_jstr(d, "type", ""));
        cell(b, "status", status);
        cell(b, "attempts", n);
        cell(b, "last", ls);
        cell(b, "error", ui_jstr(d, "last_error", ""));
        time_cell(b, "created", ui_jstr(d, "created_at", ""));
        dynbuf_addstr(b, "<td>");
        if (strcmp(status, "delivered") != 0)
                ui_action_button(b, ui, r, "redrive", id, "Redrive");
        dynbuf_addstr(b, "</td></tr>\n");
}

enum MHD_Result ui_page_webhooks(struct ui *ui, struct ui_req *r)
{
        const char *f = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "failed");
        bool failed = f && strcmp(f, "1") == 0;
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(api_json_rows_done) struct api_json_rows ls = { 0 };
        PGconn *conn = ui_db(ui, &err);
        if (!conn || api_webhook_list(conn, failed, 200, &ls, &err) < 0)
                return ui_fail(ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Webhooks");
        dynbuf_addstr(&b, failed ? "<p><a href=\"/webhooks\">All deliveries</a> &middot; "
                                   "<strong>failed only</strong></p>"
                                 : "<p><strong>All deliveries</strong> &middot; "
                                   "<a href=\"/webhooks?failed=1\">failed only</a></p>");
        static const char *const cols[] = { "delivery", "job",       "type",       "status",
                                            "attempts", "last HTTP", "last error", "created",
                                            "",         NULL };
        head(&b, "webhooks", cols);
        for (size_t i = 0; i < ls.n; i++)
                if (ls.rows[i].json)
                        webhook_row(&b, ui, r, ls.rows[i].json);
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
        time_cell(b, "next", cJSON_IsTrue(en) ? ui_jstr(s, "next_run_at", "") : "");
        time_cell(b, "last", ui_jstr(s, "last_run_at", ""));
        const char *job = ui_jstr(s, "last_job_id", "");
        dynbuf_addstr(b, "<td class=\"job\">");
        if (*job) {
                ui_short_id_html(b, "/jobs/", job);
        }
        dynbuf_addstr(b, "</td>");
        cell(b, "error", ui_jstr(s, "last_error", ""));
        dynbuf_addstr(b, "</tr>\n");
}

enum MHD_Result ui_page_schedules(struct ui *ui, struct ui_req *r)
{
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(api_json_rows_done) struct api_json_rows ls = { 0 };
        PGconn *conn = ui_db(ui, &err);
        if (!conn || api_schedule_ls(conn, &ls, &err) < 0)
                return ui_fail(ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Schedules");
        static const char *const cols[] = { "name",       "cron",     "time zone", "queue",
                                            "state",      "next run", "last run",  "last job",
                                            "last error", NULL };
        head(&b, "schedules", cols);
        for (size_t i = 0; i < ls.n; i++)
                if (ls.rows[i].json)
                        schedule_row(&b, ls.rows[i].json);
        dynbuf_addstr(&b, "</tbody></table>\n<p class=\"note\">Managed with <code>boxcar "
                          "schedule add|rm|pause|resume</code>. Times are UTC; each cron "
                          "expression is read on its time zone's clock.</p>");
        ui_page_end(&b);
        return ui_send_page(r->c, MHD_HTTP_OK, &b);
}
