/* Unit tests for worker/exec/proc.c's report path: a child that reports
 * its end on a pipe and closes it before its own teardown is done for the
 * caller at once, and the reaper collects it afterwards. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include <cmocka.h>

#include "worker/exec/proc.h"
#include "worker/exec/proc_reaper.h"

/* 'R' (running) or 'S' (sleeping), 'Z' (a zombie), or 0: no such process. */
static char proc_state(pid_t pid)
{
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (!f)
                return 0;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *paren = strrchr(buf, ')');
        return paren && paren[1] == ' ' ? paren[2] : 0;
}

/* Runs sh -c script with a report pipe on fd 3; returns the pid it wrote. */
static pid_t run_reporting(const char *script, struct proc_outcome *o, struct dynbuf *report)
{
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
        char *envp[] = { "PATH=/usr/bin:/bin", NULL };
        dynbuf_init(report, 65536);
        struct proc_request req = {
                .argv = argv,
                .envp = envp,
                .timeout_s = 20,
                .output_cap = 4096,
                .cancel_fd = -1,
                .kill_signal = SIGKILL,
                .pass_fd = p[1],
                .report = report,
                .report_fd = p[0],
                .child_end = p[1],
        };
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(proc_run(&req, o, &err), 0);
        close(p[0]);
        size_t n = 0;
        char *e = tailbuf_copy(&o->err, &n);
        if (e && n)
                fprintf(stderr, "# stderr: %.*s\n", (int)n, e);
        free(e);
        return (pid_t)atoi(report->data ? report->data : "0");
}

static void test_report_ends_the_run_before_the_exit(void **state)
{
        (void)state;
        struct proc_outcome o;
        struct dynbuf report;
        pid_t pid = run_reporting("echo out; echo $$ >&3; exec 3>&- >/dev/null 2>&1; sleep 1", &o,
                                  &report);
        assert_true(pid > 0);
        assert_true(o.reaped_later);
        assert_int_equal(o.out.len, 4);
        /* Still in its "teardown": alive, not a zombie, our child. */
        char st = proc_state(pid);
        assert_true(st != 0 && st != 'Z');
        assert_int_equal(proc_reaper_drain(10), 0);
        assert_int_equal(proc_state(pid), 0);
        proc_outcome_done(&o);
        dynbuf_done(&report);
}

static void test_stuck_teardown_is_killed(void **state)
{
        (void)state;
        struct proc_outcome o;
        struct dynbuf report;
        pid_t pid = run_reporting("echo $$ >&3; exec 3>&-; exec sleep 60", &o, &report);
        assert_true(o.reaped_later);
        assert_int_equal(proc_reaper_drain(0.2), 1);
        assert_int_equal(proc_state(pid), 0);
        proc_outcome_done(&o);
        dynbuf_done(&report);
}

static void test_no_report_waits_for_the_exit(void **state)
{
        (void)state;
        struct proc_outcome o;
        struct dynbuf report;
        run_reporting("exec 3>&-; echo gone; exit 7", &o, &report);
        assert_false(o.reaped_later);
        assert_int_equal(o.exit_code, 7);
        assert_int_equal(report.len, 0);
        assert_int_equal(proc_reaper_drain(0), 0);
        proc_outcome_done(&o);
        dynbuf_done(&report);
}

static void test_report_written_then_exit(void **state)
{
        (void)state;
        struct proc_outcome o;
        struct dynbuf report;
        /* Exits with the report still in the pipe: all of it is read. */
        pid_t pid = run_reporting("echo $$ >&3; printf '%05000d' 0 >&3; exit 3", &o, &report);
        assert_true(pid > 0);
        assert_true(report.len > 5000);
        if (!o.reaped_later)
                assert_int_equal(o.exit_code, 3);
        proc_reaper_drain(10);
        assert_int_equal(proc_state(pid), 0);
        proc_outcome_done(&o);
        dynbuf_done(&report);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_report_ends_the_run_before_the_exit),
                cmocka_unit_test(test_stuck_teardown_is_killed),
                cmocka_unit_test(test_no_report_waits_for_the_exit),
                cmocka_unit_test(test_report_written_then_exit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
