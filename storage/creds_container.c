/* ECS task role and EKS Pod Identity credentials: a GET to the container
 * credentials endpoint, with an Authorization header when one is given. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/io.h"
#include "storage/creds-internal.h"
#include "storage/http.h"

#define TOKEN_MAX 16384

/* As the SDKs: plain http only to the ECS (169.254.170.2) or EKS
 * (169.254.170.23, fd00:ec2::23) agents or to a loopback address, where
 * nobody on the network can read the token or forge the answer. */
int creds_container_check_url(const char *url, struct bc_error *err)
{
        if (strncmp(url, "https://", 8) == 0)
                return 0;
        if (strncmp(url, "http://", 7) != 0)
                return bc_error_set(
                        err, BC_CONFIG, EINVAL,
                        "AWS_CONTAINER_CREDENTIALS_FULL_URI must be http:// or https://");
        const char *h = url + 7;
        char host[64];
        size_t n;
        if (*h == '[') {
                n = strcspn(++h, "]");
        } else {
                n = strcspn(h, ":/?#");
        }
        if (n == 0 || n >= sizeof(host))
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "AWS_CONTAINER_CREDENTIALS_FULL_URI has no host");
        memcpy(host, h, n);
        host[n] = '\0';
        struct in_addr a4;
        struct in6_addr a6;
        bool ok = strcmp(host, "localhost") == 0 || strcmp(host, "169.254.170.2") == 0 ||
                  strcmp(host, "169.254.170.23") == 0;
        if (!ok && inet_pton(AF_INET, host, &a4) == 1)
                ok = (ntohl(a4.s_addr) >> 24) == 127;
        if (!ok && inet_pton(AF_INET6, host, &a6) == 1) {
                struct in6_addr eks;
                inet_pton(AF_INET6, "fd00:ec2::23", &eks);
                ok = IN6_IS_ADDR_LOOPBACK(&a6) || memcmp(&a6, &eks, sizeof(eks)) == 0;
        }
        if (!ok)
                return bc_error_set(
                        err, BC_CONFIG, EINVAL,
                        "AWS_CONTAINER_CREDENTIALS_FULL_URI: plain http is allowed only to "
                        "a loopback address, 169.254.170.2 or 169.254.170.23, not %s",
                        host);
        return 0;
}

static int read_token(const struct container_source *c, char **ret, struct bc_error *err)
{
        if (c->auth_token_file) {
                size_t len = 0;
                int r = bc_read_all(c->auth_token_file, TOKEN_MAX, ret, &len, err);
                if (r < 0)
                        return bc_error_prefix(err, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
                while (len && ((*ret)[len - 1] == '\n' || (*ret)[len - 1] == '\r'))
                        (*ret)[--len] = '\0';
                return 0;
        }
        *ret = c->auth_token ? strdup(c->auth_token) : NULL;
        return c->auth_token && !*ret ? bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory")
                                      : 0;
}

int creds_container_fetch(const struct container_source *c, struct aws_creds *ret,
                          struct bc_error *err)
{
        _cleanup_(aws_secret_freep) char *token = NULL;
        int r = read_token(c, &token, err);
        if (r < 0)
                return r;
        /* A header value must not end a line early (a newline in the token
         * file would inject a header). */
        if (token && strpbrk(token, "\r\n"))
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "the container authorization token holds a line break");
        _cleanup_(aws_secret_freep) char *auth = NULL;
        if (token && asprintf(&auth, "Authorization: %s", token) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        const char *headers[] = { "Accept: application/json", auth, NULL };
        struct creds_http_request req = {
                .method = "GET",
                .url = c->url,
                .headers = headers,
                .connect_timeout_ms = 2000,
                .timeout_ms = 5000,
        };
        long status = 0;
        _cleanup_(aws_secret_freep) char *body = NULL;
        r = creds_http(&req, &status, &body, err);
        if (r < 0)
                return r;
        if (status != 200) {
                _cleanup_free_ char *where = http_redact(c->url);
                return bc_error_set(err, BC_FETCH_FAILED, EACCES, "GET %s returned HTTP %ld",
                                    where, status);
        }
        return creds_from_json(body, "container endpoint", ret, err);
}
