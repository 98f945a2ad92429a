/* Unit tests for worker/job/progress (the line parser and the rate
 * limiter) and progress_fifo (the channel): which lines become reports,
 * what is refused and said once, how reports are coalesced (the latest
 * wins, one per PROGRESS_INTERVAL_MS, the last always stored), what a
 * store the database did not take becomes, and that a FIFO a job writes
 * to carries its lines and never blocks the reader.  The clock is the
 * test's; the store is a sink of the test's. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "worker/job/progress.h"
#include "worker/job/progress_fifo.h"

struct sink {
        char stored[16][256];
        size_t n_stored;
        int fail; /* the next stores fail this many times */
        size_t tries;
        char warned[8][512];
        char warn_kind[8][32];
        size_t n_warned;
};

static int sink_store(void *ctx, const char *json, struct bc_error *err)
{
        struct sink *s = ctx;
        s->tries++;
        if (s->fail > 0) {
                s->fail--;
                return bc_error_set(err, BC_INTERNAL, EIO, "database away");
        }
        assert_true(s->n_stored < 16);
        snprintf(s->stored[s->n_stored++], sizeof(s->stored[0]), "%s", json);
        return 0;
}

static void sink_warn(void *ctx, const char *kind, const char *details)
{
        struct sink *s = ctx;
        assert_true(s->n_warned < 8);
        snprintf(s->warn_kind[s->n_warned], sizeof(s->warn_kind[0]), "%s", kind);
        snprintf(s->warned[s->n_warned++], sizeof(s->warned[0]), "%s", details);
}

static void feed(struct progress *p, const char *text, uint64_t now)
{
        progress_feed(p, text, strlen(text), now);
}

/* Lines and whether each becomes a report, with the reason of a refusal. */
static void test_lines(void **state)
{
        (void)state;
        static const struct {
                const char *line;
                const char *refused; /* NULL: stored */
        } cases[] = {
                { "{\"pct\": 50}", NULL },
                { "  {\"a\": [1, {\"b\": null}]}\r", NULL },
                { "{}", NULL },
                { "not json", "not_json" },
                { "{\"a\": 1", "not_json" },
                { "{\"a\": 1} {\"b\": 2}", "not_json" },
                { "{\"a\": \"\\u0000\"}", "not_json" }, /* jsonb refuses \u0000 */
                { "{\"a\": \"\xff\"}", "not_json" },    /* not UTF-8 */
                { "{\"a\": 01}", "not_json" },          /* jsonb refuses it */
                { "[1, 2]", "not_object" },
                { "\"text\"", "not_object" },
                { "42", "not_object" },
                { "null", "not_object" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct sink s = { 0 };
                struct progress p;
                progress_init(&p, sink_store, sink_warn, &s);
                feed(&p, cases[i].line, 1000);
                feed(&p, "\n", 1000);
                progress_finish(&p, 1000);
                if (!cases[i].refused) {
                        assert_int_equal(s.n_stored, 1);
                        assert_int_equal(s.n_warned, 0);
                } else {
                        assert_int_equal(s.n_stored, 0);
                        assert_int_equal(s.n_warned, 2); /* the refusal, then the counts */
                        assert_string_equal(s.warn_kind[0], "progress_refused");
                        char reason[64];
                        snprintf(reason, sizeof(reason), "\"reason\":\"%s\"", cases[i].refused);
                        if (!strstr(s.warned[0], reason))
                                fail_msg("line %zu (%s): %s", i, cases[i].line, s.warned[0]);
                        assert_string_equal(s.warn_kind[1], "progress_counts");
                }
                progress_done(&p);
        }
}

/* A blank line is nothing; a line split over many writes is one line;
 * the last one without its newline is taken at the end. */
static void test_framing(void **state)
{
        (void)state;
        struct sink s = { 0 };
        struct progress p;
        progress_init(&p, sink_store, sink_warn, &s);
        feed(&p, "\n   \n{\"a\"", 0);
        feed(&p, ": 1}", 0);
        assert_int_equal(s.n_stored, 0);
        feed(&p, "\n", 0);
        assert_int_equal(s.n_stored, 1);
        assert_string_equal(s.stored[0], "{\"a\": 1}");
        feed(&p, "{\"b\": 2}", 10000);
        progress_finish(&p, 10000);
        assert_int_equal(s.n_stored, 2);
        assert_string_equal(s.stored[1], "{\"b\": 2}");
        assert_int_equal(s.n_warned, 0);
        progress_done(&p);
}

/* A line over the cap, fed in pieces far larger than the cap, is dropped
 * with one warning, and the next line is read as usual; a line exactly at
 * the cap is taken. */
static void test_long_lines(void **state)
{
        (void)state;
        struct sink s = { 0 };
        struct progress p;
        progress_init(&p, sink_store, sink_warn, &s);
        char *big = malloc(1 << 20);
        assert_non_null(big);
        memset(big, 'a', 1 << 20);
        for (int i = 0; i < 3; i++)
                progress_feed(&p, big, 1 << 20, 0);
        feed(&p, "\n{\"after\": 1}\n", 0);
        progress_feed(&p, big, PROGRESS_LINE_MAX + 1, 0); /* another, just over */
        feed(&p, "\n", 0);
        assert_int_equal(s.n_stored, 1);
        assert_string_equal(s.stored[0], "{\"after\": 1}");
        assert_int_equal(s.n_warned, 1);
        assert_non_null(strstr(s.warned[0], "\"reason\":\"too_long\""));
        assert_non_null(strstr(s.warned[0], "\"line\":1"));
        assert_int_equal(p.refused[PROGRESS_TOO_LONG], 2);
        /* Exactly PROGRESS_LINE_MAX bytes: {"x": "aaa...a"} */
        memcpy(big, "{\"x\": \"", 7);
        memcpy(big + PROGRESS_LINE_MAX - 2, "\"}", 2);
        progress_feed(&p, big, PROGRESS_LINE_MAX, 5000);
        feed(&p, "\n", 5000);
        assert_int_equal(s.n_stored, 2);
        assert_int_equal(strlen(s.stored[1]), 255); /* the sink's copy is cut, not the report */
        progress_finish(&p, 5000);
        assert_int_equal(s.n_warned, 2);
        assert_string_equal(s.warn_kind[1], "progress_counts");
        assert_non_null(strstr(s.warned[1], "\"too_long\":2"));
        free(big);
        progress_done(&p);
}

/* Many bad lines: one warning per reason, not one per line. */
static void test_refusals_said_once(void **state)
{
        (void)state;
        struct sink s = { 0 };
        struct progress p;
        progress_init(&p, sink_store, sink_warn, &s);
        for (int i = 0; i < 1000; i++)
                feed(&p, "nope\n[1]\n", 0);
        assert_int_equal(s.n_warned, 2);
        assert_non_null(strstr(s.warned[0], "not_json"));
        assert_non_null(strstr(s.warned[1], "not_object"));
        progress_finish(&p, 0);
        assert_int_equal(s.n_warned, 3);
        assert_non_null(strstr(s.warned[2], "\"not_json\":1000"));
        assert_non_null(strstr(s.warned[2], "\"not_object\":1000"));
        progress_done(&p);
}

/* The rate limit: the first report at once, then at most one per
 * interval, the latest winning; the waiting one goes on a tick once its
 * turn came, and at the end whatever the interval. */
static void test_rate_limit(void **state)
{
        (void)state;
        struct sink s = { 0 };
        struct progress p;
        progress_init(&p, sink_store, sink_warn, &s);
        feed(&p, "{\"n\": 1}\n", 1000);
        assert_int_equal(s.n_stored, 1);
        feed(&p, "{\"n\": 2}\n{\"n\": 3}\n", 1100);
        feed(&p, "{\"n\": 4}\n", 1200);
        assert_int_equal(s.n_stored, 1);
        progress_tick(&p, 1499);
        assert_int_equal(s.n_stored, 1);
        progress_tick(&p, 1000 + PROGRESS_INTERVAL_MS);
        assert_int_equal(s.n_stored, 2);
        assert_string_equal(s.stored[1], "{\"n\": 4}");
        assert_int_equal(p.replaced, 2);
        /* Due when it comes: stored at once. */
        feed(&p, "{\"n\": 5}\n", 3000);
        assert_int_equal(s.n_stored, 3);
        /* Not due, but the job ended: stored anyway. */
        feed(&p, "{\"n\": 6}\n", 3010);
        assert_int_equal(s.n_stored, 3);
        progress_finish(&p, 3020);
        assert_int_equal(s.n_stored, 4);
        assert_string_equal(s.stored[3], "{\"n\": 6}");
        assert_int_equal(s.n_warned, 0);
        progress_done(&p);
}

/* A store the database did not take: tried again after
 * PROGRESS_RETRY_MS (with the latest report by then), once more at the
 * end, then counted as failed. */
static void test_store_failures(void **state)
{
        (void)state;
        struct sink s = { .fail = 1 };
        struct progress p;
        progress_init(&p, sink_store, sink_warn, &s);
        feed(&p, "{\"n\": 1}\n", 1000);
        assert_int_equal(s.tries, 1);
        assert_int_equal(s.n_stored, 0);
        progress_tick(&p, 1000 + PROGRESS_RETRY_MS - 1);
        assert_int_equal(s.tries, 1);
        feed(&p, "{\"n\": 2}\n", 1500);
        progress_tick(&p, 1000 + PROGRESS_RETRY_MS);
        assert_int_equal(s.n_stored, 1);
        assert_string_equal(s.stored[0], "{\"n\": 2}");
        s.fail = 5;
        feed(&p, "{\"n\": 3}\n", 9000);
        progress_finish(&p, 9001);
        assert_int_equal(s.tries, 4);
        assert_int_equal(p.failed, 1);
        assert_null(p.pending);
        progress_done(&p);
}

/* The FIFO: lines written by several writers, opening and closing, reach
 * the reader; the reader never waits on an empty channel; the job's
 * writes are never refused for want of a reader; at close the FIFO is
 * gone and the last report stored. */
static void test_fifo(void **state)
{
        (void)state;
        char dir[] = "/tmp/test_progress_XXXXXX";
        assert_non_null(mkdtemp(dir));
        struct sink s = { 0 };
        struct progress_fifo f;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(progress_fifo_open(dir, "progress", &f, &err), 0);
        progress_init(&f.p, sink_store, sink_warn, &s);
        char path[64];
        snprintf(path, sizeof(path), "%s/progress", dir);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_true(S_ISFIFO(st.st_mode));
        assert_int_equal(st.st_mode & 0777, 0622);
        progress_fifo_poll(&f, 0); /* nothing there: returns at once */
        for (int i = 1; i <= 3; i++) {
                int w = open(path, O_WRONLY | O_CLOEXEC);
                assert_true(w >= 0);
                char line[32];
                int n = snprintf(line, sizeof(line), "{\"n\": %d}\n", i);
                assert_int_equal(write(w, line, (size_t)n), n);
                close(w);
        }
        progress_fifo_poll(&f, 0);
        assert_int_equal(s.n_stored, 1);
        assert_string_equal(s.stored[0], "{\"n\": 1}");
        /* A full pipe: a non-blocking writer gets EAGAIN, never waits. */
        int w = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(w >= 0);
        char junk[4096];
        memset(junk, 'x', sizeof(junk));
        ssize_t r = 0;
        for (int i = 0; i < 1000 && r >= 0; i++)
                r = write(w, junk, sizeof(junk));
        assert_true(r < 0 && errno == EAGAIN);
        progress_fifo_poll(&f, 10); /* drained: the junk is one long line */
        assert_int_equal(write(w, "\n{\"n\": 9}\n", 10), 10);
        close(w);
        progress_fifo_close(&f, 20);
        assert_int_equal(s.n_stored, 2);
        assert_string_equal(s.stored[1], "{\"n\": 9}");
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(f.rfd, -1);
        progress_fifo_close(&f, 30); /* twice: nothing */
        rmdir(dir);
}

/* A FIFO made ahead (a kept job directory's: ours, 0600, never opened)
 * is taken as it is; one a job had (0622) or anything else of the name
 * is replaced.  A descriptor held on the old one tells which: while it
 * is open its inode cannot be the new one's. */
static void test_fifo_made_ahead(void **state)
{
        (void)state;
        char dir[] = "/tmp/test_progress_XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[64];
        snprintf(path, sizeof(path), "%s/progress", dir);
        struct bc_error err = BC_ERROR_INIT;
        struct stat held, now;
        const mode_t modes[] = { 0600, 0622 };
        for (size_t i = 0; i < 2; i++) {
                struct sink s = { 0 };
                struct progress_fifo f;
                assert_int_equal(mkfifo(path, 0600), 0);
                assert_int_equal(chmod(path, modes[i]), 0);
                int old = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
                assert_true(old >= 0);
                assert_int_equal(fstat(old, &held), 0);
                assert_int_equal(progress_fifo_open(dir, "progress", &f, &err), 0);
                progress_init(&f.p, sink_store, sink_warn, &s);
                assert_int_equal(stat(path, &now), 0);
                assert_true(S_ISFIFO(now.st_mode));
                assert_int_equal(now.st_mode & 0777, 0622);
                bool taken = now.st_ino == held.st_ino;
                assert_int_equal(taken, modes[i] == 0600);
                /* What is written to the old one reaches the reader only
                 * when it was taken. */
                assert_int_equal(write(old, "{\"n\": 1}\n", 9), 9);
                progress_fifo_poll(&f, 0);
                assert_int_equal(s.n_stored, taken ? 1 : 0);
                close(old);
                progress_fifo_close(&f, 10);
        }
        /* A regular file of the name: replaced by a FIFO. */
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        struct sink s = { 0 };
        struct progress_fifo f;
        assert_int_equal(progress_fifo_open(dir, "progress", &f, &err), 0);
        progress_init(&f.p, sink_store, sink_warn, &s);
        assert_int_equal(stat(path, &now), 0);
        assert_true(S_ISFIFO(now.st_mode));
        progress_fifo_close(&f, 10);
        rmdir(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lines),      cmocka_unit_test(test_framing),
                cmocka_unit_test(test_long_lines), cmocka_unit_test(test_refusals_said_once),
                cmocka_unit_test(test_rate_limit), cmocka_unit_test(test_store_failures),
                cmocka_unit_test(test_fifo),       cmocka_unit_test(test_fifo_made_ahead),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
