/* webhook_post against a real HTTP server in the same process
 * (libmicrohttpd on 127.0.0.1, an ephemeral port): headers sent, 2xx,
 * 5xx, 410, a redirect not followed, Retry-After, a timeout, a refused
 * connection, an oversized response, a non-web scheme and header
 * injection. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/error.h"
#include "worker/webhook/webhook_post.h"

#define BIG_BODY (1u << 20)

/* What the server saw last on /ok, for the header test. */
static struct {
        pthread_mutex_t lock;
        char id[128], ts[32], sig[256], type[64], ua[64], expect[64];
        char body[256];
        int hits_ok;
        unsigned peer_port; /* the client's port: one per connection */
} seen = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct MHD_Daemon *daemon_;
static unsigned short port_;
static char *big_;

static void copy_header(struct MHD_Connection *c, const char *name, char *out, size_t cap)
{
        const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
        snprintf(out, cap, "%s", v ? v : "(none)");
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *body,
                               size_t len, const char *hname, const char *hvalue)
{
        struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
                                                                 MHD_RESPMEM_PERSISTENT);
        if (hname)
                MHD_add_response_header(r, hname, hvalue);
        enum MHD_Result ret = MHD_queue_response(c, status, r);
        MHD_destroy_response(r);
        return ret;
}

struct upload {
        char body[256];
        size_t len;
};

static enum MHD_Result route(struct MHD_Connection *c, const char *url, struct upload *u)
{
        if (strcmp(url, "/ok") == 0) {
                pthread_mutex_lock(&seen.lock);
                copy_header(c, "webhook-id", seen.id, sizeof(seen.id));
                copy_header(c, "webhook-timestamp", seen.ts, sizeof(seen.ts));
                copy_header(c, "webhook-signature", seen.sig, sizeof(seen.sig));
                copy_header(c, "Content-Type", seen.type, sizeof(seen.type));
                copy_header(c, "User-Agent", seen.ua, sizeof(seen.ua));
                copy_header(c, "Expect", seen.expect, sizeof(seen.expect));
                snprintf(seen.body, sizeof(seen.body), "%.*s", (int)u->len, u->body);
                seen.hits_ok++;
                const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
                        c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
                seen.peer_port =
                        ci && ci->client_addr
                                ? ntohs(((const struct sockaddr_in *)ci->client_addr)->sin_port)
                                : 0;
                pthread_mutex_unlock(&seen.lock);
                return respond(c, 204, "", 0, NULL, NULL);
        }
        if (strcmp(url, "/500") == 0)
                return respond(c, 500, "Internal\r\n\tError\x1b[0m ", 21, NULL, NULL);
        if (strcmp(url, "/echo") == 0) /* an error page quoting the request */
                return respond(c, 404, "no /echo?token=hush for user:secret", 35, NULL, NULL);
        if (strcmp(url, "/410") == 0)
                return respond(c, 410, "gone", 4, NULL, NULL);
        if (strcmp(url, "/redirect") == 0)
                return respond(c, 302, "", 0, "Location", "/ok");
        if (strcmp(url, "/retry") == 0)
                return respond(c, 503, "busy", 4, "Retry-After", "7");
        if (strcmp(url, "/slow") == 0) {
                usleep(1500 * 1000);
                return respond(c, 200, "late", 4, NULL, NULL);
        }
        if (strcmp(url, "/big200") == 0)
                return respond(c, 200, big_, BIG_BODY, NULL, NULL);
        if (strcmp(url, "/big500") == 0)
                return respond(c, 500, big_, BIG_BODY, NULL, NULL);
        return respond(c, 404, "not found", 9, NULL, NULL);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *data_size, void **con_cls)
{
        (void)cls, (void)method, (void)version;
        struct upload *u = *con_cls;
        if (!u) {
                *con_cls = calloc(1, sizeof(*u));
                return *con_cls ? MHD_YES : MHD_NO;
        }
        if (*data_size > 0) {
                size_t take = *data_size;
                if (take > sizeof(u->body) - u->len)
                        take = sizeof(u->body) - u->len;
                memcpy(u->body + u->len, data, take);
                u->len += take;
                *data_size = 0;
                return MHD_YES;
        }
        return route(c, url, u);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
        (void)cls, (void)c, (void)toe;
        free(*con_cls);
        *con_cls = NULL;
}

static int setup(void **state)
{
        (void)state;
        big_ = malloc(BIG_BODY);
        if (!big_)
                return -1;
        memset(big_, 'x', BIG_BODY);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
                                   0, NULL, NULL, handler, NULL, MHD_OPTION_SOCK_ADDR,
                                   (const struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED,
                                   completed, NULL, MHD_OPTION_END);
        if (!daemon_)
                return -1;
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
        port_ = info ? info->port : 0;
        return port_ ? 0 : -1;
}

static int teardown(void **state)
{
        (void)state;
        MHD_stop_daemon(daemon_);
        free(big_);
        return 0;
}

static char *url_of(const char *path)
{
        char *u = NULL;
        if (asprintf(&u, "http://user:secret@127.0.0.1:%u%s?token=hush", port_, path) < 0)
                return NULL;
        return u;
}

static int post(const char *url, double timeout_s, struct webhook_response *resp)
{
        struct webhook_request req = {
                .url = url,
                .msg_id = "msg_test",
                .timestamp = 1614265330,
                .signature = "v1,abc= v1,def=",
                .body = "{\"a\": 1}",
                .body_len = 8,
                .timeout_s = timeout_s,
                .user_agent = "boxcar-test/1",
        };
        struct bc_error err = BC_ERROR_INIT;
        int r = webhook_post(&req, resp, &err);
        if (r < 0)
                fail_msg("webhook_post: %s", bc_error_message(&err));
        return r;
}

static void test_headers_and_body(void **state)
{
        (void)state;
        char *url = url_of("/ok");
        struct webhook_response resp;
        assert_int_equal(post(url, 5, &resp), 0);
        assert_int_equal(resp.status, 204);
        assert_null(resp.error);
        assert_false(resp.timed_out);
        assert_true(resp.retry_after_s == -1);
        pthread_mutex_lock(&seen.lock);
        assert_string_equal(seen.id, "msg_test");
        assert_string_equal(seen.ts, "1614265330");
        assert_string_equal(seen.sig, "v1,abc= v1,def=");
        assert_string_equal(seen.type, "application/json");
        assert_string_equal(seen.ua, "boxcar-test/1");
        assert_string_equal(seen.expect, "(none)");
        assert_string_equal(seen.body, "{\"a\": 1}");
        pthread_mutex_unlock(&seen.lock);
        webhook_response_done(&resp);
        free(url);
}

struct outcome_case {
        const char *path;
        double timeout_s;
        long status;
        bool timed_out;
        double retry_after;
        const char *error; /* exact, or NULL for none */
};

static void test_outcomes(void **state)
{
        (void)state;
        static const struct outcome_case cases[] = {
                { "/500", 5, 500, false, -1, "HTTP 500: Internal Error [0m" },
                { "/410", 5, 410, false, -1, "HTTP 410: gone" },
                { "/redirect", 5, 302, false, -1, "HTTP 302: redirect not followed" },
                { "/retry", 5, 503, false, 7, "HTTP 503: busy" },
                { "/slow", 0.3, 0, true, -1, "timed out after 0.3s" },
                { "/big200", 5, 200, false, -1, NULL },
                { "/nowhere", 5, 404, false, -1, "HTTP 404: not found" },
                { "/echo", 5, 404, false, -1, "HTTP 404: no /echo?*** for ***:***" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct outcome_case *c = &cases[i];
                pthread_mutex_lock(&seen.lock);
                int hits_before = seen.hits_ok;
                pthread_mutex_unlock(&seen.lock);
                char *url = url_of(c->path);
                struct webhook_response resp;
                assert_int_equal(post(url, c->timeout_s, &resp), 0);
                if (resp.status != c->status || resp.timed_out != c->timed_out ||
                    resp.retry_after_s != c->retry_after ||
                    (c->error ? !resp.error || strcmp(resp.error, c->error) != 0 : !!resp.error))
                        fail_msg("%s: status %ld timed_out %d retry_after %g error '%s'", c->path,
                                 resp.status, resp.timed_out, resp.retry_after_s,
                                 resp.error ? resp.error : "(null)");
                pthread_mutex_lock(&seen.lock);
                assert_int_equal(seen.hits_ok, hits_before); /* the redirect was not followed */
                pthread_mutex_unlock(&seen.lock);
                webhook_response_done(&resp);
                free(url);
        }
}

static void test_big_error_body_is_quoted_short(void **state)
{
        (void)state;
        char *url = url_of("/big500");
        struct webhook_response resp;
        assert_int_equal(post(url, 5, &resp), 0);
        assert_int_equal(resp.status, 500);
        assert_non_null(resp.error);
        assert_int_equal(strlen(resp.error), strlen("HTTP 500: ") + 200);
        webhook_response_done(&resp);
        free(url);
}

static void test_connection_refused(void **state)
{
        (void)state;
        /* A port that was just ours and is now closed. */
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        struct sockaddr_in sa = { .sin_family = AF_INET };
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof(sa);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
        close(fd);
        char *url = NULL;
        assert_true(asprintf(&url, "http://127.0.0.1:%u/", ntohs(sa.sin_port)) > 0);
        struct webhook_response resp;
        assert_int_equal(post(url, 5, &resp), 0);
        assert_int_equal(resp.status, 0);
        assert_false(resp.timed_out);
        assert_string_equal(resp.error, "connection refused");
        webhook_response_done(&resp);
        free(url);
}

static void test_unusable_urls(void **state)
{
        (void)state;
        static const char *const cases[][2] = {
                { "file:///etc/passwd", "unsupported URL scheme (only http and https)" },
                { "gopher://127.0.0.1/", "unsupported URL scheme (only http and https)" },
                { "http://", "malformed URL" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct webhook_response resp;
                assert_int_equal(post(cases[i][0], 5, &resp), 0);
                assert_int_equal(resp.status, 0);
                if (!resp.error || strcmp(resp.error, cases[i][1]) != 0)
                        fail_msg("%s: error '%s'", cases[i][0],
                                 resp.error ? resp.error : "(null)");
                webhook_response_done(&resp);
        }
}

static void test_header_injection_refused(void **state)
{
        (void)state;
        char *url = url_of("/ok");
        struct webhook_request req = {
                .url = url,
                .msg_id = "msg\r\nX-Evil: 1",
                .timestamp = 1,
                .signature = "v1,abc=",
                .body = "{}",
                .body_len = 2,
        };
        struct webhook_response resp = { .status = 12345 };
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(webhook_post(&req, &resp, &err), -EINVAL);
        assert_int_equal(resp.status, 12345); /* untouched on failure */
        bc_error_clear(&err);
        req.msg_id = "msg";
        req.user_agent = "ua\n";
        assert_int_equal(webhook_post(&req, &resp, &err), -EINVAL);
        bc_error_clear(&err);
        free(url);
}

/* One client, several posts: one connection, every post complete (the
 * options of a post never leak into the next), and a timed-out transfer
 * does not poison the client. */
static void test_client_keeps_connection(void **state)
{
        (void)state;
        struct webhook_client *client = NULL;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(webhook_client_new(&client, &err), 0);
        char *ok = url_of("/ok"), *e500 = url_of("/500"), *slow = url_of("/slow");
        static const char *const ids[] = { "msg_a", "msg_b", "msg_c" };
        unsigned first_port = 0;
        for (size_t i = 0; i < 3; i++) {
                const char *url = i == 1 ? e500 : ok;
                struct webhook_request req = {
                        .url = url,
                        .msg_id = ids[i],
                        .timestamp = 1614265330 + (long long)i,
                        .signature = "v1,abc=",
                        .body = "{\"n\": 1}",
                        .body_len = 8,
                        .timeout_s = 5,
                        .user_agent = "boxcar-test/1",
                };
                struct webhook_response resp = { 0 };
                assert_int_equal(webhook_client_post(client, &req, &resp, &err), 0);
                assert_int_equal(resp.status, i == 1 ? 500 : 204);
                webhook_response_done(&resp);
                if (i == 1)
                        continue;
                pthread_mutex_lock(&seen.lock);
                assert_string_equal(seen.id, ids[i]);
                assert_string_equal(seen.body, "{\"n\": 1}");
                assert_string_equal(seen.ua, "boxcar-test/1");
                unsigned port = seen.peer_port;
                pthread_mutex_unlock(&seen.lock);
                assert_int_not_equal(port, 0);
                if (!first_port)
                        first_port = port;
                assert_int_equal(port, first_port);
        }
        struct webhook_request req = {
                .url = slow,
                .msg_id = "msg_slow",
                .timestamp = 1614265330,
                .signature = "v1,abc=",
                .body = "{}",
                .body_len = 2,
                .timeout_s = 0.3,
                .user_agent = "boxcar-test/1",
        };
        struct webhook_response resp = { 0 };
        assert_int_equal(webhook_client_post(client, &req, &resp, &err), 0);
        assert_true(resp.timed_out);
        webhook_response_done(&resp);
        req.url = ok;
        req.msg_id = "msg_after";
        req.timeout_s = 5;
        assert_int_equal(webhook_client_post(client, &req, &resp, &err), 0);
        assert_int_equal(resp.status, 204);
        webhook_response_done(&resp);
        pthread_mutex_lock(&seen.lock);
        assert_string_equal(seen.id, "msg_after");
        pthread_mutex_unlock(&seen.lock);
        webhook_client_free(client);
        free(ok);
        free(e500);
        free(slow);
}

static void test_same_origin(void **state)
{
        (void)state;
        assert_true(webhook_same_origin("http://h.example/a", "http://h.example:80/b?x=1"));
        assert_true(webhook_same_origin("https://H.Example/a", "https://h.example:443/"));
        assert_false(webhook_same_origin("http://h.example/a", "https://h.example/a"));
        assert_false(webhook_same_origin("http://h.example/a", "http://h.example:8080/a"));
        assert_false(webhook_same_origin("http://h.example/a", "http://h.example.evil/a"));
        assert_false(webhook_same_origin("http://127.0.0.1:9/a", "http://localhost:9/a"));
        assert_false(webhook_same_origin("http://h.example/a", "not a url"));
        assert_false(webhook_same_origin(NULL, "http://h.example/"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_headers_and_body),
                cmocka_unit_test(test_outcomes),
                cmocka_unit_test(test_big_error_body_is_quoted_short),
                cmocka_unit_test(test_connection_refused),
                cmocka_unit_test(test_unusable_urls),
                cmocka_unit_test(test_header_injection_refused),
                cmocka_unit_test(test_client_keeps_connection),
                cmocka_unit_test(test_same_origin),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
