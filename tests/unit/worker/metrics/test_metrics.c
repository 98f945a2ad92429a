/* Unit tests for worker/metrics and worker/http_server: exact exposition
 * text, escaping, the series cap, updates from many threads, and the
 * three endpoints fetched over real HTTP with libcurl.
 *
 * BOXCAR_METRICS_SAMPLE=FILE makes the HTTP test write the /metrics body
 * it fetched to FILE, for the ops suite's exposition-format check. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "common/error.h"
#include "worker/http/server.h"
#include "worker/metrics/metrics.h"

#define DROPPED_HEAD                                                                       \
        "# HELP boxcar_metrics_series_dropped_total Updates dropped because their family " \
        "reached its cap on label combinations.\n"                                         \
        "# TYPE boxcar_metrics_series_dropped_total counter\n"

static const char *const queue_status[] = { "queue", "status", NULL };
static const char *const queue_only[] = { "queue", NULL };

static struct metrics *new_registry(const struct metrics_desc *d, size_t n)
{
        struct metrics *m = NULL;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(metrics_new(&m, &err), 0);
        if (metrics_register_all(m, d, n, &err) < 0)
                fail_msg("register: %s", bc_error_message(&err));
        return m;
}

static void assert_render(struct metrics *m, const char *want)
{
        size_t len = 0;
        char *got = metrics_render(m, &len);
        assert_non_null(got);
        assert_string_equal(got, want);
        assert_int_equal(len, strlen(want));
        free(got);
}

static void test_counter_gauge_exact(void **state)
{
        (void)state;
        const struct metrics_desc d[] = {
                { .name = "boxcar_jobs_finished_total",
                  .help = "Jobs finished, by queue and status.",
                  .type = METRICS_COUNTER,
                  .labels = queue_status },
                { .name = "boxcar_slots_free",
                  .help = "Job slots without a job.",
                  .type = METRICS_GAUGE },
                { .name = "boxcar_jobs_running",
                  .help = "Jobs running.",
                  .type = METRICS_GAUGE,
                  .labels = queue_only },
        };
        struct metrics *m = new_registry(d, ELEMENTSOF(d));
        const char *ok[] = { "default", "succeeded" }, *bad[] = { "default", "failed" },
                   *scoped[] = { "a/b", "succeeded" }, *q[] = { "default" };
        assert_int_equal(metrics_counter_add(m, "boxcar_jobs_finished_total", ok, 1), 0);
        assert_int_equal(metrics_counter_add(m, "boxcar_jobs_finished_total", bad, 1), 0);
        assert_int_equal(metrics_counter_add(m, "boxcar_jobs_finished_total", ok, 1), 0);
        assert_int_equal(metrics_counter_add(m, "boxcar_jobs_finished_total", scoped, 2.5), 0);
        assert_int_equal(metrics_gauge_set(m, "boxcar_slots_free", NULL, 3), 0);
        assert_int_equal(metrics_gauge_add(m, "boxcar_jobs_running", q, 2), 0);
        assert_int_equal(metrics_gauge_add(m, "boxcar_jobs_running", q, -1), 0);
        assert_render(m, "# HELP boxcar_jobs_finished_total Jobs finished, by queue and status.\n"
                         "# TYPE boxcar_jobs_finished_total counter\n"
                         "boxcar_jobs_finished_total{queue=\"default\",status=\"succeeded\"} 2\n"
                         "boxcar_jobs_finished_total{queue=\"default\",status=\"failed\"} 1\n"
                         "boxcar_jobs_finished_total{queue=\"a/b\",status=\"succeeded\"} 2.5\n"
                         "# HELP boxcar_slots_free Job slots without a job.\n"
                         "# TYPE boxcar_slots_free gauge\n"
                         "boxcar_slots_free 3\n"
                         "# HELP boxcar_jobs_running Jobs running.\n"
                         "# TYPE boxcar_jobs_running gauge\n"
                         "boxcar_jobs_running{queue=\"default\"} 1\n" DROPPED_HEAD);
        /* A gauge family refreshed as a whole (queue depth). */
        assert_int_equal(metrics_family_clear(m, "boxcar_jobs_running"), 0);
        assert_int_equal(metrics_family_clear(m, "boxcar_slots_free"), -EINVAL);
        char *text = metrics_render(m, NULL);
        assert_null(strstr(text, "boxcar_jobs_running{"));
        assert_non_null(strstr(text, "# TYPE boxcar_jobs_running gauge\n"));
        free(text);
        metrics_free(m);
}

static void test_histogram_exact(void **state)
{
        (void)state;
        static const double b[] = { 0.25, 1, 10 };
        const struct metrics_desc d[] = {
                { .name = "boxcar_job_duration_seconds",
                  .help = "Job wall time.",
                  .type = METRICS_HISTOGRAM,
                  .labels = queue_only,
                  .buckets = b,
                  .n_buckets = 3 },
                { .name = "boxcar_sandbox_start_seconds",
                  .help = "Sandbox setup time.",
                  .type = METRICS_HISTOGRAM,
                  .buckets = b,
                  .n_buckets = 3 },
        };
        struct metrics *m = new_registry(d, ELEMENTSOF(d));
        const char *q[] = { "default" };
        /* Upper bounds are inclusive: 0.25 counts in le="0.25". */
        static const double obs[] = { 0.125, 0.25, 0.5, 20 };
        for (size_t i = 0; i < ELEMENTSOF(obs); i++)
                assert_int_equal(
                        metrics_histogram_observe(m, "boxcar_job_duration_seconds", q, obs[i]), 0);
        assert_render(m, "# HELP boxcar_job_duration_seconds Job wall time.\n"
                         "# TYPE boxcar_job_duration_seconds histogram\n"
                         "boxcar_job_duration_seconds_bucket{queue=\"default\",le=\"0.25\"} 2\n"
                         "boxcar_job_duration_seconds_bucket{queue=\"default\",le=\"1\"} 3\n"
                         "boxcar_job_duration_seconds_bucket{queue=\"default\",le=\"10\"} 3\n"
                         "boxcar_job_duration_seconds_bucket{queue=\"default\",le=\"+Inf\"} 4\n"
                         "boxcar_job_duration_seconds_sum{queue=\"default\"} 20.875\n"
                         "boxcar_job_duration_seconds_count{queue=\"default\"} 4\n"
                         "# HELP boxcar_sandbox_start_seconds Sandbox setup time.\n"
                         "# TYPE boxcar_sandbox_start_seconds histogram\n"
                         "boxcar_sandbox_start_seconds_bucket{le=\"0.25\"} 0\n"
                         "boxcar_sandbox_start_seconds_bucket{le=\"1\"} 0\n"
                         "boxcar_sandbox_start_seconds_bucket{le=\"10\"} 0\n"
                         "boxcar_sandbox_start_seconds_bucket{le=\"+Inf\"} 0\n"
                         "boxcar_sandbox_start_seconds_sum 0\n"
                         "boxcar_sandbox_start_seconds_count 0\n" DROPPED_HEAD);
        metrics_free(m);
}

static void test_escaping(void **state)
{
        (void)state;
        const struct metrics_desc d[] = {
                { .name = "t_total",
                  .help = "line one\nback\\slash \"quoted\"",
                  .type = METRICS_COUNTER,
                  .labels = queue_only },
        };
        struct metrics *m = new_registry(d, ELEMENTSOF(d));
        const char *v[] = { "a\\b\"c\nd caf\xc3\xa9" };
        assert_int_equal(metrics_counter_add(m, "t_total", v, 1), 0);
        assert_render(m, "# HELP t_total line one\\nback\\\\slash \"quoted\"\n"
                         "# TYPE t_total counter\n"
                         "t_total{queue=\"a\\\\b\\\"c\\nd caf\xc3\xa9\"} 1\n" DROPPED_HEAD);
        metrics_free(m);
}

static void test_series_cap(void **state)
{
        (void)state;
        const struct metrics_desc d[] = {
                { .name = "t_total",
                  .help = "h",
                  .type = METRICS_COUNTER,
                  .labels = queue_only,
                  .max_series = 3 },
        };
        struct metrics *m = new_registry(d, ELEMENTSOF(d));
        char name[32];
        for (int i = 0; i < 10; i++) {
                snprintf(name, sizeof(name), "q%d", i);
                const char *v[] = { name };
                assert_int_equal(metrics_counter_add(m, "t_total", v, 1), i < 3 ? 0 : -E2BIG);
        }
        /* Existing series still count once the family is full. */
        const char *q0[] = { "q0" };
        assert_int_equal(metrics_counter_add(m, "t_total", q0, 1), 0);
        assert_render(
                m,
                "# HELP t_total h\n# TYPE t_total counter\n"
                "t_total{queue=\"q0\"} 2\nt_total{queue=\"q1\"} 1\nt_total{queue=\"q2\"} 1\n" DROPPED_HEAD
                "boxcar_metrics_series_dropped_total{family=\"t_total\"} 7\n");
        metrics_free(m);
}

static void test_register_errors(void **state)
{
        (void)state;
        static const double b[] = { 1, 2 }, unsorted[] = { 2, 1 }, inf[] = { 1, INFINITY };
        static const char *const le[] = { "le", NULL }, *const dup[] = { "a", "a", NULL },
                                 *const reserved[] = { "__x", NULL },
                                 *const digit[] = { "1a", NULL };
        static const struct {
                struct metrics_desc d;
                int want;
        } cases[] = {
                { { .name = "ok_total", .help = "h", .type = METRICS_COUNTER }, 0 },
                { { .name = "ok_total", .help = "h", .type = METRICS_COUNTER }, -EEXIST },
                { { .name = "boxcar_metrics_series_dropped_total", .type = METRICS_COUNTER },
                  -EEXIST },
                { { .name = "1bad", .type = METRICS_GAUGE }, -EINVAL },
                { { .name = "bad-name", .type = METRICS_GAUGE }, -EINVAL },
                { { .name = "", .type = METRICS_GAUGE }, -EINVAL },
                { { .name = "ns:ok", .type = METRICS_GAUGE }, 0 },
                { { .name = "h1",
                    .type = METRICS_HISTOGRAM,
                    .labels = le,
                    .buckets = b,
                    .n_buckets = 2 },
                  -EINVAL },
                { { .name = "h2", .type = METRICS_HISTOGRAM, .buckets = unsorted, .n_buckets = 2 },
                  -EINVAL },
                { { .name = "h3", .type = METRICS_HISTOGRAM, .buckets = inf, .n_buckets = 2 },
                  -EINVAL },
                { { .name = "h4", .type = METRICS_HISTOGRAM }, -EINVAL },
                { { .name = "g1", .type = METRICS_GAUGE, .buckets = b, .n_buckets = 2 }, -EINVAL },
                { { .name = "g2", .type = METRICS_GAUGE, .labels = dup }, -EINVAL },
                { { .name = "g3", .type = METRICS_GAUGE, .labels = reserved }, -EINVAL },
                { { .name = "g4", .type = METRICS_GAUGE, .labels = digit }, -EINVAL },
                { { .name = "g5", .type = METRICS_GAUGE, .labels = le }, 0 },
        };
        struct metrics *m = NULL;
        assert_int_equal(metrics_new(&m, NULL), 0);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct bc_error err = BC_ERROR_INIT;
                int r = metrics_register(m, &cases[i].d, &err);
                if (r != cases[i].want)
                        fail_msg("case %zu (%s): got %d want %d (%s)", i, cases[i].d.name, r,
                                 cases[i].want, bc_error_message(&err));
                assert_true(r == 0 || err.message);
                bc_error_clear(&err);
        }
        metrics_free(m);
}

static void test_update_errors(void **state)
{
        (void)state;
        static const double b[] = { 1 };
        const struct metrics_desc d[] = {
                { .name = "c_total", .help = "h", .type = METRICS_COUNTER, .labels = queue_only },
                { .name = "g", .help = "h", .type = METRICS_GAUGE },
                { .name = "h",
                  .help = "h",
                  .type = METRICS_HISTOGRAM,
                  .buckets = b,
                  .n_buckets = 1 },
        };
        struct metrics *m = new_registry(d, ELEMENTSOF(d));
        char long_value[METRICS_MAX_VALUE_LEN + 2];
        memset(long_value, 'x', sizeof(long_value) - 1);
        long_value[sizeof(long_value) - 1] = '\0';
        const char *q[] = { "q" }, *too_long[] = { long_value }, *bad_utf8[] = { "caf\xe9" },
                   *null_value[] = { NULL };
        assert_int_equal(metrics_counter_add(m, "nope", q, 1), -ENOENT);
        assert_int_equal(metrics_gauge_set(m, "c_total", q, 1), -EINVAL);
        assert_int_equal(metrics_counter_add(m, "c_total", q, -1), -EINVAL);
        assert_int_equal(metrics_counter_add(m, "c_total", q, NAN), -EINVAL);
        assert_int_equal(metrics_counter_add(m, "c_total", NULL, 1), -EINVAL);
        assert_int_equal(metrics_counter_add(m, "c_total", too_long, 1), -EINVAL);
        assert_int_equal(metrics_counter_add(m, "c_total", bad_utf8, 1), -EINVAL);
        assert_int_equal(metrics_counter_add(m, "c_total", null_value, 1), 0);
        assert_int_equal(metrics_histogram_observe(m, "h", NULL, NAN), -EINVAL);
        assert_int_equal(metrics_gauge_set(m, "g", NULL, -INFINITY), 0);
        /* Disabled metrics (no --metrics-addr) are a no-op, not an error. */
        assert_int_equal(metrics_counter_add(NULL, "c_total", q, 1), 0);
        assert_int_equal(metrics_histogram_observe(NULL, "h", NULL, 1), 0);
        char *text = metrics_render(m, NULL);
        assert_non_null(strstr(text, "\nc_total{queue=\"\"} 1\n"));
        assert_non_null(strstr(text, "\ng -Inf\n"));
        assert_null(strstr(text, "xxx"));
        free(text);
        metrics_free(m);
}

static void test_format_double(void **state)
{
        (void)state;
        static const struct {
                double v;
                const char *want;
        } cases[] = {
                { 0, "0" },
                { -0.0, "0" },
                { 1, "1" },
                { -3, "-3" },
                { 2.5, "2.5" },
                { 0.1, "0.1" },
                { 0.005, "0.005" },
                { 1e15, "1e+15" },
                { 123456789, "123456789" },
                { 1.0 / 3, "0.3333333333333333" },
                { INFINITY, "+Inf" },
                { -INFINITY, "-Inf" },
                { NAN, "NaN" },
                { 4294967296.0, "4294967296" },
                { 1e-9, "1e-09" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char buf[32];
                assert_string_equal(metrics_format_double(cases[i].v, buf, sizeof(buf)),
                                    cases[i].want);
        }
}

/* ---- many threads ---- */

#define THREADS 8
#define ROUNDS 20000

static void *hammer(void *arg)
{
        struct metrics *m = arg;
        const char *q[2][1] = { { "a" }, { "b" } };
        for (int i = 0; i < ROUNDS; i++) {
                metrics_counter_add(m, "c_total", q[i & 1], 1);
                metrics_gauge_add(m, "running", NULL, 1);
                metrics_histogram_observe(m, "d_seconds", q[i & 1], 0.5);
                metrics_gauge_add(m, "running", NULL, -1);
                if (i % 1000 == 0)
                        free(metrics_render(m, NULL)); /* scrapes race the updates */
        }
        return NULL;
}

static void test_concurrent(void **state)
{
        (void)state;
        const struct metrics_desc d[] = {
                { .name = "c_total", .help = "h", .type = METRICS_COUNTER, .labels = queue_only },
                { .name = "running", .help = "h", .type = METRICS_GAUGE },
                { .name = "d_seconds",
                  .help = "h",
                  .type = METRICS_HISTOGRAM,
                  .labels = queue_only,
                  .buckets = metrics_buckets_seconds,
                  .n_buckets = metrics_n_buckets_seconds },
        };
        struct metrics *m = new_registry(d, ELEMENTSOF(d));
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++)
                assert_int_equal(pthread_create(&t[i], NULL, hammer, m), 0);
        for (int i = 0; i < THREADS; i++)
                pthread_join(t[i], NULL);
        char *text = metrics_render(m, NULL);
        char want[128];
        snprintf(want, sizeof(want), "\nc_total{queue=\"a\"} %d\nc_total{queue=\"b\"} %d\n",
                 THREADS * ROUNDS / 2, THREADS * ROUNDS / 2);
        assert_non_null(strstr(text, want));
        assert_non_null(strstr(text, "\nrunning 0\n"));
        snprintf(want, sizeof(want), "\nd_seconds_bucket{queue=\"b\",le=\"0.5\"} %d\n",
                 THREADS * ROUNDS / 2);
        assert_non_null(strstr(text, want));
        snprintf(want, sizeof(want),
                 "\nd_seconds_sum{queue=\"a\"} %d\nd_seconds_count{queue=\"a\"} %d\n",
                 THREADS * ROUNDS / 4, THREADS * ROUNDS / 2);
        assert_non_null(strstr(text, want));
        free(text);
        metrics_free(m);
}

/* ---- HTTP ---- */

static void test_parse_addr(void **state)
{
        (void)state;
        static const struct {
                const char *addr;
                int family; /* 0: invalid */
                int port;
                bool any;
        } cases[] = {
                { "127.0.0.1:9464", AF_INET, 9464, false },
                { ":9464", AF_INET6, 9464, true },
                { "0.0.0.0:80", AF_INET, 80, false },
                { "localhost:0", AF_INET, 0, false },
                { "[::1]:9464", AF_INET6, 9464, false },
                { "[::]:1", AF_INET6, 1, false },
                { "", 0, 0, false },
                { "9464", 0, 0, false },
                { "127.0.0.1:", 0, 0, false },
                { "127.0.0.1:65536", 0, 0, false },
                { "127.0.0.1:-1", 0, 0, false },
                { "127.0.0.1:94a", 0, 0, false },
                { "::1:9464", 0, 0, false },
                { "[::1]9464", 0, 0, false },
                { "[nope]:9464", 0, 0, false },
                { "example.com:9464", 0, 0, false },
                { "300.1.1.1:9464", 0, 0, false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct sockaddr_storage ss;
                bool any = false;
                struct bc_error err = BC_ERROR_INIT;
                int r = http_parse_addr(cases[i].addr, &ss, &any, &err);
                if ((r == 0) != (cases[i].family != 0))
                        fail_msg("'%s': got %d (%s)", cases[i].addr, r, bc_error_message(&err));
                if (r == 0) {
                        assert_int_equal(ss.ss_family, cases[i].family);
                        uint16_t port = ss.ss_family == AF_INET
                                                ? ((struct sockaddr_in *)&ss)->sin_port
                                                : ((struct sockaddr_in6 *)&ss)->sin6_port;
                        assert_int_equal(ntohs(port), cases[i].port);
                        assert_int_equal(any, cases[i].any);
                } else {
                        assert_non_null(strstr(bc_error_message(&err), cases[i].addr));
                }
                bc_error_clear(&err);
        }
}

struct ready_state {
        atomic_bool ready;
};

static bool ready_cb(void *ctx, char *reason, size_t size)
{
        struct ready_state *rs = ctx;
        if (atomic_load(&rs->ready))
                return true;
        snprintf(reason, size, "draining\nsecond line");
        return false;
}

struct fetched {
        long status;
        char *type;
        struct dynbuf body, headers;
};

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
        return dynbuf_add(ud, p, size * n) < 0 ? 0 : size * n;
}

static void fetch(uint16_t port, const char *method, const char *path, struct fetched *ret)
{
        char url[128];
        snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", (unsigned)port, path);
        CURL *c = curl_easy_init();
        assert_non_null(c);
        dynbuf_init(&ret->body, 1 << 20);
        dynbuf_init(&ret->headers, 1 << 16);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
        curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &ret->body);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &ret->headers);
        if (strcmp(method, "HEAD") == 0)
                curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        else if (strcmp(method, "POST") == 0)
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, "x=1");
        CURLcode rc = curl_easy_perform(c);
        if (rc != CURLE_OK)
                fail_msg("%s %s: %s", method, url, curl_easy_strerror(rc));
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &ret->status);
        char *type = NULL;
        curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
        ret->type = type ? strdup(type) : NULL;
        curl_easy_cleanup(c);
        if (!ret->body.data)
                dynbuf_addstr(&ret->body, "");
}

static void fetched_done(struct fetched *f)
{
        free(f->type);
        dynbuf_done(&f->body);
        dynbuf_done(&f->headers);
}

static void save_sample(const char *text)
{
        const char *path = getenv("BOXCAR_METRICS_SAMPLE");
        if (!path || !*path)
                return;
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static struct metrics *sample_registry(void)
{
        static const double b[] = { 0.1, 1, 10 };
        const struct metrics_desc d[] = {
                { .name = "boxcar_jobs_finished_total",
                  .help = "Jobs finished.",
                  .type = METRICS_COUNTER,
                  .labels = queue_status },
                { .name = "boxcar_job_duration_seconds",
                  .help = "Job wall time.",
                  .type = METRICS_HISTOGRAM,
                  .labels = queue_only,
                  .buckets = b,
                  .n_buckets = 3 },
                { .name = "boxcar_slots_free", .help = "Free slots.", .type = METRICS_GAUGE },
        };
        struct metrics *m = new_registry(d, ELEMENTSOF(d));
        const char *ok[] = { "default", "succeeded" }, *odd[] = { "we\"ird\\q\nx", "failed" },
                   *q[] = { "default" };
        metrics_counter_add(m, "boxcar_jobs_finished_total", ok, 3);
        metrics_counter_add(m, "boxcar_jobs_finished_total", odd, 1);
        metrics_histogram_observe(m, "boxcar_job_duration_seconds", q, 0.05);
        metrics_histogram_observe(m, "boxcar_job_duration_seconds", q, 2);
        metrics_gauge_set(m, "boxcar_slots_free", NULL, 4);
        return m;
}

static void test_http_endpoints(void **state)
{
        (void)state;
        struct metrics *m = sample_registry();
        struct ready_state rs;
        atomic_init(&rs.ready, true);
        struct http_server *s = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (http_server_start("127.0.0.1:0", m, ready_cb, &rs, &s, &err) < 0)
                fail_msg("start: %s", bc_error_message(&err));
        uint16_t port = http_server_port(s);
        assert_true(port > 0);

        struct fetched f;
        fetch(port, "GET", "/healthz", &f);
        assert_int_equal(f.status, 200);
        assert_string_equal(f.body.data, "ok\n");
        assert_non_null(strcasestr(f.headers.data, "\r\nCache-Control: no-store\r\n"));
        fetched_done(&f);

        fetch(port, "GET", "/readyz", &f);
        assert_int_equal(f.status, 200);
        fetched_done(&f);
        atomic_store(&rs.ready, false);
        fetch(port, "GET", "/readyz", &f);
        assert_int_equal(f.status, 503);
        assert_string_equal(f.body.data, "draining second line\n");
        fetched_done(&f);

        fetch(port, "GET", "/metrics", &f);
        assert_int_equal(f.status, 200);
        assert_non_null(f.type);
        assert_int_equal(strncmp(f.type, "text/plain; version=0.0.4", 25), 0);
        char *want = metrics_render(m, NULL);
        assert_non_null(want);
        assert_string_equal(f.body.data, want);
        save_sample(f.body.data);
        free(want);
        fetched_done(&f);

        fetch(port, "HEAD", "/metrics", &f);
        assert_int_equal(f.status, 200);
        assert_int_equal(f.body.len, 0);
        fetched_done(&f);

        fetch(port, "GET", "/metrics/", &f);
        assert_int_equal(f.status, 404);
        fetched_done(&f);
        fetch(port, "GET", "/", &f);
        assert_int_equal(f.status, 404);
        fetched_done(&f);
        fetch(port, "GET", "/healthz?verbose=1", &f); /* the query is not the path */
        assert_int_equal(f.status, 200);
        fetched_done(&f);

        fetch(port, "POST", "/metrics", &f);
        assert_int_equal(f.status, 405);
        assert_non_null(strcasestr(f.headers.data, "\r\nAllow: GET, HEAD\r\n"));
        fetched_done(&f);

        /* The same port again: a clear bind error, not a silent failure. */
        char addr[32];
        snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)port);
        struct http_server *s2 = NULL;
        assert_int_equal(http_server_start(addr, m, NULL, NULL, &s2, &err), -EADDRINUSE);
        assert_null(s2);
        assert_non_null(strstr(bc_error_message(&err), "Address already in use"));
        bc_error_clear(&err);
        assert_true(http_server_start("nope:1", m, NULL, NULL, &s2, &err) < 0);
        assert_non_null(strstr(bc_error_message(&err), "--metrics-addr"));
        bc_error_clear(&err);

        http_server_stop(s);
        http_server_stop(NULL);
        metrics_free(m);
}

/* No ready callback and no registry: always ready, empty /metrics. */
static void test_http_defaults(void **state)
{
        (void)state;
        struct http_server *s = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (http_server_start("localhost:0", NULL, NULL, NULL, &s, &err) < 0)
                fail_msg("start: %s", bc_error_message(&err));
        struct fetched f;
        fetch(http_server_port(s), "GET", "/readyz", &f);
        assert_int_equal(f.status, 200);
        fetched_done(&f);
        fetch(http_server_port(s), "GET", "/metrics", &f);
        assert_int_equal(f.status, 200);
        assert_int_equal(f.body.len, 0);
        fetched_done(&f);
        http_server_stop(s);
}

int main(void)
{
        curl_global_init(CURL_GLOBAL_DEFAULT);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_counter_gauge_exact),
                cmocka_unit_test(test_histogram_exact),
                cmocka_unit_test(test_escaping),
                cmocka_unit_test(test_series_cap),
                cmocka_unit_test(test_register_errors),
                cmocka_unit_test(test_update_errors),
                cmocka_unit_test(test_format_double),
                cmocka_unit_test(test_concurrent),
                cmocka_unit_test(test_parse_addr),
                cmocka_unit_test(test_http_endpoints),
                cmocka_unit_test(test_http_defaults),
        };
        int r = cmocka_run_group_tests(tests, NULL, NULL);
        curl_global_cleanup();
        return r;
}
