/* Times and ids as a reader takes them in: "3 min ago" and "1.2 s" rather
 * than a timestamp to the microsecond, the first 8 hex digits of an id
 * rather than all 36.  The full value stays in a title attribute (and the
 * link), so nothing is lost, only put one hover away. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "worker/http/ui-internal.h"

static bool digits(const char *s, int n, int *ret)
{
        int v = 0;
        for (int i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (s[i] - '0');
        }
        *ret = v;
        return true;
}

/* "YYYY-MM-DD[T ]HH:MM:SS[.ffffff][Z|±HH[:MM]|±HHMM]": what PostgreSQL
 * writes for a timestamptz, in JSON or as text, in any session zone; no
 * zone is UTC (the SQL API's "..._utc" texts). */
bool ui_time_parse(const char *s, int64_t *ret_us)
{
        int y, mo, d, h, mi, sec;
        if (!s || strlen(s) < 19 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
            s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != ' ') ||
            !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
            !digits(s + 17, 2, &sec))
                return false;
        if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
                return false;
        const char *p = s + 19;
        int64_t frac = 0;
        if (*p == '.') {
                int n = 0;
                for (p++; *p >= '0' && *p <= '9'; p++, n++)
                        if (n < 6)
                                frac = frac * 10 + (*p - '0');
                if (n == 0)
                        return false;
                for (; n < 6; n++)
                        frac *= 10;
        }
        int off = 0;
        if (!*p) {
                /* No zone: UTC, as the text columns of the SQL API write it. */
        } else if (*p == 'Z') {
                p++;
        } else if (*p == '+' || *p == '-') {
                int oh, om = 0;
                int sign = *p == '-' ? -1 : 1;
                if (!digits(p + 1, 2, &oh))
                        return false;
                p += 3;
                if (*p == ':')
                        p++;
                if (*p && !digits(p, 2, &om))
                        return false;
                if (*p)
                        p += 2;
                off = sign * (oh * 3600 + om * 60);
        } else {
                return false;
        }
        if (*p)
                return false;
        struct tm tm = { .tm_year = y - 1900,
                         .tm_mon = mo - 1,
                         .tm_mday = d,
                         .tm_hour = h,
                         .tm_min = mi,
                         .tm_sec = sec };
        time_t t = timegm(&tm);
        *ret_us = ((int64_t)t - off) * 1000000 + frac;
        return true;
}

int64_t ui_now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void ui_fmt_duration(char *out, size_t size, double s)
{
        if (!isfinite(s) || s < 0) {
                snprintf(out, size, "-");
        } else if (s == 0) {
                snprintf(out, size, "0 s");
        } else if (s < 0.001) {
                snprintf(out, size, "%.0f µs", s * 1e6);
        } else if (s < 1) {
                snprintf(out, size, "%.0f ms", s * 1e3);
        } else if (s < 10) {
                snprintf(out, size, "%.1f s", s);
        } else if (s < 60) {
                snprintf(out, size, "%.0f s", s);
        } else if (s < 3600) {
                long t = (long)(s + 0.5);
                if (t % 60)
                        snprintf(out, size, "%ld min %ld s", t / 60, t % 60);
                else
                        snprintf(out, size, "%ld min", t / 60);
        } else if (s < 86400) {
                long t = (long)(s / 60 + 0.5);
                if (t % 60)
                        snprintf(out, size, "%ld h %ld min", t / 60, t % 60);
                else
                        snprintf(out, size, "%ld h", t / 60);
        } else {
                long t = (long)(s / 3600 + 0.5);
                if (t % 24)
                        snprintf(out, size, "%ld d %ld h", t / 24, t % 24);
                else
                        snprintf(out, size, "%ld d", t / 24);
        }
}

/* One unit, rounded down: "3 min ago" stays true for the whole minute. */
void ui_fmt_ago(char *out, size_t size, int64_t delta_us)
{
        bool future = delta_us < 0;
        int64_t s = (future ? -delta_us : delta_us) / 1000000;
        const char *unit = "s";
        int64_t n = s;
        if (s < 5) {
                snprintf(out, size, future ? "in a moment" : "just now");
                return;
        }
        if (s >= 86400) {
                n = s / 86400;
                unit = "d";
        } else if (s >= 3600) {
                n = s / 3600;
                unit = "h";
        } else if (s >= 60) {
                n = s / 60;
                unit = "min";
        }
        snprintf(out, size, future ? "in %lld %s" : "%lld %s ago", (long long)n, unit);
}

void ui_time_html(struct dynbuf *b, const char *ts, int64_t now_us)
{
        int64_t us;
        if (!ts || !*ts) {
                dynbuf_addstr(b, "-");
                return;
        }
        if (!ui_time_parse(ts, &us)) {
                ui_esc(b, ts);
                return;
        }
        char ago[64];
        ui_fmt_ago(ago, sizeof(ago), now_us - us);
        dynbuf_addstr(b, "<time datetime=\"");
        ui_esc(b, ts);
        dynbuf_addstr(b, "\" title=\"");
        ui_esc(b, ts);
        dynbuf_addstr(b, "\">");
        ui_esc(b, ago);
        dynbuf_addstr(b, "</time>");
}

void ui_duration_html(struct dynbuf *b, const char *from, const char *to)
{
        int64_t a, z;
        if (!ui_time_parse(from, &a) || !ui_time_parse(to, &z)) {
                dynbuf_addstr(b, "-");
                return;
        }
        char d[64];
        ui_fmt_duration(d, sizeof(d), (double)(z - a) / 1e6);
        dynbuf_addstr(b, "<span class=\"dur\" title=\"");
        ui_esc(b, from);
        dynbuf_addstr(b, " → ");
        ui_esc(b, to);
        dynbuf_addstr(b, "\">");
        ui_esc(b, d);
        dynbuf_addstr(b, "</span>");
}

void ui_short_id_html(struct dynbuf *b, const char *href_prefix, const char *id)
{
        size_t n = id ? strlen(id) : 0;
        if (href_prefix) {
                dynbuf_addstr(b, "<a class=\"sid\" href=\"");
                dynbuf_addstr(b, href_prefix);
                ui_urlenc(b, id);
                dynbuf_addstr(b, "\" title=\"");
        } else {
                dynbuf_addstr(b, "<code class=\"sid\" title=\"");
        }
        ui_esc(b, id);
        dynbuf_addstr(b, "\">");
        ui_esc_n(b, id ? id : "", n > 8 ? 8 : n);
        dynbuf_addstr(b, href_prefix ? "</a>" : "</code>");
}
