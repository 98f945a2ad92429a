#include "worker/http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

#define CONTENT_TYPE_TEXT "text/plain; charset=utf-8"
#define CONTENT_TYPE_METRICS "text/plain; version=0.0.4; charset=utf-8"
#define REASON_MAX 200

struct http_server {
        struct MHD_Daemon *daemon;
        struct metrics *metrics;
        http_ready_fn ready;
        void *ctx;
        uint16_t port;
};

/* ---- address ---- */

static int parse_port(const char *s, const char *addr, uint16_t *ret, struct bc_error *err)
{
        unsigned long v = 0;
        size_t n = 0;
        for (; s[n] >= '0' && s[n] <= '9' && n < 6; n++)
                v = v * 10 + (unsigned long)(s[n] - '0');
        if (n == 0 || s[n] || v > 65535)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "'%s': the port must be a number from 0 to 65535", addr);
        *ret = (uint16_t)v;
        return 0;
}

int http_parse_addr(const char *addr, struct sockaddr_storage *ret_storage, bool *ret_any,
                    struct bc_error *err)
{
        if (!addr || !*addr)
                return bc_error_set(err, BC_USAGE, EINVAL, "empty address (want HOST:PORT)");
        char host[64];
        const char *port;
        bool bracketed = addr[0] == '[';
        if (bracketed) {
                const char *close = strchr(addr, ']');
                if (!close || close[1] != ':')
                        return bc_error_set(err, BC_USAGE, EINVAL, "'%s': want [IPV6]:PORT", addr);
                port = close + 2;
                if ((size_t)(close - addr - 1) >= sizeof(host))
                        return bc_error_set(err, BC_USAGE, EINVAL, "'%s': host too long", addr);
                snprintf(host, sizeof(host), "%.*s", (int)(close - addr - 1), addr + 1);
        } else {
                const char *colon = strrchr(addr, ':');
                if (!colon)
                        return bc_error_set(err, BC_USAGE, EINVAL, "'%s': want HOST:PORT or :PORT",
                                            addr);
                if (memchr(addr, ':', (size_t)(colon - addr)))
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "'%s': an IPv6 address goes in brackets, "
                                            "as [::1]:9464",
                                            addr);
                if ((size_t)(colon - addr) >= sizeof(host))
                        return bc_error_set(err, BC_USAGE, EINVAL, "'%s': host too long", addr);
                snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
                port = colon + 1;
        }
        uint16_t p = 0;
        int r = parse_port(port, addr, &p, err);
        if (r < 0)
                return r;
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof(ss));
        struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        bool any = !bracketed && !*host;
        if (any || bracketed) {
                /* Empty host: IPv6 any, bound dual-stack by the caller. */
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons(p);
                if (!any && inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "'%s': '%s' is not an IPv6 address", addr, host);
        } else {
                in4->sin_family = AF_INET;
                in4->sin_port = htons(p);
                const char *h = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
                if (inet_pton(AF_INET, h, &in4->sin_addr) != 1)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "'%s': '%s' is not an IPv4 address (names other "
                                            "than localhost are not resolved)",
                                            addr, host);
        }
        *ret_storage = ss;
        *ret_any = any;
        return 0;
}

/* ---- requests ---- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
        struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);
        if (!resp) {
                if (mode == MHD_RESPMEM_MUST_FREE)
                        free(body);
                return MHD_NO;
        }
        enum MHD_Result r = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        if (r == MHD_YES)
                r = MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        if (r == MHD_YES && status == MHD_HTTP_METHOD_NOT_ALLOWED)
                r = MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        if (r == MHD_YES)
                r = MHD_queue_response(c, status, resp);
        MHD_destroy_response(resp);
        return r;
}

static enum MHD_Result reply_static(struct MHD_Connection *c, unsigned status, const char *text)
{
        return reply(c, status, CONTENT_TYPE_TEXT, (char *)text, strlen(text),
                     MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result serve_readyz(struct http_server *s, struct MHD_Connection *c)
{
        char reason[REASON_MAX + 1] = "";
        if (!s->ready || s->ready(s->ctx, reason, sizeof(reason)))
                return reply_static(c, MHD_HTTP_OK, "ok\n");
        reason[REASON_MAX] = '\0';
        /* One line, whatever the callback wrote. */
        char line[REASON_MAX + 2];
        size_t n = 0;
        for (const char *p = *reason ? reason : "not ready"; *p && n < REASON_MAX; p++)
                line[n++] = (unsigned char)*p < 0x20 || *p == 0x7f ? ' ' : *p;
        line[n++] = '\n';
        return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, CONTENT_TYPE_TEXT, line, n,
                     MHD_RESPMEM_MUST_COPY);
}

static enum MHD_Result serve_metrics(struct http_server *s, struct MHD_Connection *c)
{
        size_t len = 0;
        char *text = metrics_render(s->metrics, &len);
        if (!text)
                return reply_static(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
        return reply(c, MHD_HTTP_OK, CONTENT_TYPE_METRICS, text, len, MHD_RESPMEM_MUST_FREE);
}

/* MHD calls this once per request before any body arrives; answering at
 * once is allowed, and a body (nobody sends one to these paths) is then
 * discarded with the connection.  HEAD is answered like GET: MHD sends
 * the headers and leaves the body out. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
        (void)version;
        (void)upload_data;
        (void)upload_data_size;
        (void)req_cls;
        struct http_server *s = cls;
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
                return reply_static(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
        if (strcmp(url, "/healthz") == 0)
                return reply_static(c, MHD_HTTP_OK, "ok\n");
        if (strcmp(url, "/readyz") == 0)
                return serve_readyz(s, c);
        if (strcmp(url, "/metrics") == 0)
                return serve_metrics(s, c);
        return reply_static(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* ---- start/stop ---- */

static struct MHD_Daemon *start_daemon(struct http_server *s, const struct sockaddr_storage *ss,
                                       bool dual_stack)
{
        /* Auto picks epoll on Linux: no FD_SETSIZE limit in a worker that
         * may hold many descriptors.  No MHD_USE_ERROR_LOG: libraries don't
         * write to stderr; failures are explained by probe_bind(). */
        unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD;
        if (ss->ss_family == AF_INET6)
                flags |= dual_stack ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
        /* Scrapes and probes are tiny and few: a small connection limit, a
         * short idle timeout and a small per-connection pool keep a
         * misbehaving client from tying up the worker's memory. */
        return MHD_start_daemon(
                flags, 0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)ss,
                MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                (unsigned)16, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32 * 1024, MHD_OPTION_END);
}

/* MHD reports no reason when it cannot start; binding the same address
 * ourselves recovers the errno (EADDRINUSE, EACCES, EADDRNOTAVAIL). */
static int probe_bind(const struct sockaddr_storage *ss)
{
        _cleanup_fd_ int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return errno;
        int one = 1;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                  : sizeof(struct sockaddr_in);
        if (bind(fd, (const struct sockaddr *)ss, len) < 0)
                return errno;
        return 0;
}

int http_server_start(const char *addr, struct metrics *m, http_ready_fn ready, void *ctx,
                      struct http_server **ret, struct bc_error *err)
{
        struct sockaddr_storage ss = { 0 };
        bool any = false;
        int r = http_parse_addr(addr, &ss, &any, err);
        if (r < 0)
                return bc_error_prefix(err, "--metrics-addr");
        _cleanup_free_ struct http_server *s = calloc(1, sizeof(*s));
        if (!s)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        s->metrics = m;
        s->ready = ready;
        s->ctx = ctx;
        s->daemon = start_daemon(s, &ss, any);
        if (!s->daemon && any) {
                /* A host (or container) without IPv6: every IPv4 address. */
                struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
                uint16_t port = ((struct sockaddr_in6 *)&ss)->sin6_port;
                memset(&ss, 0, sizeof(ss));
                in4->sin_family = AF_INET;
                in4->sin_port = port;
                in4->sin_addr.s_addr = htonl(INADDR_ANY);
                s->daemon = start_daemon(s, &ss, false);
        }
        if (!s->daemon) {
                int e = probe_bind(&ss);
                if (e)
                        return bc_error_set(err, BC_CONFIG, e, "--metrics-addr %s: bind: %s", addr,
                                            strerror(e));
                return bc_error_set(err, BC_INTERNAL, EIO,
                                    "--metrics-addr %s: libmicrohttpd could not start", addr);
        }
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon,
                                                               MHD_DAEMON_INFO_BIND_PORT);
        s->port = info ? info->port : 0;
        *ret = steal_pointer(&s);
        return 0;
}

uint16_t http_server_port(const struct http_server *s)
{
        return s ? s->port : 0;
}

void http_server_stop(struct http_server *s)
{
        if (!s)
                return;
        MHD_stop_daemon(s->daemon);
        free(s);
}
