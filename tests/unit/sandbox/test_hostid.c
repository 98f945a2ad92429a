/* The host id allocator (sandbox/hostid.c): the range grammar, the check
 * against a fake /etc, and the lock files: held ids are skipped, a range
 * runs out with a clear error, a released or killed holder's id is free
 * again, and another process can never take an id a live one holds. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/error.h"
#include "sandbox/sandbox.h"

static void test_parse_table(void **state)
{
        (void)state;
        static const struct {
                const char *in;
                int want_r;
                uint32_t first, count;
        } cases[] = {
                { "1879048192-1879113727", 0, 1879048192u, 65536 },
                { "100000-100000", 0, 100000, 1 },
                { "70000-4294967294", 0, 70000, 4294967294u - 70000 + 1 },
                { "0-10", -EINVAL, 0, 0 },                  /* root */
                { "60000-70000", -EINVAL, 0, 0 },           /* nobody */
                { "65535-65535", -EINVAL, 0, 0 },           /* 16-bit -1 */
                { "5-4294967295", -EINVAL, 0, 0 },          /* (uid_t)-1 */
                { "200-100", -EINVAL, 0, 0 },               /* LAST < FIRST */
                { "100", -EINVAL, 0, 0 },                   /* no dash */
                { "-100", -EINVAL, 0, 0 },                  /* no FIRST */
                { "100-", -EINVAL, 0, 0 },                  /* no LAST */
                { "1e3-2000", -EINVAL, 0, 0 },              /* not decimal */
                { " 100-200", -EINVAL, 0, 0 },              /* spaces */
                { "100-200x", -EINVAL, 0, 0 },              /* trailing junk */
                { "4294967296-4294967297", -EINVAL, 0, 0 }, /* overflow */
                { "", -EINVAL, 0, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct sandbox_id_range r = { 7, 7 };
                struct bc_error err = BC_ERROR_INIT;
                print_message("# range '%s'\n", cases[i].in);
                assert_int_equal(sandbox_id_range_parse(cases[i].in, &r, &err), cases[i].want_r);
                if (cases[i].want_r == 0) {
                        assert_int_equal(r.first, cases[i].first);
                        assert_int_equal(r.count, cases[i].count);
                } else {
                        assert_int_equal(err.code, BC_USAGE);
                        assert_non_null(strstr(bc_error_message(&err), cases[i].in));
                        assert_int_equal(r.first, 7); /* untouched */
                }
                bc_error_clear(&err);
        }
}

/* On the caller's stack, not the heap: the tests fork, and a child that
 * exits would report an inherited copy as lost under valgrind. */
#define TMP_DIR_TEMPLATE "/tmp/boxcar-hostid.XXXXXX"
static char *tmp_dir(char d[static sizeof(TMP_DIR_TEMPLATE)])
{
        memcpy(d, TMP_DIR_TEMPLATE, sizeof(TMP_DIR_TEMPLATE));
        assert_non_null(mkdtemp(d));
        return d;
}

static void write_file(const char *dir, const char *name, const char *text)
{
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void test_check_host(void **state)
{
        (void)state;
        char etc_buf[sizeof(TMP_DIR_TEMPLATE)];
        char *etc = tmp_dir(etc_buf);
        write_file(etc, "passwd",
                   "root:x:0:0:root:/root:/bin/sh\n"
                   "# a comment\n"
                   "svc:x:500000:500010::/:/bin/false\n"
                   "nobody:x:65534:65534::/:/bin/false\n");
        write_file(etc, "group", "root:x:0:\ngrp:x:600000:\n");
        write_file(etc, "subuid", "alice:100000:65536\n");
        static const struct {
                struct sandbox_id_range r;
                const char *want; /* NULL: accepted */
        } cases[] = {
                { { 1879048192u, 65536 }, NULL },
                { { 499990, 20 }, "passwd's entry 'svc'" }, /* its uid */
                { { 500005, 10 }, "passwd's entry 'svc'" }, /* its primary gid */
                { { 599999, 2 }, "group's entry 'grp'" },
                { { 165535, 10 }, "subuid's entry 'alice'" }, /* the last subordinate id */
                { { 165536, 10 }, NULL },                     /* just above */
                { { 90000, 10000 }, NULL },                   /* just below */
                { { 90000, 10001 }, "subuid's entry 'alice'" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct bc_error err = BC_ERROR_INIT;
                int r = sandbox_id_range_check_host(&cases[i].r, etc, &err);
                print_message("# %u+%u: %s\n", cases[i].r.first, cases[i].r.count,
                              r < 0 ? bc_error_message(&err) : "accepted");
                if (!cases[i].want) {
                        assert_int_equal(r, 0);
                } else {
                        assert_int_equal(r, -EEXIST);
                        assert_non_null(strstr(bc_error_message(&err), cases[i].want));
                }
                bc_error_clear(&err);
        }
        /* Cached: the first check reads and stamps, the next only stats;
         * an account added in the range since is found all the same. */
        char locks[512];
        snprintf(locks, sizeof(locks), "%s/locks", etc);
        const struct sandbox_id_range dflt = { 1879048192u, 65536 };
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(sandbox_id_range_check_host_cached(&dflt, etc, locks, &err), 0);
        char stamp[600];
        snprintf(stamp, sizeof(stamp), "%s/checked-1879048192-65536", locks);
        assert_int_equal(access(stamp, F_OK), 0);
        assert_int_equal(sandbox_id_range_check_host_cached(&dflt, etc, locks, &err), 0);
        write_file(etc, "passwd", "late:x:1879048200:1879048200::/:/bin/false\n");
        assert_int_equal(sandbox_id_range_check_host_cached(&dflt, etc, locks, &err), -EEXIST);
        assert_non_null(strstr(bc_error_message(&err), "'late'"));
        bc_error_clear(&err);
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", etc);
        assert_int_equal(system(cmd), 0);
}

/* In a child: takes an id of r, reports it on fd, then waits to be
 * killed (or, with release, gives it back and exits). */
static pid_t holder(const char *dir, const struct sandbox_id_range *r, int fd, bool release)
{
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid > 0)
                return pid;
        uint32_t id = 0;
        int lock = -1;
        struct bc_error err = BC_ERROR_INIT;
        int64_t got = sandbox_id_acquire(dir, r, &id, &lock, &err) < 0 ? -1 : (int64_t)id;
        if (write(fd, &got, sizeof(got)) != (ssize_t)sizeof(got))
                _exit(2);
        if (release) {
                sandbox_id_release(lock);
                _exit(0);
        }
        for (;;)
                pause();
}

static int64_t read_id(int fd)
{
        int64_t v = -2;
        assert_int_equal(read(fd, &v, sizeof(v)), (ssize_t)sizeof(v));
        return v;
}

static void test_acquire(void **state)
{
        (void)state;
        char base_buf[sizeof(TMP_DIR_TEMPLATE)];
        char *base = tmp_dir(base_buf);
        char dir[512];
        snprintf(dir, sizeof(dir), "%s/run/ids", base); /* made, parents too */
        const struct sandbox_id_range r = { 1879048192u, 3 };
        int p[2];
        assert_int_equal(pipe(p), 0);
        /* Three holders in other processes take the three ids, distinct. */
        pid_t pids[3];
        int64_t ids[3];
        for (int i = 0; i < 3; i++) {
                pids[i] = holder(dir, &r, p[1], false);
                ids[i] = read_id(p[0]);
                assert_true(ids[i] >= r.first && ids[i] < r.first + r.count);
                for (int j = 0; j < i; j++)
                        assert_true(ids[i] != ids[j]);
        }
        struct stat st;
        assert_int_equal(stat(dir, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0700);
        /* A fourth finds none, and says so. */
        uint32_t id = 0;
        int fd = -1;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(sandbox_id_acquire(dir, &r, &id, &fd, &err), -EAGAIN);
        assert_non_null(strstr(bc_error_message(&err), "is in use by a sandbox"));
        bc_error_clear(&err);
        /* SIGKILL one: its id, and only it, is free again. */
        kill(pids[1], SIGKILL);
        waitpid(pids[1], NULL, 0);
        assert_int_equal(sandbox_id_acquire(dir, &r, &id, &fd, &err), 0);
        assert_int_equal((int64_t)id, ids[1]);
        /* Released, it is free for another process. */
        sandbox_id_release(fd);
        pid_t again = holder(dir, &r, p[1], true);
        assert_int_equal(read_id(p[0]), ids[1]);
        waitpid(again, NULL, 0);
        for (int i = 0; i < 3; i++)
                if (i != 1) {
                        kill(pids[i], SIGKILL);
                        waitpid(pids[i], NULL, 0);
                }
        /* A lock directory others may write is refused. */
        assert_int_equal(chmod(dir, 0777), 0);
        assert_int_equal(sandbox_id_acquire(dir, &r, &id, &fd, &err), -EPERM);
        assert_non_null(strstr(bc_error_message(&err), "writable by no one else"));
        bc_error_clear(&err);
        close(p[0]);
        close(p[1]);
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        assert_int_equal(system(cmd), 0);
}

/* Many processes racing for a small range with releases in between: no id
 * is ever held twice at once (each holder checks the lock file it holds is
 * the one at its name, and marks the id while it holds it). */
static void test_race(void **state)
{
        (void)state;
        char base_buf[sizeof(TMP_DIR_TEMPLATE)];
        char *base = tmp_dir(base_buf);
        char dir[512], marks[512];
        snprintf(dir, sizeof(dir), "%s/ids", base);
        snprintf(marks, sizeof(marks), "%s/marks", base);
        assert_int_equal(mkdir(marks, 0700), 0);
        const struct sandbox_id_range r = { 1879048192u, 4 };
        pid_t kids[8];
        for (int k = 0; k < 8; k++) {
                kids[k] = fork();
                assert_true(kids[k] >= 0);
                if (kids[k] > 0)
                        continue;
                int bad = 0;
                for (int i = 0; i < 200; i++) {
                        uint32_t id;
                        int fd;
                        struct bc_error err = BC_ERROR_INIT;
                        if (sandbox_id_acquire(dir, &r, &id, &fd, &err) < 0) {
                                bc_error_clear(&err);
                                continue; /* all four held: fine */
                        }
                        char m[600];
                        snprintf(m, sizeof(m), "%s/%u", marks, id);
                        int mfd = open(m, O_CREAT | O_EXCL | O_WRONLY, 0600);
                        if (mfd < 0)
                                bad++; /* someone else holds it too */
                        else {
                                close(mfd);
                                unlink(m);
                        }
                        sandbox_id_release(fd);
                }
                _exit(bad ? 1 : 0);
        }
        for (int k = 0; k < 8; k++) {
                int st;
                waitpid(kids[k], &st, 0);
                assert_true(WIFEXITED(st));
                assert_int_equal(WEXITSTATUS(st), 0);
        }
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        assert_int_equal(system(cmd), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_table),
                cmocka_unit_test(test_check_host),
                cmocka_unit_test(test_acquire),
                cmocka_unit_test(test_race),
        };
        return cmocka_run_group_tests_name("sandbox_hostid", tests, NULL, NULL);
}
