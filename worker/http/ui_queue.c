/* One queue's page: its last hour and last day as charts (ui_chart.c) of
 * the jobs that succeeded and failed and of their wait and run times,
 * from boxcar.queue_chart. */
#include <stdio.h>
#include <string.h>

#include "worker/db/api.h"
#include "worker/http/ui-internal.h"

static void span_section(struct dynbuf *b, const char *span, const char *title,
                         const struct ui_chart_bucket *bk, size_t n)
{
        char id[32];
        long ok = 0, bad = 0;
        for (size_t i = 0; i < n; i++) {
                ok += bk[i].succeeded;
                bad += bk[i].failed;
        }
        dynbuf_printf(b,
                      "<section class=\"span\" id=\"span-%s\"><h2>%s <small>%ld succeeded, "
                      "%ld failed</small></h2><div class=\"charts\">",
                      span, title, ok, bad);
        dynbuf_addstr(b, "<figure><figcaption>Jobs finished</figcaption>");
        snprintf(id, sizeof(id), "chart-%s-count", span);
        ui_chart_counts(b, id, "jobs succeeded and failed", bk, n);
        dynbuf_addstr(b, "</figure><figure><figcaption>Wait (due to started)</figcaption>");
        snprintf(id, sizeof(id), "chart-%s-wait", span);
        ui_chart_latency(b, id, "wait time, median and p95", bk, n, false);
        dynbuf_addstr(b, "</figure><figure><figcaption>Run (started to finished)</figcaption>");
        snprintf(id, sizeof(id), "chart-%s-run", span);
        ui_chart_latency(b, id, "run time, median and p95", bk, n, true);
        dynbuf_addstr(b, "</figure></div></section>\n");
}

enum MHD_Result ui_page_queue(struct ui *ui, struct ui_req *r)
{
        const char *name = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "name");
        if (!name || !*name)
                return ui_error_page(ui, r, MHD_HTTP_BAD_REQUEST, "name: which queue?");
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(api_json_rows_done) struct api_json_rows hour = { 0 }, day = { 0 };
        PGconn *conn = ui_db(ui, &err);
        if (!conn || api_queue_chart(conn, name, "hour", &hour, &err) < 0 ||
            api_queue_chart(conn, name, "day", &day, &err) < 0)
                return ui_fail(ui, r, MHD_HTTP_INTERNAL_SERVER_ERROR, &err);
        struct ui_chart_bucket h[24], d[24];
        size_t nh = ui_chart_buckets(&hour, h, 24), nd = ui_chart_buckets(&day, d, 24);
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Queue");
        dynbuf_addstr(&b, "<p class=\"lead\">Queue <code id=\"queue-name\">");
        ui_esc(&b, name);
        dynbuf_addstr(&b, "</code> &middot; <a id=\"queue-jobs\" href=\"/jobs?queue=");
        ui_urlenc(&b, name);
        dynbuf_addstr(&b, "\">its jobs</a></p>\n");
        span_section(&b, "hour", "Last hour <small>(5-minute buckets)</small>", h, nh);
        span_section(&b, "day", "Last day <small>(1-hour buckets)</small>", d, nd);
        dynbuf_addstr(&b, "<p class=\"note\">Jobs count in the bucket they finished in; "
                          "cancelled jobs are not counted. Hover a bar for its numbers.</p>");
        ui_page_end(&b);
        return ui_send_page(r->c, MHD_HTTP_OK, &b);
}
