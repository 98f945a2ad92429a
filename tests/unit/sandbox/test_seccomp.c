/* The seccomp filters the helper installs are compiled at build time
 * (sandbox/tools/seccomp-gen); libseccomp and sandbox/seccomp-policy.c stay
 * the source of truth.  This checks the embedded BPF is exactly what
 * libseccomp builds from the policy now, so a stale generated file or a
 * policy edit that missed the generator fails the tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/error.h"
#include "sandbox/seccomp-internal.h"

static void test_builtin_matches_policy(void **state)
{
        (void)state;
        struct sbx_seccomp_prog built, embedded;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(sbx_seccomp_compile(&built, &err), 0);
        sbx_seccomp_builtin(&embedded);
        assert_false(embedded.owned);
        for (size_t i = 0; i < 2; i++) {
                assert_true(embedded.filters[i].len > 0);
                assert_int_equal(built.filters[i].len, embedded.filters[i].len);
                assert_memory_equal(built.filters[i].filter, embedded.filters[i].filter,
                                    built.filters[i].len * sizeof(struct sock_filter));
        }
        sbx_seccomp_prog_done(&built);
        sbx_seccomp_prog_done(&embedded); /* frees nothing it does not own */
        assert_null(embedded.filters[0].filter);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_builtin_matches_policy),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
