/* Unit tests for agent/spawn.c in this process: fds placed whatever
 * numbers the plan's fds have (ones that are themselves among the child's
 * 0 .. n-1 included, which the agent's own pipes never are, so
 * test_agent cannot reach them), and the report of a child that did not
 * exec, there as soon as spawn_start returns. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/spawn.h"

extern char **environ;

/* What is on the read end of a pipe until EOF (the child has exited and
 * every write end is closed), at most 255 bytes. */
static void read_all(int fd, char *buf, size_t size)
{
        size_t len = 0;
        for (;;) {
                ssize_t n = read(fd, buf + len, size - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                assert_true(n >= 0);
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
}

static int wait_exit(pid_t pid)
{
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        return WEXITSTATUS(st);
}

/* Five pipes; the child reads "in" on 0 and writes "1" … "4" on 1 … 4.
 * The write ends of pipes 3 and 4 are first moved to this process's fds
 * at3 and at4 (3 or 4: the numbers the child must get them on, swapped
 * or not), so the plan holds fds that are also targets. */
static void check_placement(int at3, int at4)
{
        /* 3 and 4 are held while the pipes are made, so that none of
         * them gets those numbers (this process has nothing else open
         * past 2). */
        assert_int_equal(open("/dev/null", O_RDONLY | O_CLOEXEC), 3);
        assert_int_equal(open("/dev/null", O_RDONLY | O_CLOEXEC), 4);
        int p[5][2];
        for (int i = 0; i < 5; i++)
                assert_int_equal(pipe2(p[i], O_CLOEXEC), 0);
        assert_int_equal(dup3(p[3][1], at3, O_CLOEXEC), at3);
        assert_int_equal(dup3(p[4][1], at4, O_CLOEXEC), at4);
        close(p[3][1]);
        close(p[4][1]);
        p[3][1] = at3;
        p[4][1] = at4;
        assert_int_equal(write(p[0][1], "in", 2), 2);
        close(p[0][1]);
        char *argv[] = { "sh", "-c", "cat; echo 2 >&2; echo 3 >&3; echo 4 >&4", NULL };
        struct spawn_plan plan = { .argv = argv,
                                   .env = environ,
                                   .fds = { p[0][0], p[1][1], p[2][1], p[3][1], p[4][1] },
                                   .n_fds = 5 };
        pid_t pid;
        struct spawn_report rep;
        assert_int_equal(spawn_start(&plan, &pid, &rep), 0);
        if (rep.step != SPAWN_STEP_NONE)
                fail_msg("step %c: %s", rep.step, strerror(rep.err));
        close(p[0][0]);
        for (int i = 1; i < 5; i++)
                close(p[i][1]);
        const char *want[] = { NULL, "in", "2\n", "3\n", "4\n" };
        for (int i = 1; i < 5; i++) {
                char buf[256];
                read_all(p[i][0], buf, sizeof(buf));
                close(p[i][0]);
                if (strcmp(buf, want[i]) != 0)
                        fail_msg("fd %d (plan fds at %d, %d): got \"%s\", want \"%s\"", i, at3,
                                 at4, buf, want[i]);
        }
        assert_int_equal(wait_exit(pid), 0);
}

/* A plan fd already at its place (a dup2 onto itself would leave it
 * close-on-exec), and two swapped (a dup2 that overwrites the next one's
 * source). */
static void test_fd_placement(void **state)
{
        (void)state;
        check_placement(3, 4);
        check_placement(4, 3);
}

/* Runs argv in cwd with fds 0-2 on /dev/null: the report and exit code. */
static int start_failing(char *const *argv, const char *cwd, struct spawn_report *rep)
{
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        assert_true(null >= 0);
        struct spawn_plan plan = { .argv = argv,
                                   .env = environ,
                                   .cwd = cwd,
                                   .fds = { null, null, null },
                                   .n_fds = 3 };
        pid_t pid;
        assert_int_equal(spawn_start(&plan, &pid, rep), 0);
        close(null);
        return wait_exit(pid);
}

static void test_report(void **state)
{
        (void)state;
        struct spawn_report rep;
        char *missing[] = { "no-such-command-boxcar", NULL };
        assert_int_equal(start_failing(missing, NULL, &rep), 127);
        assert_int_equal(rep.step, SPAWN_STEP_EXEC);
        assert_int_equal(rep.err, ENOENT);
        char *notexec[] = { "/dev/null", NULL };
        assert_int_equal(start_failing(notexec, NULL, &rep), 126);
        assert_int_equal(rep.step, SPAWN_STEP_EXEC);
        assert_int_equal(rep.err, EACCES);
        char *t[] = { "true", NULL };
        assert_int_equal(start_failing(t, "/nonexistent-boxcar", &rep), 127);
        assert_int_equal(rep.step, SPAWN_STEP_CHDIR);
        assert_int_equal(rep.err, ENOENT);
        assert_int_equal(start_failing(t, "/", &rep), 0);
        assert_int_equal(rep.step, SPAWN_STEP_NONE);
}

int main(void)
{
        spawn_init();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fd_placement),
                cmocka_unit_test(test_report),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
