/* Unit tests for worker/log: each event is one line that a JSON parser
 * accepts whatever the values hold, numbers are JSON numbers, absent
 * fields are absent, and the text format quotes only what needs it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "worker/log/log.h"

/* Runs log_event's output through a pipe standing in for stderr. */
struct capture {
        int saved;
        int rd;
};

static void capture_start(struct capture *c)
{
        int p[2];
        assert_int_equal(pipe(p), 0);
        fflush(stderr);
        c->saved = dup(STDERR_FILENO);
        assert_true(c->saved >= 0);
        assert_true(dup2(p[1], STDERR_FILENO) >= 0);
        close(p[1]);
        c->rd = p[0];
}

/* Returns what was written (caller frees). */
static char *capture_end(struct capture *c)
{
        dup2(c->saved, STDERR_FILENO);
        close(c->saved);
        static char buf[1 << 16];
        size_t n = 0;
        ssize_t r;
        while ((r = read(c->rd, buf + n, sizeof(buf) - 1 - n)) > 0)
                n += (size_t)r;
        close(c->rd);
        buf[n] = '\0';
        return strdup(buf);
}

static cJSON *one_json_line(const char *out)
{
        size_t len = strlen(out);
        assert_true(len > 0);
        assert_int_equal(out[len - 1], '\n');
        assert_null(memchr(out, '\n', len - 1));
        cJSON *j = cJSON_Parse(out);
        assert_non_null(j);
        return j;
}

static void test_json_types_and_absent_fields(void **state)
{
        (void)state;
        log_setup(LOG_JSON, LOG_DEBUG);
        struct capture c;
        capture_start(&c);
        log_event(LOG_INFO, "job.finished", "job_id", "j-1", LOG_INT("attempt", 2), "status",
                  "succeeded", "error_code", NULL, LOG_INT("retry_ms", 5000),
                  LOG_BOOL("will_retry", 0), "detail", (const char *)NULL, NULL);
        char *out = capture_end(&c);
        cJSON *j = one_json_line(out);
        assert_string_equal(cJSON_GetObjectItem(j, "event")->valuestring, "job.finished");
        assert_string_equal(cJSON_GetObjectItem(j, "level")->valuestring, "info");
        assert_true(cJSON_IsString(cJSON_GetObjectItem(j, "ts")));
        assert_string_equal(cJSON_GetObjectItem(j, "job_id")->valuestring, "j-1");
        const cJSON *attempt = cJSON_GetObjectItem(j, "attempt");
        assert_true(cJSON_IsNumber(attempt));
        assert_int_equal(attempt->valueint, 2);
        assert_true(cJSON_IsNumber(cJSON_GetObjectItem(j, "retry_ms")));
        assert_int_equal(cJSON_GetObjectItem(j, "retry_ms")->valueint, 5000);
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "will_retry")));
        assert_null(cJSON_GetObjectItem(j, "error_code"));
        assert_null(cJSON_GetObjectItem(j, "detail"));
        assert_non_null(strstr(out, "\"attempt\":2,"));
        cJSON_Delete(j);
        free(out);
}

/* Quotes, backslashes, control characters, invalid UTF-8: still one line
 * of valid JSON, the text kept where it is valid. */
static void test_json_escaping(void **state)
{
        (void)state;
        static const struct {
                const char *in, *want;
        } cases[] = {
                { "say \"hi\"", "say \"hi\"" },
                { "back\\slash", "back\\slash" },
                { "two\nlines\r\tand\x01", "two\nlines\r\tand\x01" },
                { "caf\xc3\xa9", "caf\xc3\xa9" },
                { "bad \xff byte", "bad \xef\xbf\xbd byte" },
                { "", "" },
        };
        log_setup(LOG_JSON, LOG_DEBUG);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct capture c;
                capture_start(&c);
                log_event(LOG_WARN, "x", "error", cases[i].in, NULL);
                char *out = capture_end(&c);
                cJSON *j = one_json_line(out);
                assert_string_equal(cJSON_GetObjectItem(j, "error")->valuestring, cases[i].want);
                cJSON_Delete(j);
                free(out);
        }
}

static void test_long_value_is_cut(void **state)
{
        (void)state;
        char *big = malloc(100001);
        memset(big, 'a', 100000);
        big[100000] = '\0';
        log_setup(LOG_JSON, LOG_DEBUG);
        struct capture c;
        capture_start(&c);
        log_event(LOG_ERROR, "x", "error", big, NULL);
        char *out = capture_end(&c);
        cJSON *j = one_json_line(out);
        assert_int_equal(strlen(cJSON_GetObjectItem(j, "error")->valuestring), 4096);
        cJSON_Delete(j);
        free(out);
        free(big);
}

static void test_text_format(void **state)
{
        (void)state;
        log_setup(LOG_TEXT, LOG_INFO);
        struct capture c;
        capture_start(&c);
        log_event(LOG_DEBUG, "hidden", NULL);
        log_event(LOG_WARN, "db.lost", "worker_id", "w-1", "error", "a \"b\"=c",
                  LOG_INT("retry_ms", 100), "absent", NULL, "empty", "", NULL);
        char *out = capture_end(&c);
        assert_null(strstr(out, "hidden"));
        const char *rest = strstr(out, " level=warn event=db.lost ");
        assert_non_null(rest);
        assert_string_equal(rest, " level=warn event=db.lost worker_id=w-1 "
                                  "error=\"a \\\"b\\\"=c\" retry_ms=100 empty=\"\"\n");
        free(out);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_json_types_and_absent_fields),
                cmocka_unit_test(test_json_escaping),
                cmocka_unit_test(test_long_value_is_cut),
                cmocka_unit_test(test_text_format),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
