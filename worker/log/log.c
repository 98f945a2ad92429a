#include "worker/log/log.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "common/utf8.h"

/* A value longer than this is cut: one event stays one reasonable line. */
#define LOG_VALUE_CAP 4096

const char log_int_tag[] = "<int>";
const char log_bool_tag[] = "<bool>";

static enum log_format log_fmt = LOG_TEXT;
static enum log_level log_min = LOG_INFO;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

void log_setup(enum log_format format, enum log_level level)
{
        log_fmt = format;
        log_min = level;
}

/* One field, whatever the format: a string (valid UTF-8, capped), a number
 * or a boolean, as a cJSON item the caller owns. */
static cJSON *field_item(const char *tag, const char *s, long long n)
{
        if (tag == log_int_tag)
                return cJSON_CreateNumber((double)n);
        if (tag == log_bool_tag)
                return cJSON_CreateBool(n != 0);
        size_t len = s ? strnlen(s, LOG_VALUE_CAP + 1) : 0;
        _cleanup_free_ char *clean = utf8_sanitize(s ? s : "",
                                                   len > LOG_VALUE_CAP ? LOG_VALUE_CAP : len);
        return clean ? cJSON_CreateString(clean) : NULL;
}

static bool is_bare(const char *v)
{
        if (!*v)
                return false;
        for (const unsigned char *p = (const unsigned char *)v; *p; p++)
                if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p == 0x7f)
                        return false;
        return true;
}

/* key=value, the value bare when it needs no quoting, else quoted with
 * the JSON string escapes (logfmt). */
static void add_text_field(struct dynbuf *b, const char *key, const cJSON *item)
{
        dynbuf_printf(b, "%s%s=", b->len ? " " : "", key);
        if (cJSON_IsString(item) && is_bare(item->valuestring)) {
                dynbuf_addstr(b, item->valuestring);
                return;
        }
        _cleanup_free_ char *printed = cJSON_PrintUnformatted(item);
        dynbuf_addstr(b, printed ? printed : "\"\"");
}

struct line {
        cJSON *json;        /* --log-format json */
        struct dynbuf text; /* --log-format text */
};

static void add_field(struct line *l, const char *key, cJSON *item)
{
        if (!item)
                return;
        if (log_fmt == LOG_JSON) {
                cJSON_AddItemToObject(l->json, key, item);
                return;
        }
        add_text_field(&l->text, key, item);
        cJSON_Delete(item);
}

static void write_line(struct line *l)
{
        _cleanup_free_ char *json = log_fmt == LOG_JSON ? cJSON_PrintUnformatted(l->json) : NULL;
        if (json)
                dynbuf_addstr(&l->text, json);
        if (!l->text.data)
                return;
        dynbuf_addstr(&l->text, "\n");
        ssize_t w = write(STDERR_FILENO, l->text.data, l->text.len);
        (void)w;
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

        struct line l = { .json = log_fmt == LOG_JSON ? cJSON_CreateObject() : NULL };
        dynbuf_init(&l.text, 64 * 1024);
        if (log_fmt == LOG_JSON && !l.json)
                return;
        add_field(&l, "ts", field_item(NULL, when, 0));
        add_field(&l, "level", field_item(NULL, level_names[level], 0));
        add_field(&l, "event", field_item(NULL, event, 0));
        va_list ap;
        va_start(ap, event);
        for (const char *key = va_arg(ap, const char *); key; key = va_arg(ap, const char *)) {
                if (key == log_int_tag || key == log_bool_tag) {
                        const char *tag = key;
                        key = va_arg(ap, const char *);
                        long long n = tag == log_int_tag ? va_arg(ap, long long) : va_arg(ap, int);
                        add_field(&l, key, field_item(tag, NULL, n));
                        continue;
                }
                const char *value = va_arg(ap, const char *);
                if (value)
                        add_field(&l, key, field_item(NULL, value, 0));
        }
        va_end(ap);
        write_line(&l);
        cJSON_Delete(l.json);
        dynbuf_done(&l.text);
}
