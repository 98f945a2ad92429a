/* Unit tests for worker/exec/sandbox_pool_sizing.c: the pool's target per
 * kind follows the arrival rate times the build time (and what a claim
 * announced), within --warm-sandboxes; a rate that stops decays; more
 * sandboxes are made at once while the rate needs them, never more than
 * MAX_STARTING. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "worker/exec/sandbox_pool-internal.h"

enum { MAX = 64 };

static struct sandbox_warm items[MAX_KINDS][MAX];

static void pool_init(struct sandbox_pool *p, unsigned max)
{
        memset(p, 0, sizeof(*p));
        memset(items, 0, sizeof(items));
        p->max = max;
        p->n_kinds = 2;
        p->build_ms = 10;
        for (size_t i = 0; i < MAX_KINDS; i++) {
                p->kinds[i].network = i == 1 ? SANDBOX_NET_HOST : SANDBOX_NET_NONE;
                p->kinds[i].items = items[i];
        }
}

/* Takes every gap_ms from t0, n of them; returns the time of the last. */
static uint64_t takes(struct pool_kind *k, uint64_t t0, uint64_t gap_ms, unsigned n)
{
        uint64_t t = t0;
        for (unsigned i = 0; i < n; i++, t += gap_ms)
                sbpool_note_take(k, t);
        return t - gap_ms;
}

/* Idle, the "none" kind keeps the prefetch, the "host" kind nothing. */
static void test_idle_prefetch(void **state)
{
        (void)state;
        struct sandbox_pool p;
        pool_init(&p, 10);
        assert_int_equal(sbpool_ahead(&p, 0, 1000), 0);
        assert_int_equal(sbpool_target(&p, 0, 1000), 2);
        assert_int_equal(sbpool_target(&p, 1, 1000), 0);
}

/* 200 takes/s with 30 ms builds: 6 come during a build, so 6 + the
 * prefetch are kept, though only 2 were ever in use at once. */
static void test_rate_times_build(void **state)
{
        (void)state;
        struct sandbox_pool p;
        pool_init(&p, 20);
        p.build_ms = 30;
        p.kinds[0].peak_cur = 2;
        uint64_t t = takes(&p.kinds[0], 1000, 5, 100);
        assert_int_equal(sbpool_ahead(&p, 0, t), 6);
        assert_int_equal(sbpool_target(&p, 0, t), 8);
        /* Capped by --warm-sandboxes. */
        p.max = 5;
        assert_int_equal(sbpool_target(&p, 0, t), 5);
}

/* A stream that stopped: the time since its last take is the gap, and the
 * target falls back to the peak plus the prefetch. */
static void test_rate_decays(void **state)
{
        (void)state;
        struct sandbox_pool p;
        pool_init(&p, 20);
        p.build_ms = 30;
        p.kinds[0].peak_cur = 1;
        uint64_t t = takes(&p.kinds[0], 1000, 5, 100);
        assert_int_equal(sbpool_ahead(&p, 0, t + 300), 1);
        assert_int_equal(sbpool_target(&p, 0, t + 300), 3);
}

/* A claim's announcement counts for the host's "none" kind, for a moment,
 * and each take uses one up (sandbox_pool.c). */
static void test_expected(void **state)
{
        (void)state;
        struct sandbox_pool p;
        pool_init(&p, 20);
        p.expected = 8;
        p.expect_until_ms = 1100;
        assert_int_equal(sbpool_ahead(&p, 0, 1000), 8);
        assert_int_equal(sbpool_target(&p, 0, 1000), 10);
        assert_int_equal(sbpool_ahead(&p, 1, 1000), 0);
        assert_int_equal(sbpool_ahead(&p, 0, 1100), 0);
}

/* sbpool_rebalance plans at least MIN_STARTING at once, more while the
 * rate needs them, at most MAX_STARTING; none while backing off. */
static void test_rebalance_room(void **state)
{
        (void)state;
        struct sandbox_pool p;
        struct planned plan[MAX_STARTING];
        pool_init(&p, MAX);
        assert_int_equal(sbpool_rebalance(&p, 1000, plan), 2);
        /* 1000 takes/s with 10 ms builds: 10 during one. */
        pool_init(&p, MAX);
        p.kinds[0].peak_cur = 8;
        uint64_t t = takes(&p.kinds[0], 1000, 1, 200);
        assert_int_equal(sbpool_ahead(&p, 0, t), 10);
        assert_int_equal(sbpool_rebalance(&p, t, plan), 10);
        for (size_t i = 0; i < 10; i++)
                assert_int_equal(plan[i].kind, 0);
        /* 10000 takes/s: 100 during a build, MAX_STARTING at once. */
        pool_init(&p, MAX);
        p.build_ms = 100;
        t = takes(&p.kinds[0], 1000, 1, 200);
        assert_int_equal(sbpool_rebalance(&p, t, plan), MAX_STARTING);
        /* Backing off: none. */
        pool_init(&p, MAX);
        p.backoff_until_ms = 2000;
        assert_int_equal(sbpool_rebalance(&p, 1000, plan), 0);
}

/* The build time is an average: the first timed build replaces the
 * starting guess, then one slow build moves it a quarter. */
static void test_build_average(void **state)
{
        (void)state;
        struct sandbox_pool p;
        pool_init(&p, 10);
        sbpool_note_built(&p, 10);
        assert_true(p.build_ms > 9.9 && p.build_ms < 10.1);
        sbpool_note_built(&p, 50);
        assert_true(p.build_ms > 19.9 && p.build_ms < 20.1);
        pool_init(&p, 10);
        sbpool_note_built(&p, 400);
        assert_true(p.build_ms > 399.9 && p.build_ms < 400.1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_idle_prefetch),  cmocka_unit_test(test_rate_times_build),
                cmocka_unit_test(test_rate_decays),    cmocka_unit_test(test_expected),
                cmocka_unit_test(test_rebalance_room), cmocka_unit_test(test_build_average),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
