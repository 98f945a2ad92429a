/* Unit tests for common/: capped buffers, output tails, UTF-8 cleaning,
 * error context, directory creation, strict JSON and sizes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/deadline.h"
#include "common/dynbuf.h"
#include "common/error.h"
#include "common/io.h"
#include "common/json_strict.h"
#include "common/size.h"
#include "common/tailbuf.h"
#include "common/utf8.h"

static void test_dynbuf_cap(void **state)
{
        (void)state;
        struct dynbuf b;
        dynbuf_init(&b, 8);
        assert_int_equal(dynbuf_addstr(&b, "abcd"), 0);
        assert_int_equal(dynbuf_addstr(&b, "efgh"), 0);
        assert_int_equal(dynbuf_addstr(&b, "i"), -E2BIG);
        assert_string_equal(b.data, "abcdefgh");
        assert_int_equal(b.len, 8);
        char *s = dynbuf_steal(&b);
        assert_string_equal(s, "abcdefgh");
        free(s);
        dynbuf_done(&b);
}

struct tail_case {
        size_t cap;
        const char *writes[4];
        const char *want;
        int truncated;
};

static void test_tailbuf_table(void **state)
{
        (void)state;
        static const struct tail_case cases[] = {
                { 8, { "abc", NULL }, "abc", 0 },
                { 8, { "abcdefgh", NULL }, "abcdefgh", 0 },
                { 8, { "abcdefghij", NULL }, "cdefghij", 1 },
                { 4, { "ab", "cd", "ef", NULL }, "cdef", 1 },
                { 5, { "abc", "defg", "h", NULL }, "defgh", 1 },
                { 0, { "abc", NULL }, "", 1 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct tailbuf t;
                assert_int_equal(tailbuf_init(&t, cases[i].cap), 0);
                size_t total = 0;
                for (int w = 0; cases[i].writes[w]; w++) {
                        tailbuf_write(&t, cases[i].writes[w], strlen(cases[i].writes[w]));
                        total += strlen(cases[i].writes[w]);
                }
                size_t len;
                char *got = tailbuf_copy(&t, &len);
                assert_string_equal(got, cases[i].want);
                assert_int_equal(len, strlen(cases[i].want));
                assert_int_equal(tailbuf_truncated(&t), cases[i].truncated);
                assert_int_equal(t.total, total);
                free(got);
                tailbuf_done(&t);
        }
}

static void test_utf8_sanitize(void **state)
{
        (void)state;
        static const struct {
                const char *in;
                size_t len;
                const char *want;
        } cases[] = {
                { "plain", 5, "plain" },
                { "caf\xc3\xa9", 5, "caf\xc3\xa9" },
                { "a\0b", 3,
                  "a\xef\xbf\xbd"
                  "b" },
                { "\xff", 1, "\xef\xbf\xbd" },
                { "\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd" },                 /* overlong '/' */
                { "\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* surrogate */
                { "\xa9tail", 5, "tail" }, /* cut sequence at the start */
                { "end\xe2\x82", 5, "end\xef\xbf\xbd\xef\xbf\xbd" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *got = utf8_sanitize(cases[i].in, cases[i].len);
                assert_non_null(got);
                assert_string_equal(got, cases[i].want);
                /* Valid exactly when sanitizing changes nothing. */
                assert_int_equal(utf8_valid(cases[i].in, cases[i].len),
                                 strlen(cases[i].want) == cases[i].len &&
                                         memcmp(got, cases[i].in, cases[i].len) == 0);
                free(got);
        }
}

static void test_error_context(void **state)
{
        (void)state;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(bc_error_set(&err, BC_FETCH_FAILED, ECONNREFUSED, "connect to %s", "s3"),
                         -ECONNREFUSED);
        assert_int_equal(bc_error_prefix(&err, "volume %s", "repo"), -ECONNREFUSED);
        assert_string_equal(bc_error_message(&err), "volume repo: connect to s3");
        assert_string_equal(bc_code_name(err.code), "FETCH_FAILED");
        assert_int_equal(bc_error_set(NULL, BC_IO, 0, "x"), -EIO);
        bc_error_clear(&err);
        assert_null(err.message);
        assert_int_equal(err.code, BC_OK);
}

/* What jsonb accepts and refuses (checked with PostgreSQL 15's jsonb_in). */
static void test_json_strict(void **state)
{
        (void)state;
        static const struct {
                const char *text;
                int want;
        } cases[] = {
                { "{}", 0 },
                { " [1, -0.5e+3, \"a\\u00e9\\ud83d\\ude00\", true, null] \n", 0 },
                { "\"caf\xc3\xa9\"", 0 },
                { "0", 0 },
                { "1E5", 0 },
                { "{} x", -EINVAL },   /* cJSON stops after the first value */
                { "{}\x16", -EINVAL }, /* cJSON skips any byte below 0x20 */
                { "\x0b{}", -EINVAL },
                { "205.", -EINVAL },
                { "01", -EINVAL },
                { ".5", -EINVAL },
                { "1e", -EINVAL },
                { "+1", -EINVAL },
                { "-", -EINVAL },
                { "\"a\tb\"", -EINVAL }, /* raw control character in a string */
                { "\"\\u0000\"", -EINVAL },
                { "\"\\ud800\"", -EINVAL },
                { "\"\\udc00\"", -EINVAL },
                { "\"\\ud800\\u0041\"", -EINVAL },
                { "\"\\x41\"", -EINVAL },
                { "\"\xc3\"", -EINVAL },
                { "\"\xc0\xaf\"", -EINVAL },     /* overlong */
                { "\"\xed\xa0\x80\"", -EINVAL }, /* encoded surrogate */
                { "\"abc", -EINVAL },
                { "[1,]", -EINVAL },
                { "{\"a\" 1}", -EINVAL },
                { "{1: 2}", -EINVAL },
                { "tru", -EINVAL },
                { "", -EINVAL },
                { "[", -EINVAL },
                { "[[[[1]]]]", 0 },
                { "[[[[[1]]]]]", -E2BIG },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *problem = NULL;
                int r = json_strict_check(cases[i].text, strlen(cases[i].text), 4, &problem);
                if (r != cases[i].want)
                        fail_msg("case %zu (%s): got %d, want %d", i, cases[i].text, r,
                                 cases[i].want);
                if (r < 0)
                        assert_non_null(problem);
        }
}

static mode_t mode_of(const char *path)
{
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        return st.st_mode & 07777;
}

/* A work dir on a fresh host: every missing parent is made, 0700 each,
 * and what cannot be made is named with the reason. */
static void test_mkdir_p(void **state)
{
        (void)state;
        char top[] = "/tmp/boxcar-test-mkdir.XXXXXX";
        assert_non_null(mkdtemp(top));
        char path[128], sub[128], file[128], under_file[256];
        snprintf(path, sizeof(path), "%s/a//b/c/", top);
        snprintf(sub, sizeof(sub), "%s/a/b", top);
        struct bc_error err = BC_ERROR_INIT;
        mode_t old = umask(022);
        assert_int_equal(bc_mkdir_p(path, 0700, &err), 0);
        assert_int_equal(mode_of(path), 0700);
        assert_int_equal(mode_of(sub), 0700);
        /* Existing directories are fine, and keep their mode. */
        assert_int_equal(chmod(sub, 0755), 0);
        assert_int_equal(bc_mkdir_p(path, 0700, &err), 0);
        assert_int_equal(mode_of(sub), 0755);
        assert_null(err.message);

        snprintf(file, sizeof(file), "%s/a/file", top);
        FILE *f = fopen(file, "w");
        assert_non_null(f);
        fclose(f);
        snprintf(under_file, sizeof(under_file), "%s/x/y", file);
        char want[512];
        assert_int_equal(bc_mkdir_p(file, 0700, &err), -ENOTDIR);
        snprintf(want, sizeof(want), "%s: exists and is not a directory", file);
        assert_string_equal(bc_error_message(&err), want);
        /* A parent in the way is named, not the path asked for. */
        assert_int_equal(bc_mkdir_p(under_file, 0700, &err), -ENOTDIR);
        assert_string_equal(bc_error_message(&err), want);
        assert_int_equal(bc_mkdir_p("/proc/boxcar-test/x", 0700, &err), -ENOENT);
        assert_string_equal(bc_error_message(&err),
                            "mkdir /proc/boxcar-test: No such file or directory");
        assert_int_equal(err.code, BC_IO);
        assert_int_equal(bc_mkdir_p("", 0700, &err), -EINVAL);
        bc_error_clear(&err);
        umask(old);

        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
        assert_int_equal(system(cmd), 0);
}

static void test_parse_size(void **state)
{
        (void)state;
        const uint64_t MiB = UINT64_C(1) << 20, lim = UINT64_C(1) << 40;
        static const struct {
                const char *in;
                uint64_t unit, max;
                int want_r;
                uint64_t want;
        } cases[] = {
                { "0", 1, 1 << 30, 0, 0 },
                { "1048576", 1, 1 << 30, 0, 1048576 },
                { "10MiB", 1, 1 << 30, 0, 10485760 },
                { "512KiB", 1, 1 << 30, 0, 524288 },
                { "1GiB", 1, 1 << 30, 0, UINT64_C(1) << 30 },
                { "2TiB", 1, UINT64_MAX, 0, UINT64_C(2) << 40 },
                { "100B", 1, 1 << 30, 0, 100 },
                { "1kB", 1, 1 << 30, 0, 1000 },
                { "16MB", 1, 1 << 30, 0, 16000000 },
                { "2GB", 1, UINT64_MAX, 0, 2000000000 },
                { "3TB", 1, UINT64_MAX, 0, UINT64_C(3000000000000) },
                /* A plain number counts in the flag's own unit (--volume-cache-mb). */
                { "10240", MiB, lim, 0, UINT64_C(10240) << 20 },
                { "10GiB", MiB, lim, 0, UINT64_C(10) << 30 },
                { "64MiB", 1, 64 << 20, 0, 64 << 20 },
                /* The maximum is inclusive, one more is out of range. */
                { "67108865", 1, 64 << 20, -ERANGE, 0 },
                { "65MiB", 1, 64 << 20, -ERANGE, 0 },
                { "2GiB", 1, 1 << 30, -ERANGE, 0 },
                { "99999999999999999999", 1, UINT64_MAX, -ERANGE, 0 },
                { "17179869184GiB", 1, UINT64_MAX, -ERANGE, 0 },
                /* Not sizes: ambiguous or wrong units, signs, spaces, fractions, hex. */
                { "", 1, 1 << 30, -EINVAL, 0 },
                { "MiB", 1, 1 << 30, -EINVAL, 0 },
                { "10M", 1, 1 << 30, -EINVAL, 0 },
                { "10K", 1, 1 << 30, -EINVAL, 0 },
                { "10KB", 1, 1 << 30, -EINVAL, 0 },
                { "10mb", 1, 1 << 30, -EINVAL, 0 },
                { "10mib", 1, 1 << 30, -EINVAL, 0 },
                { "10Mi", 1, 1 << 30, -EINVAL, 0 },
                { "10 MiB", 1, 1 << 30, -EINVAL, 0 },
                { " 10", 1, 1 << 30, -EINVAL, 0 },
                { "-1", 1, 1 << 30, -EINVAL, 0 },
                { "+1", 1, 1 << 30, -EINVAL, 0 },
                { "1.5GiB", 1, UINT64_MAX, -EINVAL, 0 },
                { "0x10", 1, 1 << 30, -EINVAL, 0 },
                { "10MiBs", 1, 1 << 30, -EINVAL, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                uint64_t got = 12345;
                int r = bc_parse_size(cases[i].in, cases[i].unit, cases[i].max, &got);
                if (r != cases[i].want_r)
                        fail_msg("'%s': returned %d, want %d", cases[i].in, r, cases[i].want_r);
                if (r == 0 && got != cases[i].want)
                        fail_msg("'%s': %llu, want %llu", cases[i].in, (unsigned long long)got,
                                 (unsigned long long)cases[i].want);
                if (r < 0 && got != 12345)
                        fail_msg("'%s': refused but wrote the result", cases[i].in);
        }
        assert_int_equal(bc_parse_size(NULL, 1, 1, &(uint64_t){ 0 }), -EINVAL);
}

static int64_t timespec_ns(struct timespec t)
{
        return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void check_after_ms(clockid_t clk, struct timespec (*after)(uint64_t), const char *name)
{
        const uint64_t cases[] = { 0, 1, 999, 1000, 1500, 2999, 86400000 };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct timespec before, later;
                clock_gettime(clk, &before);
                struct timespec d = after(cases[i]);
                clock_gettime(clk, &later);
                int64_t want = (int64_t)cases[i] * 1000000;
                if (d.tv_nsec < 0 || d.tv_nsec >= 1000000000)
                        fail_msg("%s, %llu ms: tv_nsec %ld not normalized", name,
                                 (unsigned long long)cases[i], d.tv_nsec);
                if (timespec_ns(d) < timespec_ns(before) + want ||
                    timespec_ns(d) > timespec_ns(later) + want)
                        fail_msg("%s, %llu ms: the deadline is not that far from now", name,
                                 (unsigned long long)cases[i]);
        }
}

static void test_deadline_after_ms(void **state)
{
        (void)state;
        check_after_ms(CLOCK_REALTIME, bc_realtime_after_ms, "realtime");
        check_after_ms(CLOCK_MONOTONIC, bc_monotonic_after_ms, "monotonic");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dynbuf_cap),    cmocka_unit_test(test_tailbuf_table),
                cmocka_unit_test(test_utf8_sanitize), cmocka_unit_test(test_error_context),
                cmocka_unit_test(test_json_strict),   cmocka_unit_test(test_mkdir_p),
                cmocka_unit_test(test_parse_size),    cmocka_unit_test(test_deadline_after_ms),
        };
        return cmocka_run_group_tests_name("common", tests, NULL, NULL);
}
