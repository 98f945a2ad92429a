/* The libcurl side of the SSRF guard (see netguard.h), apart from the
 * check itself so that boxcar-sandbox, linked statically without libcurl,
 * can use netguard_permits for its egress proxy. */
#include "common/netguard.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

/* libcurl calls this for every socket it is about to connect, with the
 * resolved address it will connect to: the place where the decision is
 * made on what is really reached. */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
        struct netguard_curl *ctx = clientp;
        (void)purpose;
        const char *range = NULL;
        if (ctx->guard && !netguard_permits_connect(ctx->guard, &a->addr, a->addrlen, &range)) {
                if (!ctx->refused) {
                        ctx->refused = true;
                        ctx->range = range;
                        netguard_addr_text(&a->addr, a->addrlen, ctx->addr);
                }
                return CURL_SOCKET_BAD;
        }
        return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

void netguard_curl_attach(CURL *c, struct netguard_curl *ctx)
{
        const struct netguard *g = ctx->guard;
        *ctx = (struct netguard_curl){ .guard = g };
        curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, ctx);
}

char *netguard_curl_message(const struct netguard_curl *ctx)
{
        char *m = NULL;
        if (asprintf(&m,
                     "refused to connect to %s (%s): boxcar sends no request from a job "
                     "spec to internal addresses unless the worker runs with "
                     "--allow-private-urls or --allow-url-cidr",
                     ctx->addr, ctx->range ? ctx->range : "special-purpose address") < 0)
                return NULL;
        return m;
}
