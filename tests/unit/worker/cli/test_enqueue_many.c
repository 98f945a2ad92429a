/* Unit tests for worker/cli/cmd_enqueue_many.c: the jobs file of
 * `boxcar enqueue --many` (a JSON array or JSON lines) read into the one
 * JSON array boxcar.enqueue_many gets, and its refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/error.h"
#include "worker/cli/cmd_enqueue_many.h"

static const struct {
        const char *file;
        const char *want; /* the array text, or NULL: refused */
        const char *message;
} cases[] = {
        { "[{\"queue\":\"a\"},{\"queue\":\"b\"}]", "[{\"queue\":\"a\"},{\"queue\":\"b\"}]", NULL },
        { "  \n[ {\"queue\": \"a\"} ]\n", "[{\"queue\":\"a\"}]", NULL },
        { "{\"queue\":\"a\"}\n{\"queue\":\"b\"}\n", "[{\"queue\":\"a\"},{\"queue\":\"b\"}]",
          NULL },
        { "{\"queue\":\"a\"}\r\n\n   \n{\"queue\":\"b\"}", "[{\"queue\":\"a\"},{\"queue\":\"b\"}]",
          NULL },
        /* Not objects: enqueue_many names them, with their index. */
        { "1\n\"x\"\n", "[1,\"x\"]", NULL },
        { "{\"queue\":\"a\"}\n{\"queue\":\n", NULL, "--many: line 2 is not JSON" },
        { "\n\n{oops}\n", NULL, "--many: line 3 is not JSON" },
        { "[{\"queue\":\"a\"},", NULL,
          "--many: the file starts with '[' but is not a JSON array" },
        { "[]", NULL, "--many: the file holds no jobs" },
        { "\n \n", NULL, "--many: the file holds no jobs" },
};

static void test_read(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char path[] = "/tmp/test_enqueue_many.XXXXXX";
                int fd = mkstemp(path);
                assert_true(fd >= 0);
                size_t len = strlen(cases[i].file);
                assert_int_equal(write(fd, cases[i].file, len), (ssize_t)len);
                close(fd);
                struct bc_error err = BC_ERROR_INIT;
                char *got = NULL;
                int r = enqueue_many_read(path, &got, &err);
                unlink(path);
                if (cases[i].want) {
                        assert_int_equal(r, 0);
                        assert_string_equal(got, cases[i].want);
                } else {
                        assert_true(r < 0);
                        assert_null(got);
                        assert_int_equal(err.code, BC_USAGE);
                        assert_string_equal(err.message, cases[i].message);
                }
                free(got);
                bc_error_clear(&err);
        }
}

static void test_missing_file(void **state)
{
        (void)state;
        struct bc_error err = BC_ERROR_INIT;
        char *got = NULL;
        assert_true(enqueue_many_read("/nonexistent/jobs.json", &got, &err) < 0);
        assert_int_equal(err.code, BC_USAGE);
        assert_non_null(strstr(err.message, "--many"));
        bc_error_clear(&err);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_read),
                cmocka_unit_test(test_missing_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
