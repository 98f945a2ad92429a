/* A job's life as one bar: for each attempt, waiting (queued, due or
 * not: from creation, a retry or a requeue to its claim), setup (claimed
 * to the command's start: the sandbox, volumes, image), running (started
 * to exited) and upload (exited to finished: output, artifact, the
 * report).  The phases come from the events boxcar.job_events_json lists
 * (its stored rows and the row's own: attempt_events, 'finished'): an
 * event that starts a phase ends the one before.  A phase still open is
 * drawn up to now, or to the job's end when it has ended. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "worker/http/ui-internal.h"

static const char *const phase_names[] = { "waiting", "setup", "running", "upload" };
static const char *const phase_fills[] = { "#c4ccd6", "#f0b429", "#1f6feb", "#8e6bd6" };

const char *ui_phase_name(enum ui_phase p)
{
        return p >= UI_PHASE_WAITING && p <= UI_PHASE_UPLOAD ? phase_names[p] : "?";
}

struct builder {
        struct ui_tl_seg *out;
        size_t max, n;
        bool open;
        enum ui_phase phase;
        int attempt;
        int64_t from;
};

static void close_at(struct builder *t, int64_t at)
{
        if (!t->open)
                return;
        if (at < t->from) /* a worker's clock a little behind the database's */
                at = t->from;
        if (t->n < t->max)
                t->out[t->n++] = (struct ui_tl_seg){ t->phase, t->attempt, t->from, at };
        t->open = false;
}

static void open_at(struct builder *t, enum ui_phase p, int attempt, int64_t at)
{
        /* Time never runs back along the bar, whatever the clocks say. */
        if (t->open && at < t->from)
                at = t->from;
        else if (!t->open && t->n && at < t->out[t->n - 1].to_us)
                at = t->out[t->n - 1].to_us;
        close_at(t, at);
        t->open = true;
        t->phase = p;
        t->attempt = attempt;
        t->from = at;
}

size_t ui_timeline_build(const struct ui_tl_event *ev, size_t n, int64_t created_us,
                         int64_t end_us, struct ui_tl_seg *out, size_t max)
{
        struct builder t = { .out = out, .max = max };
        open_at(&t, UI_PHASE_WAITING, 1, created_us);
        int next = 1; /* the attempt a wait is for */
        for (size_t i = 0; i < n; i++) {
                const char *k = ev[i].kind;
                int64_t at = ev[i].at_us;
                if (strcmp(k, "claimed") == 0) {
                        /* The wait was for this attempt. */
                        if (t.open && t.phase == UI_PHASE_WAITING)
                                t.attempt = ev[i].attempt;
                        open_at(&t, UI_PHASE_SETUP, ev[i].attempt, at);
                        next = ev[i].attempt + 1;
                } else if (strcmp(k, "started") == 0 && t.open && t.phase == UI_PHASE_SETUP) {
                        open_at(&t, UI_PHASE_RUNNING, t.attempt, at);
                } else if (strcmp(k, "exited") == 0 && t.open && t.phase == UI_PHASE_RUNNING) {
                        open_at(&t, UI_PHASE_UPLOAD, t.attempt, at);
                } else if (strcmp(k, "retried") == 0 || strcmp(k, "released") == 0 ||
                           strcmp(k, "rescued") == 0) {
                        /* Back in the queue for another attempt. */
                        open_at(&t, UI_PHASE_WAITING, next, at);
                } else if (strcmp(k, "retry_requested") == 0) {
                        /* A manual retry counts attempts from 1 again. */
                        next = 1;
                        open_at(&t, UI_PHASE_WAITING, next, at);
                } else if (strcmp(k, "finished") == 0 || strcmp(k, "cancelled") == 0 ||
                           strcmp(k, "dependency_failed") == 0) {
                        close_at(&t, at);
                }
        }
        close_at(&t, end_us);
        return t.n;
}

/* Each segment as a <rect> with its phase, attempt and bounds (epoch
 * microseconds) as data attributes and a <title>; a tick and a label
 * where each attempt's setup begins.  The time between a run's end and a
 * manual retry (the job sat finished) is no part of its life: it is
 * drawn as a fixed-width break with its length, so a retry an hour later
 * does not squeeze both runs into slivers. */
#define TL_X 10.0
#define TL_W 980.0
#define TL_GAP 46.0

void ui_timeline_svg(struct dynbuf *b, const struct ui_tl_seg *s, size_t n)
{
        if (n == 0)
                return;
        double busy = 0;
        size_t gaps = 0;
        for (size_t i = 0; i < n; i++) {
                busy += (double)(s[i].to_us - s[i].from_us);
                gaps += i > 0 && s[i].from_us > s[i - 1].to_us;
        }
        double room = TL_W - (double)gaps * TL_GAP;
        double scale = busy > 0 ? room / busy : 0;
        ui_svg_begin(b, "timeline", "timeline", 1000, 74, "the job's timeline");
        double x = TL_X;
        for (size_t i = 0; i < n; i++) {
                if (i > 0 && s[i].from_us > s[i - 1].to_us) {
                        char idle[48], label[64];
                        ui_fmt_duration(idle, sizeof(idle),
                                        (double)(s[i].from_us - s[i - 1].to_us) / 1e6);
                        snprintf(label, sizeof(label), "+%s", idle);
                        ui_svg_line(b, x + 6, 35, x + TL_GAP - 6, 35, "#9aa5b1");
                        ui_svg_text(b, x + TL_GAP / 2, 66, "middle", "#5f6b76", label);
                        x += TL_GAP;
                }
                double w = (double)(s[i].to_us - s[i].from_us) * scale;
                char d[48], title[128];
                ui_fmt_duration(d, sizeof(d), (double)(s[i].to_us - s[i].from_us) / 1e6);
                snprintf(title, sizeof(title), "attempt %d: %s %s", s[i].attempt,
                         ui_phase_name(s[i].phase), d);
                dynbuf_printf(b,
                              "<g class=\"seg\" data-phase=\"%s\" data-attempt=\"%d\" "
                              "data-from-us=\"%lld\" data-to-us=\"%lld\">",
                              ui_phase_name(s[i].phase), s[i].attempt, (long long)s[i].from_us,
                              (long long)s[i].to_us);
                /* An instant is still shown, over its neighbour. */
                ui_svg_rect(b, x, 22, w < 2 ? 2 : w, 26, phase_fills[s[i].phase], title);
                dynbuf_addstr(b, "</g>");
                if (s[i].phase == UI_PHASE_SETUP) {
                        char a[32];
                        snprintf(a, sizeof(a), "attempt %d", s[i].attempt);
                        ui_svg_line(b, x, 16, x, 52, "#1d232a");
                        bool right = x > TL_X + TL_W - 80; /* keep the label inside */
                        ui_svg_text(b, right ? x - 3 : x + 3, 14, right ? "end" : "start",
                                    "#1d232a", a);
                }
                x += w;
        }
        char total[48], label[64];
        ui_fmt_duration(total, sizeof(total), busy / 1e6);
        snprintf(label, sizeof(label), "%s in all", total);
        ui_svg_text(b, TL_X, 66, "start", "#5f6b76", "created");
        ui_svg_text(b, TL_X + TL_W, 66, "end", "#5f6b76", label);
        ui_svg_end(b);
        /* The legend, with each phase's total time. */
        double sum[4] = { 0 };
        for (size_t i = 0; i < n; i++)
                sum[s[i].phase] += (double)(s[i].to_us - s[i].from_us) / 1e6;
        dynbuf_addstr(b, "<ul class=\"legend\" id=\"phases\">");
        for (int p = 0; p < 4; p++) {
                char d[48];
                ui_fmt_duration(d, sizeof(d), sum[p]);
                dynbuf_printf(b, "<li class=\"ph-%s\" data-phase=\"%s\">%s <b>%s</b></li>",
                              phase_names[p], phase_names[p], phase_names[p], d);
        }
        dynbuf_addstr(b, "</ul>");
}
