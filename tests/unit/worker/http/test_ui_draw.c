/* Unit tests for the dashboard's pictures and times (worker/http/ui_time.c,
 * ui_svg.c, ui_chart.c, ui_timeline.c): timestamps parse in every form
 * PostgreSQL writes, durations and relative times read as a person would
 * say them, a chart's scale is round and its bars fit it, hostile text in
 * a chart or an id stays text, and a job's events become the phases of
 * each attempt. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "worker/http/ui-internal.h"

static void test_time_parse(void **state)
{
        (void)state;
        int64_t us;
        const int64_t base = 1764730800LL * 1000000; /* 2025-12-03T03:00:00Z */
        static const struct {
                const char *in;
                int64_t off_us;
        } ok[] = {
                { "2025-12-03T03:00:00Z", 0 },
                { "2025-12-03T03:00:00+00:00", 0 },
                { "2025-12-03 03:00:00+00", 0 },
                { "2025-12-03 03:00:00", 0 },
                { "2025-12-03T03:00:00.5+00:00", 500000 },
                { "2025-12-03T03:00:00.123456+00:00", 123456 },
                { "2025-12-03T03:00:00.1234567Z", 123456 },
                { "2025-12-03T04:30:00+01:30", 0 },
                { "2025-12-02T22:00:00-05:00", 0 },
                { "2025-12-03T04:00:00+0100", 0 },
        };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                if (!ui_time_parse(ok[i].in, &us))
                        fail_msg("%s: not parsed", ok[i].in);
                if (us != base + ok[i].off_us)
                        fail_msg("%s: %lld", ok[i].in, (long long)us);
        }
        static const char *const bad[] = { NULL,
                                           "",
                                           "2025-12-03",
                                           "2025-13-03T03:00:00Z",
                                           "2025-12-03T03:00:00.Z",
                                           "2025-12-03T03:00:00Zx",
                                           "2025-12-03T03:00:00+1",
                                           "yesterday",
                                           "2025-12-03X03:00:00Z",
                                           "<b>2025-12-03T03:00:00Z" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (ui_time_parse(bad[i], &us))
                        fail_msg("%s: parsed", bad[i] ? bad[i] : "(null)");
}

static void test_duration(void **state)
{
        (void)state;
        static const struct {
                double s;
                const char *want;
        } cases[] = {
                { 0, "0 s" },          { 0.0000004, "0 µs" }, { 0.00042, "420 µs" },
                { 0.85, "850 ms" },    { 1.23, "1.2 s" },     { 9.94, "9.9 s" },
                { 42.4, "42 s" },      { 60, "1 min" },       { 200, "3 min 20 s" },
                { 3600, "1 h" },       { 7500, "2 h 5 min" }, { 86400, "1 d" },
                { 273600, "3 d 4 h" }, { -1, "-" },           { NAN, "-" },
        };
        char out[64];
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                ui_fmt_duration(out, sizeof(out), cases[i].s);
                if (strcmp(out, cases[i].want) != 0)
                        fail_msg("%g s: %s, want %s", cases[i].s, out, cases[i].want);
        }
}

static void test_ago(void **state)
{
        (void)state;
        static const struct {
                int64_t s;
                const char *want;
        } cases[] = {
                { 0, "just now" },        { 4, "just now" },    { 42, "42 s ago" },
                { 179, "2 min ago" },     { 180, "3 min ago" }, { 7199, "1 h ago" },
                { 4 * 86400, "4 d ago" }, { -180, "in 3 min" }, { -2, "in a moment" },
        };
        char out[64];
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                ui_fmt_ago(out, sizeof(out), cases[i].s * 1000000);
                if (strcmp(out, cases[i].want) != 0)
                        fail_msg("%lld s: %s, want %s", (long long)cases[i].s, out, cases[i].want);
        }
}

static char *render(void (*f)(struct dynbuf *, const void *), const void *arg)
{
        static char out[1 << 16];
        struct dynbuf b;
        dynbuf_init(&b, sizeof(out) - 1);
        f(&b, arg);
        snprintf(out, sizeof(out), "%s", b.data ? b.data : "");
        dynbuf_done(&b);
        return out;
}

static void time_of(struct dynbuf *b, const void *ts)
{
        ui_time_html(b, ts, 1764730800LL * 1000000 + 180 * 1000000);
}

static void sid_of(struct dynbuf *b, const void *id)
{
        ui_short_id_html(b, "/jobs/", id);
}

static void test_html(void **state)
{
        (void)state;
        assert_string_equal(render(time_of, "2025-12-03T03:00:00+00:00"),
                            "<time datetime=\"2025-12-03T03:00:00+00:00\" "
                            "title=\"2025-12-03T03:00:00+00:00\">3 min ago</time>");
        /* Not a timestamp: shown as it is, escaped. */
        assert_string_equal(render(time_of, "<b>\"x\""), "&lt;b&gt;&quot;x&quot;");
        assert_string_equal(render(time_of, ""), "-");
        assert_string_equal(render(sid_of, "0c1d2e3f-aaaa-bbbb-cccc-000000000000"),
                            "<a class=\"sid\" href=\"/jobs/0c1d2e3f-aaaa-bbbb-cccc-000000000000\" "
                            "title=\"0c1d2e3f-aaaa-bbbb-cccc-000000000000\">0c1d2e3f</a>");
        assert_string_equal(
                render(sid_of, "\"><x>\"><y>"),
                "<a class=\"sid\" href=\"/jobs/%22%3E%3Cx%3E%22%3E%3Cy%3E\" "
                "title=\"&quot;&gt;&lt;x&gt;&quot;&gt;&lt;y&gt;\">&quot;&gt;&lt;x&gt;&quot;&gt;&lt;</a>");
}

static void test_scale(void **state)
{
        (void)state;
        static const struct {
                double v, want;
        } nice[] = { { 0, 1 },   { -3, 1 },    { 1, 1 },      { 1.2, 2 },     { 2, 2 },
                     { 2.1, 4 }, { 3, 4 },     { 4.5, 5 },    { 7, 10 },      { 10, 10 },
                     { 11, 20 }, { 240, 400 }, { 999, 1000 }, { 0.03, 0.04 }, { NAN, 1 } };
        for (size_t i = 0; i < sizeof(nice) / sizeof(nice[0]); i++)
                if (fabs(ui_svg_nice_max(nice[i].v) - nice[i].want) > 1e-9)
                        fail_msg("nice_max(%g) = %g, want %g", nice[i].v,
                                 ui_svg_nice_max(nice[i].v), nice[i].want);
        assert_true(ui_svg_scale(5, 10, 100) == 50);
        assert_true(ui_svg_scale(10, 10, 100) == 100);
        assert_true(ui_svg_scale(11, 10, 100) == 100); /* clamped: never out of the plot */
        assert_true(ui_svg_scale(-1, 10, 100) == 0);
        assert_true(ui_svg_scale(NAN, 10, 100) == 0);
        assert_true(ui_svg_scale(5, 0, 100) == 0);
}

static struct ui_chart_bucket bk[3];

static void counts(struct dynbuf *b, const void *label)
{
        ui_chart_counts(b, "c\"<", label, bk, 3);
}

static void latency(struct dynbuf *b, const void *label)
{
        ui_chart_latency(b, "l", label, bk, 3, true);
}

/* The total height of the rects of one fill in s. */
static double filled(const char *s, const char *fill)
{
        double sum = 0, x, y, w, h;
        char f[16];
        for (const char *p = strstr(s, "<rect "); p; p = strstr(p + 1, "<rect "))
                if (sscanf(p, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\" fill=\"%7s",
                           &x, &y, &w, &h, f) == 5 &&
                    strncmp(f, fill, 7) == 0 && y > 20) /* not the legend's swatch */
                        sum += h;
        return sum;
}

static void test_chart(void **state)
{
        (void)state;
        const int64_t t0 = 1764730800LL * 1000000, w = 300LL * 1000000;
        for (int i = 0; i < 3; i++)
                bk[i] = (struct ui_chart_bucket){
                        t0 + i * w, t0 + (i + 1) * w, 0, 0, NAN, NAN, NAN, NAN
                };
        bk[0].succeeded = 7;
        bk[0].failed = 3;
        bk[2].succeeded = 4;
        bk[2].run_p50 = 1.5;
        bk[2].run_p95 = 4;
        const char *svg = render(counts, "<script>alert(1)</script>");
        assert_null(strstr(svg, "<script>"));
        assert_non_null(strstr(svg, "aria-label=\"&lt;script&gt;alert(1)&lt;/script&gt;\""));
        assert_non_null(strstr(svg, "id=\"c&quot;&lt;\""));
        assert_null(strstr(svg, "style="));
        assert_non_null(strstr(svg, "data-start=\"2025-12-03T03:00:00Z\" "
                                    "data-end=\"2025-12-03T03:05:00Z\" data-succeeded=\"7\" "
                                    "data-failed=\"3\""));
        assert_non_null(strstr(svg, "<title>03:00–03:05 UTC: 7 succeeded, 3 failed</title>"));
        assert_non_null(strstr(svg, "data-succeeded=\"0\" data-failed=\"0\""));
        /* 10 jobs on a scale of 10: the stacked bars fill the plot's 142
         * units exactly (190 high, 26 above, 22 below). */
        assert_non_null(strstr(svg, ">10</text>")); /* the axis' top label */
        /* succeeded: 7 + 4 of 10 is 0.7 + 0.4 of 142; failed 3 of 10 */
        assert_true(fabs(filled(svg, "#2f9e6b") - 1.1 * 142) < 0.2);
        assert_true(fabs(filled(svg, "#d9534f") - 0.3 * 142) < 0.2);
        svg = render(latency, "run");
        assert_non_null(strstr(svg, "data-p50=\"1.500\" data-p95=\"4.000\""));
        assert_non_null(strstr(svg, "data-p50=\"none\" data-p95=\"none\""));
        assert_non_null(
                strstr(svg, "<title>03:10–03:15 UTC: run median 1.5 s, p95 4.0 s</title>"));
        assert_non_null(strstr(svg, ">4.0 s</text>")); /* a scale of 4 s, its middle 2 s */
        assert_non_null(strstr(svg, ">2.0 s</text>"));
}

static void test_timeline(void **state)
{
        (void)state;
        const int64_t s = 1000000;
        /* Attempt 1 lost to an infrastructure failure, attempt 2 runs to
         * its end, then a manual retry runs once more (attempts from 1). */
        const struct ui_tl_event ev[] = {
                { "claimed", 1, 10 * s },         { "started", 1, 11 * s },
                { "retried", 1, 15 * s },         { "progress", 2, 16 * s },
                { "claimed", 2, 20 * s },         { "started", 2, 22 * s },
                { "exited", 2, 30 * s },          { "finished", 2, 31 * s },
                { "retry_requested", 2, 40 * s }, { "claimed", 1, 41 * s },
                { "started", 1, 42 * s },
        };
        struct ui_tl_seg seg[32];
        size_t n = ui_timeline_build(ev, sizeof(ev) / sizeof(ev[0]), 0, 50 * s, seg, 32);
        static const struct {
                enum ui_phase p;
                int attempt;
                int from, to;
        } want[] = {
                { UI_PHASE_WAITING, 1, 0, 10 },  { UI_PHASE_SETUP, 1, 10, 11 },
                { UI_PHASE_RUNNING, 1, 11, 15 }, { UI_PHASE_WAITING, 2, 15, 20 },
                { UI_PHASE_SETUP, 2, 20, 22 },   { UI_PHASE_RUNNING, 2, 22, 30 },
                { UI_PHASE_UPLOAD, 2, 30, 31 },  { UI_PHASE_WAITING, 1, 40, 41 },
                { UI_PHASE_SETUP, 1, 41, 42 },   { UI_PHASE_RUNNING, 1, 42, 50 },
        };
        assert_int_equal(n, sizeof(want) / sizeof(want[0]));
        for (size_t i = 0; i < n; i++)
                if (seg[i].phase != want[i].p || seg[i].attempt != want[i].attempt ||
                    seg[i].from_us != want[i].from * s || seg[i].to_us != want[i].to * s)
                        fail_msg("segment %zu: %s %d %lld..%lld", i, ui_phase_name(seg[i].phase),
                                 seg[i].attempt, (long long)seg[i].from_us,
                                 (long long)seg[i].to_us);
        /* A worker's clock behind the database's never makes a segment
         * end before it starts; the output never overruns. */
        const struct ui_tl_event skew[] = { { "claimed", 1, -5 * s }, { "finished", 1, 3 * s } };
        n = ui_timeline_build(skew, 2, 0, 9 * s, seg, 32);
        assert_int_equal(n, 2);
        assert_true(seg[0].to_us == 0 && seg[1].from_us == 0 && seg[1].to_us == 3 * s);
        for (size_t i = 0; i < n; i++)
                assert_true(seg[i].from_us <= seg[i].to_us);
        assert_int_equal(ui_timeline_build(ev, sizeof(ev) / sizeof(ev[0]), 0, 50 * s, seg, 3), 3);
        /* Cancelled while queued: one wait, closed by the event. */
        const struct ui_tl_event cancel[] = { { "cancelled", 0, 7 * s } };
        n = ui_timeline_build(cancel, 1, 0, 9 * s, seg, 32);
        assert_int_equal(n, 1);
        assert_true(seg[0].phase == UI_PHASE_WAITING && seg[0].to_us == 7 * s);
}

static struct ui_tl_seg tl[4];

static void timeline_of(struct dynbuf *b, const void *n)
{
        ui_timeline_svg(b, tl, *(const size_t *)n);
}

/* Two runs an hour apart: the hour is a break of fixed width with its
 * length, and the runs share the rest of the bar by their durations. */
static void test_timeline_svg(void **state)
{
        (void)state;
        const int64_t s = 1000000;
        tl[0] = (struct ui_tl_seg){ UI_PHASE_WAITING, 1, 0, 1 * s };
        tl[1] = (struct ui_tl_seg){ UI_PHASE_RUNNING, 1, 1 * s, 4 * s };
        tl[2] = (struct ui_tl_seg){ UI_PHASE_SETUP, 1, 3604 * s, 3605 * s };
        tl[3] = (struct ui_tl_seg){ UI_PHASE_RUNNING, 1, 3605 * s, 3609 * s };
        size_t n = 4;
        const char *svg = render(timeline_of, &n);
        assert_non_null(strstr(svg, ">+1 h</text>"));
        assert_non_null(strstr(svg, ">9.0 s in all</text>"));
        assert_null(strstr(svg, "style="));
        /* 980 units less the break's 46, over 9 s: running is 7/9 of it. */
        double want = (980.0 - 46) * 7 / 9;
        double w = 0, x, y, ww, h;
        char f[16];
        for (const char *p = strstr(svg, "<rect "); p; p = strstr(p + 1, "<rect "))
                if (sscanf(p, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\" fill=\"%7s",
                           &x, &y, &ww, &h, f) == 5 &&
                    strncmp(f, "#1f6feb", 7) == 0)
                        w += ww;
        assert_true(fabs(w - want) < 0.2);
        assert_non_null(strstr(svg, "data-phase=\"setup\" data-attempt=\"1\" "
                                    "data-from-us=\"3604000000\" data-to-us=\"3605000000\""));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_time_parse), cmocka_unit_test(test_duration),
                cmocka_unit_test(test_ago),        cmocka_unit_test(test_html),
                cmocka_unit_test(test_scale),      cmocka_unit_test(test_chart),
                cmocka_unit_test(test_timeline),   cmocka_unit_test(test_timeline_svg),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
