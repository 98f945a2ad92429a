/* The job list (boxcar.jobs_list, a page at a time), a job's own page
 * (boxcar.job_json, boxcar.job_events_json) and its live log as JSON for
 * the page's script (boxcar.job_logs_after). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/db/api.h"
#include "worker/http/ui-internal.h"

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

static const char *arg(struct ui_req *r, const char *name)
{
        const char *v = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, name);
        return v && *v ? v : NULL;
}

static void filter_form(struct dynbuf *b, const char *queue, const char *status, const char *since)
{
        static const char *const statuses[] = { "queued", "running",   "succeeded",
                                                "failed", "cancelled", NULL };
        dynbuf_addstr(b, "<form method=\"get\" action=\"/jobs\" id=\"filters\"><label>Queue "
                         "<input name=\"queue\" value=\"");
        ui_esc(b, queue);
        dynbuf_addstr(b, "\"></label> <label>Status <select name=\"status\">"
                         "<option value=\"\">any</option>");
        for (const char *const *s = statuses; *s; s++)
                dynbuf_printf(b, "<option%s>%s</option>",
                              status && strcmp(status, *s) == 0 ? " selected" : "", *s);
        dynbuf_addstr(b, "</select></label> <label>Since <input name=\"since\" "
                         "placeholder=\"2026-01-02 03:04:05+00\" value=\"");
        ui_esc(b, since);
        dynbuf_addstr(b, "\"></label> <button>Filter</button></form>\n");
}

static void job_row(struct dynbuf *b, const cJSON *j, int64_t now)
{
        const char *id = ui_jstr(j, "id", ""), *status = ui_jstr(j, "status", "");
        const cJSON *att = cJSON_GetObjectItemCaseSensitive(j, "attempts");
        const cJSON *max = cJSON_GetObjectItemCaseSensitive(j, "max_attempts");
        const cJSON *error = cJSON_GetObjectItemCaseSensitive(j, "error");
        const char *started = ui_jstr(j, "started_at", NULL);
        const char *finished = ui_jstr(j, "finished_at", NULL);
        dynbuf_addstr(b, "<tr data-id=\"");
        ui_esc(b, id);
        /* The checkbox belongs to the bulk form above the table (form=),
         * as forms cannot nest in a table. */
        dynbuf_addstr(b, "\"><td class=\"pick\"><input type=\"checkbox\" form=\"bulk\" "
                         "name=\"id\" aria-label=\"select\" value=\"");
        ui_esc(b, id);
        dynbuf_addstr(b, "\"></td><td class=\"id\">");
        ui_short_id_html(b, "/jobs/", id);
        dynbuf_addstr(b, "</td><td class=\"status\"><span class=\"badge st-");
        ui_esc(b, status);
        dynbuf_addstr(b, "\">");
        ui_esc(b, status);
        dynbuf_addstr(b, "</span></td><td class=\"queue\">");
        ui_esc(b, ui_jstr(j, "queue", ""));
        dynbuf_printf(b, "</td><td class=\"attempts\">%d/%d</td><td class=\"created\">",
                      cJSON_IsNumber(att) ? att->valueint : 0,
                      cJSON_IsNumber(max) ? max->valueint : 0);
        ui_time_html(b, ui_jstr(j, "created_at", ""), now);
        dynbuf_addstr(b, "</td><td class=\"took\">");
        if (started && finished)
                ui_duration_html(b, started, finished);
        else if (started)
                dynbuf_addstr(b, "running");
        dynbuf_addstr(b, "</td><td class=\"error\">");
        ui_esc(b, ui_jstr(error, "code", ""));
        dynbuf_addstr(b, "</td></tr>\n");
}

/* Retry or cancel the ticked jobs, or all matching the filter: one form,
 * its checkboxes in the table (form="bulk"). */
static void bulk_form(struct dynbuf *b, const struct ui *ui, const struct ui_req *r,
                      const struct api_jobs_filter *f)
{
        static const char *const keep[] = { "queue", "status", "since" };
        const char *vals[] = { f->queue, f->status, f->since };
        dynbuf_addstr(b, "<form method=\"post\" action=\"/actions/bulk\" id=\"bulk\" "
                         "class=\"bulk\"><input type=\"hidden\" name=\"csrf\" value=\"");
        ui_esc(b, r->csrf);
        dynbuf_addstr(b, "\">");
        for (size_t i = 0; i < 3; i++) {
                dynbuf_printf(b, "<input type=\"hidden\" name=\"%s\" value=\"", keep[i]);
                ui_esc(b, vals[i]);
                dynbuf_addstr(b, "\">");
        }
        const char *off = ui->actions ? ""
                                      : " disabled title=\"read-only: start boxcar ui with "
                                        "--actions\"";
        dynbuf_printf(b,
                      "<span class=\"note\">With the ticked jobs, or</span> <label><input "
                      "type=\"checkbox\" name=\"all\" value=\"1\" id=\"bulk-all\"> all "
                      "matching the filter (the newest %d)</label> "
                      "<button name=\"op\" value=\"retry\" class=\"action\" "
                      "data-action=\"bulk-retry\"%s>Retry selected</button> "
                      "<button name=\"op\" value=\"cancel\" class=\"action\" "
                      "data-action=\"bulk-cancel\"%s>Cancel selected</button></form>\n",
                      UI_BULK_MAX, off, off);
}

static void next_link(struct dynbuf *b, struct ui_req *r, const char *limit, const char *cursor)
{
        static const char *const keep[] = { "queue", "status", "since", NULL };
        dynbuf_addstr(b, "<p><a id=\"next\" href=\"/jobs?");
        for (const char *const *k = keep; *k; k++) {
                const char *v = arg(r, *k);
                if (v) {
                        dynbuf_printf(b, "%s=", *k);
                        ui_urlenc(b, v);
                        dynbuf_addstr(b, "&amp;");
                }
        }
        dynbuf_addstr(b, "limit=");
        ui_urlenc(b, limit);
        dynbuf_addstr(b, "&amp;after=");
        ui_urlenc(b, cursor);
        dynbuf_addstr(b, "\">Next page</a></p>\n");
}

enum MHD_Result ui_page_jobs(struct ui *ui, struct ui_req *r)
{
        const char *limit = arg(r, "limit") ? arg(r, "limit") : "50";
        char *end = NULL;
        long n = strtol(limit, &end, 10);
        if (end == limit || *end || n < 1 || n > 1000)
                return ui_error_page(ui, r, MHD_HTTP_BAD_REQUEST, "limit: 1 to 1000");
        const struct api_jobs_filter f = { arg(r, "queue"), arg(r, "status"), arg(r, "since"),
                                           arg(r, "after") };
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(api_jobs_page_done) struct api_jobs_page page = { 0 };
        PGconn *conn = ui_db(ui, &err);
        if (!conn || api_jobs_list(conn, &f, n, &page, &err) < 0)
                return ui_fail(ui, r, MHD_HTTP_BAD_REQUEST, &err);
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Jobs");
        filter_form(&b, f.queue, f.status, f.since);
        bulk_form(&b, ui, r, &f);
        dynbuf_addstr(&b, "<table id=\"jobs\"><thead><tr><th></th><th>id</th><th>status</th>"
                          "<th>queue</th><th>attempts</th><th>created</th><th>took</th>"
                          "<th>error</th></tr></thead><tbody>\n");
        int64_t now = ui_now_us();
        for (size_t i = 0; i < page.jobs.n; i++)
                if (page.jobs.rows[i].json)
                        job_row(&b, page.jobs.rows[i].json, now);
        dynbuf_addstr(&b, "</tbody></table>\n");
        if (page.jobs.n == 0)
                dynbuf_addstr(&b, "<p>No jobs match.</p>");
        if (page.next_cursor)
                next_link(&b, r, limit, page.next_cursor);
        ui_page_end(&b);
        return ui_send_page(r->c, MHD_HTTP_OK, &b);
}

/* ---- one job ---- */

static void field(struct dynbuf *b, const char *name, const char *id, const char *value)
{
        dynbuf_printf(b, "<dt>%s</dt><dd%s%s%s>", name, id ? " id=\"" : "", id ? id : "",
                      id ? "\"" : "");
        ui_esc(b, value ? value : "-");
        dynbuf_addstr(b, "</dd>");
}

static void json_section(struct dynbuf *b, const char *title, const char *id, const cJSON *v)
{
        if (!v || cJSON_IsNull(v))
                return;
        _cleanup_free_ char *text = cJSON_PrintUnformatted(v);
        /* The error is open; the spec and result are a click away. */
        bool open = strcmp(id, "error") == 0;
        dynbuf_printf(b, "<section id=\"%s\"><details%s><summary><h2>%s</h2></summary>", id,
                      open ? " open" : "", title);
        ui_json_block(b, text);
        dynbuf_addstr(b, "</details></section>\n");
}

static void artifact(struct dynbuf *b, const cJSON *result)
{
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(result, "artifact");
        if (!cJSON_IsObject(a))
                return;
        const char *url = ui_jstr(a, "url", NULL);
        dynbuf_addstr(b, "<section><h2>Artifact</h2><p>storage <code>");
        ui_esc(b, ui_jstr(a, "storage", "?"));
        dynbuf_addstr(b, "</code>, version <code>");
        ui_esc(b, ui_jstr(a, "sha256", "?"));
        dynbuf_addstr(b, "</code>");
        /* Only a web link: never javascript: or data: from a hostile result. */
        if (url && (strncmp(url, "https://", 8) == 0 || strncmp(url, "http://", 7) == 0)) {
                dynbuf_addstr(b,
                              " &middot; <a id=\"artifact\" rel=\"noreferrer noopener\" href=\"");
                ui_esc(b, url);
                dynbuf_addstr(b, "\">download (presigned link; it expires)</a>");
        }
        dynbuf_addstr(b, "</p></section>\n");
}

static void events(struct dynbuf *b, const struct api_json_rows *ev)
{
        int64_t now = ui_now_us();
        dynbuf_printf(b,
                      "<section><details id=\"events-details\"><summary><h2>Events <small>(%zu)"
                      "</small></h2></summary><table id=\"events\"><thead><tr><th>at</th>"
                      "<th>event</th><th>worker</th><th>attempt</th><th>details</th></tr>"
                      "</thead><tbody>\n",
                      ev->n);
        for (size_t i = 0; i < ev->n; i++) {
                const cJSON *e = ev->rows[i].json;
                const cJSON *att = cJSON_GetObjectItemCaseSensitive(e, "attempt");
                const cJSON *det = cJSON_GetObjectItemCaseSensitive(e, "details");
                _cleanup_free_ char *d = det && !cJSON_IsNull(det) ? cJSON_PrintUnformatted(det)
                                                                   : NULL;
                dynbuf_addstr(b, "<tr><td>");
                ui_time_html(b, ui_jstr(e, "at", ""), now);
                dynbuf_addstr(b, "</td><td class=\"kind\">");
                ui_esc(b, ui_jstr(e, "kind", ""));
                dynbuf_addstr(b, "</td><td>");
                ui_esc(b, ui_jstr(e, "worker_id", ""));
                dynbuf_addstr(b, "</td><td>");
                if (cJSON_IsNumber(att))
                        dynbuf_printf(b, "%d", att->valueint);
                dynbuf_addstr(b, "</td><td><code>");
                if (d)
                        ui_esc_n(b, d, strlen(d) > 4096 ? 4096 : strlen(d));
                dynbuf_addstr(b, "</code></td></tr>\n");
        }
        dynbuf_addstr(b, "</tbody></table></details></section>\n");
}

static void time_field(struct dynbuf *b, const char *name, const char *ts, int64_t now)
{
        dynbuf_printf(b, "<dt>%s</dt><dd>", name);
        ui_time_html(b, ts, now);
        dynbuf_addstr(b, "</dd>");
}

/* The job's life as one bar (ui_timeline.c), from its events. */
static void timeline(struct dynbuf *b, const cJSON *j, const struct api_json_rows *ev)
{
        int64_t created, now = ui_now_us(), end = now;
        if (!ui_time_parse(ui_jstr(j, "created_at", NULL), &created))
                return;
        const char *status = ui_jstr(j, "status", "");
        bool final = strcmp(status, "succeeded") == 0 || strcmp(status, "failed") == 0 ||
                     strcmp(status, "cancelled") == 0;
        struct ui_tl_event *e = calloc(ev->n ? ev->n : 1, sizeof(*e));
        struct ui_tl_seg *seg = calloc(2 * ev->n + 2, sizeof(*seg));
        size_t n = 0;
        for (size_t i = 0; e && i < ev->n; i++) {
                const cJSON *x = ev->rows[i].json;
                const cJSON *att = cJSON_GetObjectItemCaseSensitive(x, "attempt");
                int64_t at;
                if (!ui_time_parse(ui_jstr(x, "at", NULL), &at))
                        continue;
                e[n++] = (struct ui_tl_event){ ui_jstr(x, "kind", ""),
                                               cJSON_IsNumber(att) ? att->valueint : 0, at };
                if (final)
                        end = at; /* a final job's bar ends with its last event */
        }
        int64_t fin;
        if (final && ui_time_parse(ui_jstr(j, "finished_at", NULL), &fin))
                end = fin;
        if (e && seg) {
                size_t ns = ui_timeline_build(e, n, created, end, seg, 2 * ev->n + 2);
                dynbuf_addstr(b, "<section id=\"life\"><h2>Timeline</h2>");
                ui_timeline_svg(b, seg, ns);
                dynbuf_addstr(b, "</section>\n");
        }
        free(e);
        free(seg);
}

static void summary(struct dynbuf *b, struct ui *ui, struct ui_req *r, const cJSON *j)
{
        const char *id = ui_jstr(j, "id", ""), *status = ui_jstr(j, "status", "");
        const cJSON *att = cJSON_GetObjectItemCaseSensitive(j, "attempts");
        const cJSON *max = cJSON_GetObjectItemCaseSensitive(j, "max_attempts");
        const cJSON *pri = cJSON_GetObjectItemCaseSensitive(j, "priority");
        char attempts[64], priority[16];
        int64_t now = ui_now_us();
        snprintf(attempts, sizeof(attempts), "%d of %d", cJSON_IsNumber(att) ? att->valueint : 0,
                 cJSON_IsNumber(max) ? max->valueint : 0);
        snprintf(priority, sizeof(priority), "%d", cJSON_IsNumber(pri) ? pri->valueint : 0);
        dynbuf_addstr(b, "<dl class=\"job\">");
        field(b, "id", "job-id", id);
        field(b, "queue", "queue", ui_jstr(j, "queue", NULL));
        dynbuf_addstr(b, "<dt>status</dt><dd id=\"status\"><span class=\"badge st-");
        ui_esc(b, status);
        dynbuf_addstr(b, "\">");
        ui_esc(b, status);
        dynbuf_addstr(b, "</span></dd>");
        field(b, "attempts", "attempts", attempts);
        field(b, "priority", NULL, priority);
        field(b, "worker", NULL, ui_jstr(j, "worker_id", NULL));
        time_field(b, "created", ui_jstr(j, "created_at", NULL), now);
        time_field(b, "due", ui_jstr(j, "run_at", NULL), now);
        time_field(b, "started", ui_jstr(j, "started_at", NULL), now);
        time_field(b, "finished", ui_jstr(j, "finished_at", NULL), now);
        if (ui_jstr(j, "started_at", NULL)) {
                dynbuf_addstr(b, "<dt>waited</dt><dd id=\"waited\">");
                ui_duration_html(b, ui_jstr(j, "run_at", NULL), ui_jstr(j, "started_at", NULL));
                dynbuf_addstr(b, "</dd>");
        }
        if (ui_jstr(j, "finished_at", NULL) && ui_jstr(j, "started_at", NULL)) {
                dynbuf_addstr(b, "<dt>ran</dt><dd id=\"ran\">");
                ui_duration_html(b, ui_jstr(j, "started_at", NULL),
                                 ui_jstr(j, "finished_at", NULL));
                dynbuf_addstr(b, "</dd>");
        }
        dynbuf_addstr(b, "</dl>\n<p class=\"actions\">");
        if (strcmp(status, "queued") == 0 || strcmp(status, "running") == 0)
                ui_action_button(b, ui, r, "cancel", id, "Cancel");
        if (strcmp(status, "failed") == 0 || strcmp(status, "cancelled") == 0)
                ui_action_button(b, ui, r, "retry", id, "Retry");
        dynbuf_addstr(b, "</p>\n");
}

enum MHD_Result ui_page_job(struct ui *ui, struct ui_req *r, const char *id)
{
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(api_json_rows_done) struct api_json_rows job = { 0 }, ev = { 0 };
        PGconn *conn = ui_db(ui, &err);
        int found = conn ? api_job(conn, id, &job, &err) : -1;
        if (found < 0)
                return ui_fail(ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
        if (found == 0)
                return ui_error_page(ui, r, MHD_HTTP_NOT_FOUND, "no such job");
        if (api_job_events(conn, id, &ev, &err) < 0)
                return ui_fail(ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
        const cJSON *j = job.rows[0].json;
        if (!j)
                return ui_error_page(ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR, "unreadable job");
        const cJSON *result = cJSON_GetObjectItemCaseSensitive(j, "result");
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Job");
        summary(&b, ui, r, j);
        timeline(&b, j, &ev);
        json_section(&b, "Error", "error", cJSON_GetObjectItemCaseSensitive(j, "error"));
        artifact(&b, result);
        dynbuf_addstr(&b, "<section><h2>Log</h2><pre id=\"log\" data-job=\"");
        ui_esc(&b, id);
        dynbuf_addstr(&b, "\" data-status=\"");
        ui_esc(&b, ui_jstr(j, "status", ""));
        dynbuf_addstr(&b, "\"></pre></section>\n");
        events(&b, &ev);
        json_section(&b, "Spec", "spec", cJSON_GetObjectItemCaseSensitive(j, "spec"));
        json_section(&b, "Result", "result", result);
        ui_page_end(&b);
        return ui_send_page(r->c, MHD_HTTP_OK, &b);
}

/* ---- the live log ---- */

static cJSON *chunk(struct api_log_chunk *k)
{
        /* cJSON strings end at a NUL: shown as U+FFFD's stand-in '?'. */
        for (size_t i = 0; i < k->len; i++)
                if (k->data[i] == '\0')
                        k->data[i] = '?';
        char *text = malloc(k->len + 1);
        if (text) {
                memcpy(text, k->data, k->len);
                text[k->len] = '\0';
        }
        cJSON *c = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "attempt", k->attempt);
        cJSON_AddNumberToObject(c, "stream", k->stream);
        cJSON_AddStringToObject(c, "text", text ? text : "");
        free(text);
        return c;
}

/* A cursor member of the query: an int in decimal, else false. */
static bool int_arg(struct ui_req *r, const char *name, int *ret)
{
        const char *v = arg(r, name);
        if (!v) {
                *ret = 0;
                return true;
        }
        char *end = NULL;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (end == v || *end || errno || n < INT_MIN || n > INT_MAX)
                return false;
        *ret = (int)n;
        return true;
}

enum MHD_Result ui_api_log(struct ui *ui, struct ui_req *r, const char *id)
{
        int attempt = 0, seq = 0;
        struct bc_error err = BC_ERROR_INIT;
        struct api_job_state st = { .status = "" };
        _cleanup_(api_log_chunks_done) struct api_log_chunks log = { 0 };
        PGconn *conn = NULL;
        int found = -1;
        if (int_arg(r, "attempt", &attempt) && int_arg(r, "seq", &seq))
                conn = ui_db(ui, &err);
        if (conn)
                found = api_job_state(conn, id, &st, &err);
        if (found < 0 || api_job_logs_after(conn, id, attempt, seq, &log, &err) < 0) {
                bc_error_clear(&err);
                return ui_send_text(r->c, MHD_HTTP_BAD_REQUEST, "cannot read the log\n");
        }
        if (found == 0)
                return ui_send_text(r->c, MHD_HTTP_NOT_FOUND, "no such job\n");
        _cleanup_(cJSON_Deletep) cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "status", st.status);
        cJSON *chunks = cJSON_AddArrayToObject(doc, "chunks");
        for (size_t i = 0; i < log.n; i++) {
                cJSON *c = chunk(&log.rows[i]);
                if (c)
                        cJSON_AddItemToArray(chunks, c);
        }
        cJSON_AddNumberToObject(doc, "attempt", log.n ? log.rows[log.n - 1].attempt : attempt);
        cJSON_AddNumberToObject(doc, "seq", log.n ? log.rows[log.n - 1].seq : seq);
        cJSON_AddBoolToObject(doc, "more", log.n == API_LOG_CHUNKS_MAX);
        char *text = cJSON_PrintUnformatted(doc);
        if (!text)
                return MHD_NO;
        return ui_send(r->c, MHD_HTTP_OK, "application/json", text, strlen(text),
                       MHD_RESPMEM_MUST_FREE, NULL);
}
