/* A queue's charts: jobs succeeded and failed per bucket (stacked bars),
 * and wait and run times (the 95th percentile as a light bar, the median
 * as a dark one inside it), drawn on the server as inline SVG from
 * boxcar.queue_chart's buckets.  Every bucket is a <g class="bucket">
 * with its bounds and numbers as data attributes, and every bar has a
 * <title>, so the numbers are one hover (or one query) away. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "worker/db/api.h"
#include "worker/http/ui-internal.h"

#define W 600
#define H 190
#define LEFT 56
#define RIGHT 8
#define TOP 26
#define BOTTOM 22

static const char C_OK[] = "#2f9e6b", C_FAIL[] = "#d9534f", C_P95[] = "#b9d3f5",
                  C_P50[] = "#1f6feb", C_AXIS[] = "#9aa5b1", C_GRID[] = "#e6e9ed",
                  C_TEXT[] = "#5f6b76";

static void fmt_utc(char *out, size_t size, int64_t us, const char *fmt)
{
        time_t t = (time_t)(us / 1000000);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(out, size, fmt, &tm);
}

static double slot_x(size_t i, size_t n)
{
        return LEFT + (double)(W - LEFT - RIGHT) * (double)i / (double)n;
}

/* Grid lines and labels at 0, max/2 and max; the time labels under every
 * step-th bucket (every 15 minutes of the hour, 4 hours of the day). */
static void axes(struct dynbuf *b, const struct ui_chart_bucket *bk, size_t n, double max,
                 bool seconds)
{
        for (int k = 0; k <= 2; k++) {
                double v = max * k / 2, y = TOP + (H - TOP - BOTTOM) * (1 - k / 2.0);
                char label[32];
                if (k == 0)
                        snprintf(label, sizeof(label), "0");
                else if (seconds)
                        ui_fmt_duration(label, sizeof(label), v);
                else if (v == (double)(long)v)
                        snprintf(label, sizeof(label), "%ld", (long)v);
                else
                        label[0] = '\0'; /* no half jobs: the line alone */
                ui_svg_line(b, LEFT, y, W - RIGHT, y, k ? C_GRID : C_AXIS);
                ui_svg_text(b, LEFT - 6, y + 4, "end", C_TEXT, label);
        }
        size_t step = n > 12 ? 4 : 3;
        for (size_t i = 0; i < n; i += step) {
                char t[16];
                fmt_utc(t, sizeof(t), bk[i].start_us, "%H:%M");
                ui_svg_text(b, slot_x(i, n), H - 6, "start", C_TEXT, t);
        }
        ui_svg_text(b, W - RIGHT, H - 6, "end", C_TEXT, "UTC");
}

static void bucket_open(struct dynbuf *b, const struct ui_chart_bucket *k, char *span, size_t size)
{
        char from[32], to[32], hm1[8], hm2[8];
        fmt_utc(from, sizeof(from), k->start_us, "%Y-%m-%dT%H:%M:%SZ");
        fmt_utc(to, sizeof(to), k->end_us, "%Y-%m-%dT%H:%M:%SZ");
        fmt_utc(hm1, sizeof(hm1), k->start_us, "%H:%M");
        fmt_utc(hm2, sizeof(hm2), k->end_us, "%H:%M");
        snprintf(span, size, "%s–%s UTC", hm1, hm2);
        dynbuf_printf(b, "<g class=\"bucket\" data-start=\"%s\" data-end=\"%s\"", from, to);
}

void ui_chart_counts(struct dynbuf *b, const char *id, const char *label,
                     const struct ui_chart_bucket *bk, size_t n)
{
        long top = 0;
        for (size_t i = 0; i < n; i++)
                if (bk[i].succeeded + bk[i].failed > top)
                        top = bk[i].succeeded + bk[i].failed;
        /* Counts are whole: a scale of 0, 1, 2 rather than 0, 0.5, 1. */
        double max = ui_svg_nice_max(top < 2 ? 2 : (double)top);
        ui_svg_begin(b, id, "chart", W, H, label);
        axes(b, bk, n, max, false);
        static const char *const names[] = { "succeeded", "failed" };
        static const char *const fills[] = { C_OK, C_FAIL };
        ui_svg_legend(b, LEFT, 14, names, fills, 2);
        double slot = (double)(W - LEFT - RIGHT) / (double)n, ph = H - TOP - BOTTOM;
        for (size_t i = 0; i < n; i++) {
                char span[48], title[128];
                bucket_open(b, &bk[i], span, sizeof(span));
                dynbuf_printf(b, " data-succeeded=\"%ld\" data-failed=\"%ld\">", bk[i].succeeded,
                              bk[i].failed);
                double x = slot_x(i, n) + slot * 0.1, w = slot * 0.8, base = TOP + ph;
                double hs = ui_svg_scale((double)bk[i].succeeded, max, ph);
                double hf = ui_svg_scale((double)bk[i].failed, max, ph);
                snprintf(title, sizeof(title), "%s: %ld succeeded, %ld failed", span,
                         bk[i].succeeded, bk[i].failed);
                if (hs > 0)
                        ui_svg_rect(b, x, base - hs, w, hs, C_OK, title);
                if (hf > 0)
                        ui_svg_rect(b, x, base - hs - hf, w, hf, C_FAIL, title);
                if (hs + hf <= 0) /* an empty bucket still answers a hover */
                        ui_svg_rect(b, x, base - 2, w, 2, C_GRID, title);
                dynbuf_addstr(b, "</g>");
        }
        ui_svg_end(b);
}

static void pnum(char *out, size_t size, double v)
{
        if (isfinite(v))
                snprintf(out, size, "%.3f", v);
        else
                snprintf(out, size, "none");
}

void ui_chart_latency(struct dynbuf *b, const char *id, const char *label,
                      const struct ui_chart_bucket *bk, size_t n, bool run)
{
        double top = 0;
        for (size_t i = 0; i < n; i++) {
                double p95 = run ? bk[i].run_p95 : bk[i].wait_p95;
                if (isfinite(p95) && p95 > top)
                        top = p95;
        }
        double max = ui_svg_nice_max(top > 0 ? top : 1);
        ui_svg_begin(b, id, "chart", W, H, label);
        axes(b, bk, n, max, true);
        static const char *const names[] = { "median (p50)", "p95" };
        static const char *const fills[] = { C_P50, C_P95 };
        ui_svg_legend(b, LEFT, 14, names, fills, 2);
        double slot = (double)(W - LEFT - RIGHT) / (double)n, ph = H - TOP - BOTTOM;
        for (size_t i = 0; i < n; i++) {
                double p50 = run ? bk[i].run_p50 : bk[i].wait_p50;
                double p95 = run ? bk[i].run_p95 : bk[i].wait_p95;
                char span[48], title[160], a[32], z[32], s50[32], s95[32];
                bucket_open(b, &bk[i], span, sizeof(span));
                pnum(a, sizeof(a), p50);
                pnum(z, sizeof(z), p95);
                dynbuf_printf(b, " data-p50=\"%s\" data-p95=\"%s\">", a, z);
                double x = slot_x(i, n) + slot * 0.1, w = slot * 0.8, base = TOP + ph;
                if (!isfinite(p50) || !isfinite(p95)) {
                        snprintf(title, sizeof(title), "%s: no job ran", span);
                        ui_svg_rect(b, x, base - 2, w, 2, C_GRID, title);
                } else {
                        ui_fmt_duration(s50, sizeof(s50), p50);
                        ui_fmt_duration(s95, sizeof(s95), p95);
                        snprintf(title, sizeof(title), "%s: %s median %s, p95 %s", span,
                                 run ? "run" : "wait", s50, s95);
                        double h95 = ui_svg_scale(p95, max, ph), h50 = ui_svg_scale(p50, max, ph);
                        ui_svg_rect(b, x, base - h95, w, h95, C_P95, title);
                        ui_svg_rect(b, x + w * 0.25, base - h50, w * 0.5, h50, C_P50, title);
                }
                dynbuf_addstr(b, "</g>");
        }
        ui_svg_end(b);
}

static double num(const cJSON *o, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

size_t ui_chart_buckets(const struct api_json_rows *rows, struct ui_chart_bucket *out, size_t max)
{
        size_t n = 0;
        for (size_t i = 0; i < rows->n && n < max; i++) {
                const cJSON *o = rows->rows[i].json;
                double s = num(o, "start"), e = num(o, "end");
                if (!o || !isfinite(s) || !isfinite(e))
                        continue;
                double ok = num(o, "succeeded"), bad = num(o, "failed");
                out[n++] = (struct ui_chart_bucket){
                        .start_us = (int64_t)(s * 1e6 + 0.5),
                        .end_us = (int64_t)(e * 1e6 + 0.5),
                        .succeeded = isfinite(ok) ? (long)ok : 0,
                        .failed = isfinite(bad) ? (long)bad : 0,
                        .wait_p50 = num(o, "wait_p50_s"),
                        .wait_p95 = num(o, "wait_p95_s"),
                        .run_p50 = num(o, "run_p50_s"),
                        .run_p95 = num(o, "run_p95_s"),
                };
        }
        return n;
}

/* A queue's last hour in a table cell: bars of succeeded and failed, no
 * axes; the numbers in each bar's <title> and data attributes. */
void ui_chart_spark(struct dynbuf *b, const char *label, const struct ui_chart_bucket *bk,
                    size_t n)
{
        if (n == 0)
                return;
        long top = 0;
        for (size_t i = 0; i < n; i++)
                if (bk[i].succeeded + bk[i].failed > top)
                        top = bk[i].succeeded + bk[i].failed;
        double max = top > 0 ? (double)top : 1, slot = 120.0 / (double)n;
        dynbuf_addstr(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"spark\" "
                         "viewBox=\"0 0 120 24\" width=\"120\" height=\"24\" role=\"img\" "
                         "aria-label=\"");
        ui_esc(b, label);
        dynbuf_addstr(b, "\">");
        for (size_t i = 0; i < n; i++) {
                char span[48], title[128];
                bucket_open(b, &bk[i], span, sizeof(span));
                dynbuf_printf(b, " data-succeeded=\"%ld\" data-failed=\"%ld\">", bk[i].succeeded,
                              bk[i].failed);
                snprintf(title, sizeof(title), "%s: %ld succeeded, %ld failed", span,
                         bk[i].succeeded, bk[i].failed);
                double x = (double)i * slot + 1, w = slot - 2;
                double hs = ui_svg_scale((double)bk[i].succeeded, max, 22);
                double hf = ui_svg_scale((double)bk[i].failed, max, 22);
                ui_svg_rect(b, x, 23, w, 1, C_GRID, title);
                if (hs > 0)
                        ui_svg_rect(b, x, 23 - hs, w, hs, C_OK, title);
                if (hf > 0)
                        ui_svg_rect(b, x, 23 - hs - hf, w, hf, C_FAIL, title);
                dynbuf_addstr(b, "</g>");
        }
        dynbuf_addstr(b, "</svg>");
}
