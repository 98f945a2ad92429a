/* Unit tests for worker/workdir/janitor.c: work handed over runs exactly once,
 * in order, off the caller's thread, and drain waits for all of it. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "worker/workdir/janitor.h"

static int ran[200];
static int n_ran;
static pthread_t caller;
static int off_caller;

static void task(void *arg)
{
        nanosleep(&(struct timespec){ 0, 200000 }, NULL);
        ran[n_ran++] = (int)(intptr_t)arg;
        off_caller += !pthread_equal(pthread_self(), caller);
}

static void test_runs_in_order_off_the_caller(void **state)
{
        (void)state;
        caller = pthread_self();
        for (int i = 0; i < 200; i++)
                janitor_run_later(task, (void *)(intptr_t)i);
        janitor_drain();
        assert_int_equal(n_ran, 200);
        for (int i = 0; i < 200; i++)
                assert_int_equal(ran[i], i);
        assert_int_equal(off_caller, 200);
        /* Drained again with nothing queued: returns at once. */
        janitor_drain();
        assert_int_equal(n_ran, 200);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_runs_in_order_off_the_caller),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
