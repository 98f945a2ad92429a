/* The helper's side of the status object (status.c reads it): written by
 * hand so that boxcar-sandbox needs no JSON library and can be linked
 * statically (no dynamic loader at each sandbox's start). */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dynbuf.h"
#include "sandbox/helper-internal.h"

void sandbox_status_done(struct sandbox_status *s)
{
        if (!s)
                return;
        free(s->setup_step);
        free(s->setup_path);
        free(s->message);
        for (size_t i = 0; i < s->n_net_refused_list; i++)
                free(s->net_refused_list[i]);
        free(s->net_refused_list);
        memset(s, 0, sizeof(*s));
}

/* A JSON string: quotes, backslashes and control characters escaped;
 * other bytes as they are (the reader takes them as UTF-8, and what a
 * path or message holds is sanitised by the worker before it is shown). */
static void add_quoted(struct dynbuf *b, const char *v)
{
        dynbuf_addstr(b, "\"");
        for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
                if (*p == '"' || *p == '\\')
                        dynbuf_printf(b, "\\%c", *p);
                else if (*p < 0x20 || *p == 0x7f)
                        dynbuf_printf(b, "\\u%04x", *p);
                else
                        dynbuf_add(b, p, 1);
        }
        dynbuf_addstr(b, "\"");
}

static void add_string(struct dynbuf *b, const char *key, const char *v)
{
        dynbuf_printf(b, ",\"%s\":", key);
        add_quoted(b, v);
}

static void add_error_object(struct dynbuf *b, const char *key, const struct sandbox_status *s)
{
        dynbuf_printf(b, ",\"%s\":{\"errno\":%d", key, s->setup_errno);
        if (s->setup_failed)
                add_string(b, "step", s->setup_step ? s->setup_step : "internal");
        if (s->setup_path)
                add_string(b, "path", s->setup_path);
        add_string(b, "message", s->message ? s->message : "");
        dynbuf_addstr(b, "}");
}

/* "network": what went through the egress proxy (--network allow). */
static void add_network(struct dynbuf *b, const struct sandbox_status *s)
{
        dynbuf_printf(b,
                      ",\"network\":{\"bytes_out\":%llu,\"bytes_in\":%llu,"
                      "\"connections\":%llu,\"refused\":%llu,\"refused_list\":[",
                      (unsigned long long)s->net_bytes_out, (unsigned long long)s->net_bytes_in,
                      (unsigned long long)s->net_connections, (unsigned long long)s->net_refused);
        for (size_t i = 0; i < s->n_net_refused_list; i++) {
                if (i)
                        dynbuf_addstr(b, ",");
                add_quoted(b, s->net_refused_list[i]);
        }
        dynbuf_addstr(b, "]}");
}

char *sbx_status_to_json(const struct sandbox_status *s)
{
        struct dynbuf b;
        dynbuf_init(&b, 64 * 1024);
        dynbuf_printf(&b,
                      "{\"exit_code\":%d,\"signal\":%d,\"timed_out\":%s,\"oom_killed\":%s,"
                      "\"cancelled\":%s,\"wall_ms\":%llu,\"cpu_ms\":%llu,\"max_rss_kb\":%llu,"
                      "\"setup_us\":%llu",
                      s->exit_code, s->signal, s->timed_out ? "true" : "false",
                      s->oom_killed ? "true" : "false", s->cancelled ? "true" : "false",
                      (unsigned long long)s->wall_ms, (unsigned long long)s->cpu_ms,
                      (unsigned long long)s->max_rss_kb, (unsigned long long)s->setup_us);
        if (s->setup_failed)
                add_error_object(&b, "setup_error", s);
        else if (s->exec_failed)
                add_error_object(&b, "exec_error", s);
        if (s->sandbox_killed)
                dynbuf_addstr(&b, ",\"sandbox_killed\":true");
        if (s->has_network)
                add_network(&b, s);
        if (dynbuf_addstr(&b, "}") < 0) {
                dynbuf_done(&b);
                return NULL;
        }
        return dynbuf_steal(&b);
}

void sbx_status_write(int fd, const struct sandbox_status *st)
{
        if (fd < 0)
                return;
        char *json = sbx_status_to_json(st);
        if (!json)
                return;
        size_t len = strlen(json);
        json[len] = '\n'; /* replaces the NUL: one line per object */
        for (size_t off = 0; off < len + 1;) {
                ssize_t n = write(fd, json + off, len + 1 - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                off += (size_t)n;
        }
        free(json);
}

void sbx_report(int status_fd, int err_fd, const struct sandbox_status *st)
{
        if (st->setup_failed)
                dprintf(err_fd, "boxcar-sandbox: %s%s%s: %s\n", st->setup_step,
                        st->setup_path ? " " : "", st->setup_path ? st->setup_path : "",
                        st->message ? st->message : "failed");
        else if (st->exec_failed)
                dprintf(err_fd, "boxcar-sandbox: %s\n", st->message ? st->message : "exec failed");
        else if (st->sandbox_killed)
                dprintf(err_fd,
                        "boxcar-sandbox: the sandbox's init was killed by signal %d (%s) "
                        "from outside the sandbox\n",
                        st->signal, strsignal(st->signal));
        sbx_status_write(status_fd, st);
        if (status_fd >= 0)
                close(status_fd);
}
