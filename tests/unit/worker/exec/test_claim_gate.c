/* Unit tests for worker/exec/claim_gate.c: slots wait for their claim's
 * commit, a warm sandbox's go fd becomes readable only when it committed,
 * and the gate lives until its last job lets it go. */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "worker/exec/claim_gate.h"

static bool readable(int fd)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

struct waiter {
        struct claim_gate *g;
        bool committed;
};

static void *wait_thread(void *arg)
{
        struct waiter *w = arg;
        w->committed = claim_gate_wait(w->g);
        claim_gate_unref(w->g);
        return NULL;
}

/* Waiters on other threads block until the gate is decided, then all see
 * the decision; the last reference frees the gate (ASan, valgrind). */
static void run_waiters(bool decision)
{
        enum { N = 4 };
        struct claim_gate *g = claim_gate_new(N + 1);
        assert_non_null(g);
        struct waiter w[N];
        pthread_t t[N];
        for (int i = 0; i < N; i++) {
                w[i] = (struct waiter){ .g = g, .committed = !decision };
                assert_int_equal(pthread_create(&t[i], NULL, wait_thread, &w[i]), 0);
        }
        nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
        assert_false(readable(claim_gate_fd(g)));
        claim_gate_decide(g, decision);
        assert_int_equal(readable(claim_gate_fd(g)), decision);
        /* Decided once: a second decision changes nothing. */
        claim_gate_decide(g, !decision);
        assert_int_equal(readable(claim_gate_fd(g)), decision);
        assert_int_equal(claim_gate_wait(g), decision);
        claim_gate_unref(g);
        for (int i = 0; i < N; i++) {
                assert_int_equal(pthread_join(t[i], NULL), 0);
                assert_int_equal(w[i].committed, decision);
        }
}

static void test_committed_opens_for_all(void **state)
{
        (void)state;
        run_waiters(true);
}

static void test_not_committed_never_makes_go_readable(void **state)
{
        (void)state;
        run_waiters(false);
}

/* A claim that was durable when its rows came has no gate. */
static void test_no_gate_is_committed(void **state)
{
        (void)state;
        assert_true(claim_gate_wait(NULL));
        assert_int_equal(claim_gate_fd(NULL), -1);
        claim_gate_decide(NULL, false);
        claim_gate_unref(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_committed_opens_for_all),
                cmocka_unit_test(test_not_committed_never_makes_go_readable),
                cmocka_unit_test(test_no_gate_is_committed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
