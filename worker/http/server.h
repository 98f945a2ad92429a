/* The worker's operations endpoint (--metrics-addr), served by
 * libmicrohttpd on its own internal thread:
 *
 *   GET /healthz   200 "ok" while the process lives (liveness probe)
 *   GET /readyz    200 "ok" when the ready callback says so, else 503 with
 *                  the callback's one-line reason (readiness probe)
 *   GET /metrics   200, metrics_render() as text/plain; version=0.0.4
 *
 * HEAD works like GET without a body; other methods get 405, other paths
 * 404.  Responses carry Cache-Control: no-store.  Nothing here logs. */
#ifndef BC_WORKER_HTTP_SERVER_H
#define BC_WORKER_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/error.h"
#include "worker/metrics/metrics.h"

struct http_server;

/* Called on the server's thread for each /readyz request, so it must be
 * thread-safe and quick (read a few atomics or a cached state, never
 * query the database or S3).  Returns true when ready; else writes a
 * short NUL-terminated reason into reason (size bytes; left empty, it
 * reads "not ready"). */
typedef bool (*http_ready_fn)(void *ctx, char *reason, size_t size);

/* Parses "HOST:PORT" as --metrics-addr accepts it: "127.0.0.1:9464",
 * "[::1]:9464", "localhost:9464", or ":9464" / "0.0.0.0:9464" / "[::]:9464"
 * for every address.  Port 0 asks the kernel for a free one.  Hosts are
 * numeric (no DNS at startup) except "localhost".  On success fills
 * *ret_storage (a struct sockaddr_in or sockaddr_in6; *ret_any says
 * whether the host was empty, so the caller may bind dual-stack) and
 * returns 0; else -EINVAL with err naming the problem. */
int http_parse_addr(const char *addr, struct sockaddr_storage *ret_storage, bool *ret_any,
                    struct bc_error *err);

/* Starts serving on addr.  m may be NULL (then /metrics is empty); ready
 * may be NULL (then /readyz is always 200).  m and ctx must outlive the
 * server.  Block the worker's signals before calling, so the server's
 * thread inherits the mask and never takes SIGTERM meant for the loop.
 * Returns 0 and *ret, or a negative errno with err saying why
 * ("--metrics-addr 127.0.0.1:80: bind: Permission denied").  Stop with
 * http_server_stop(). */
int http_server_start(const char *addr, struct metrics *m, http_ready_fn ready, void *ctx,
                      struct http_server **ret, struct bc_error *err);

/* The port the server listens on (useful after asking for port 0). */
uint16_t http_server_port(const struct http_server *s);

/* Stops accepting, finishes or drops the requests in flight, joins the
 * server's thread and frees s.  After it returns the callbacks are never
 * called again.  NULL-safe. */
void http_server_stop(struct http_server *s);

#endif
