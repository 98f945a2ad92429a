/* A user namespace's placeholder (sandbox/supervisor.c,
 * sbx_sup_placeholder_main) dies with the supervisor that made it: one
 * SIGKILLed before it killed its placeholder must not leave that paused
 * forever.  The supervisor clones it with CLONE_VM; here a plain fork
 * runs the same body (valgrind runs this binary too). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "sandbox/supervisor-internal.h"

/* The control: a placeholder as it was, pausing and nothing else. */
static int pause_only(void *arg)
{
        (void)arg;
        for (;;)
                pause();
        return 0;
}

/* A middle process ("the supervisor") starts a placeholder running body,
 * sends its pid, and is SIGKILLed; this process (a subreaper) inherits
 * the placeholder.  Whether it died within 2 s (reaped); one still
 * running is killed and reaped here. */
static bool dies_with_its_supervisor(int (*body)(void *))
{
        assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t middle = fork();
        assert_true(middle >= 0);
        if (middle == 0) {
                close(p[0]);
                pid_t self = getpid();
                pid_t ph = fork();
                if (ph == 0)
                        _exit(body((void *)(intptr_t)self));
                (void)!write(p[1], &ph, sizeof(ph));
                for (;;)
                        pause();
        }
        close(p[1]);
        pid_t ph = -1;
        assert_int_equal(read(p[0], &ph, sizeof(ph)), (ssize_t)sizeof(ph));
        close(p[0]);
        /* Let it reach its pause (or not: dead either way, see the body). */
        struct timespec pause_ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&pause_ts, NULL);
        kill(middle, SIGKILL);
        assert_int_equal(waitpid(middle, NULL, 0), middle);
        struct timespec tick = { 0, 10 * 1000 * 1000 };
        for (int i = 0; i < 200; i++) {
                pid_t r = waitpid(ph, NULL, WNOHANG);
                if (r == ph)
                        return true;
                assert_int_equal(r, 0);
                nanosleep(&tick, NULL);
        }
        kill(ph, SIGKILL);
        assert_int_equal(waitpid(ph, NULL, 0), ph);
        return false;
}

static void test_placeholder_dies_with_supervisor(void **state)
{
        (void)state;
        assert_true(dies_with_its_supervisor(sbx_sup_placeholder_main));
}

/* Without its parent-death signal it stays: what the check above is for. */
static void test_control_pause_only_stays(void **state)
{
        (void)state;
        assert_false(dies_with_its_supervisor(pause_only));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_placeholder_dies_with_supervisor),
                cmocka_unit_test(test_control_pause_only_stays),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
