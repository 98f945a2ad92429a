#include "worker/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/dynbuf.h"

static enum log_format log_fmt = LOG_TEXT;
static enum log_level log_min = LOG_INFO;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void log_setup(enum log_format format, enum log_level level)
{
        log_fmt = format;
        log_min = level;
}

static void add_json_string(struct dynbuf *b, const char *s)
{
        dynbuf_addstr(b, "\"");
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                if (*p == '"' || *p == '\\')
                        dynbuf_printf(b, "\\%c", *p);
                else if (*p < 0x20)
                        dynbuf_printf(b, "\\u%04x", *p);
                else
                        dynbuf_add(b, p, 1);
        }
        dynbuf_addstr(b, "\"");
}

static void add_text_value(struct dynbuf *b, const char *s)
{
        if (*s && strcspn(s, " \t\n\r\"=") == strlen(s)) {
                dynbuf_addstr(b, s);
                return;
        }
        /* Quoted like logfmt: the same escaping as a JSON string. */
        add_json_string(b, s);
}

static void add_field(struct dynbuf *b, const char *key, const char *value)
{
        if (log_fmt == LOG_JSON) {
                dynbuf_addstr(b, b->len > 1 ? "," : "");
                add_json_string(b, key);
                dynbuf_addstr(b, ":");
                add_json_string(b, value ? value : "");
        } else {
                dynbuf_printf(b, "%s%s=", b->len ? " " : "", key);
                add_text_value(b, value ? value : "");
        }
}

void log_event(enum log_level level, const char *event, ...)
{
        if (level < log_min)
                return;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        char when[64];
        snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 ts.tv_nsec / 1000000);

        struct dynbuf b;
        dynbuf_init(&b, 64 * 1024);
        if (log_fmt == LOG_JSON)
                dynbuf_addstr(&b, "{");
        add_field(&b, "ts", when);
        add_field(&b, "level", level_names[level]);
        add_field(&b, "event", event);
        va_list ap;
        va_start(ap, event);
        for (const char *key = va_arg(ap, const char *); key; key = va_arg(ap, const char *))
                add_field(&b, key, va_arg(ap, const char *));
        va_end(ap);
        dynbuf_addstr(&b, log_fmt == LOG_JSON ? "}\n" : "\n");
        if (b.data) {
                ssize_t w = write(STDERR_FILENO, b.data, b.len);
                (void)w;
        }
        dynbuf_done(&b);
}
