/* Unit tests for common/netallow.c: the egress rule grammar (the SQL
 * validator's twin), what a rule lets through, and a queue cap covering a
 * job's rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/netallow.h"

static struct netallow_rule rule(const char *text)
{
        struct netallow_rule r;
        assert_int_equal(netallow_parse(text, &r), NETALLOW_OK);
        return r;
}

#define IP(a, b, c, d) \
        ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

static void test_parse(void **state)
{
        (void)state;
        static const struct {
                const char *text;
                enum netallow_problem want;
                const char *formatted;
        } cases[] = {
                { "pypi.org:443", NETALLOW_OK, "pypi.org:443" },
                { "*.githubusercontent.com:443", NETALLOW_OK, "*.githubusercontent.com:443" },
                { "localhost:80", NETALLOW_OK, "localhost:80" },
                { "10.2.0.0/16:5432", NETALLOW_OK, "10.2.0.0/16:5432" },
                { "10.2.0.5:5432", NETALLOW_OK, "10.2.0.5/32:5432" },
                { "0.0.0.0/0:443", NETALLOW_OK, "0.0.0.0/0:443" },
                { "a-b.c0.d:65535", NETALLOW_OK, "a-b.c0.d:65535" },
                { "pypi.org", NETALLOW_SYNTAX, NULL },
                { ":443", NETALLOW_SYNTAX, NULL },
                { "pypi.org:", NETALLOW_SYNTAX, NULL },
                { "pypi.org:https", NETALLOW_SYNTAX, NULL },
                { "PyPI.org:443", NETALLOW_SYNTAX, NULL },
                { "pypi.org.:443", NETALLOW_SYNTAX, NULL },
                { "-a.org:443", NETALLOW_SYNTAX, NULL },
                { "a-.org:443", NETALLOW_SYNTAX, NULL },
                { "a..org:443", NETALLOW_SYNTAX, NULL },
                { "*:443", NETALLOW_SYNTAX, NULL },
                { "*.:443", NETALLOW_SYNTAX, NULL },
                { "a.*.org:443", NETALLOW_SYNTAX, NULL },
                { "example.123:443", NETALLOW_SYNTAX, NULL },
                { "10.2.0:443", NETALLOW_SYNTAX, NULL },
                { "10.2.0.256:443", NETALLOW_SYNTAX, NULL },
                { "10.02.0.1:443", NETALLOW_SYNTAX, NULL },
                { "10.2.0.0/33:443", NETALLOW_SYNTAX, NULL },
                { "10.2.0.0/08:443", NETALLOW_SYNTAX, NULL },
                { "10.2.0.0/:443", NETALLOW_SYNTAX, NULL },
                { "[::1]:443", NETALLOW_SYNTAX, NULL },
                { "pypi.org:0", NETALLOW_PORT, NULL },
                { "pypi.org:0443", NETALLOW_PORT, NULL },
                { "pypi.org:65536", NETALLOW_PORT, NULL },
                { "pypi.org:99999999999999999999", NETALLOW_PORT, NULL },
                { "10.2.3.4/16:5432", NETALLOW_HOST_BITS, NULL },
                { "169.254.169.254:80", NETALLOW_METADATA, NULL },
                { "169.254.169.254/32:443", NETALLOW_METADATA, NULL },
                { "169.254.0.0/16:80", NETALLOW_OK, "169.254.0.0/16:80" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct netallow_rule r;
                enum netallow_problem p = netallow_parse(cases[i].text, &r);
                if (p != cases[i].want)
                        fail_msg("%s: got %d, want %d", cases[i].text, p, cases[i].want);
                if (cases[i].formatted) {
                        char buf[300];
                        netallow_format(&r, buf, sizeof(buf));
                        assert_string_equal(buf, cases[i].formatted);
                }
        }
        /* 253 characters are a name, 255 are not (labels "a." repeated). */
        char name[300];
        for (int i = 0; i < 253; i++)
                name[i] = i % 2 ? '.' : 'a';
        strcpy(name + 253, ":1");
        struct netallow_rule r;
        assert_int_equal(netallow_parse(name, &r), NETALLOW_OK);
        memmove(name + 2, name, strlen(name) + 1);
        assert_int_equal(netallow_parse(name, &r), NETALLOW_SYNTAX);
        assert_int_equal(netallow_parse(name + 2, &r), NETALLOW_OK);

        char why[160];
        assert_int_equal(netallow_parse("10.2.3.4/16:5432", &r), NETALLOW_HOST_BITS);
        assert_string_equal(netallow_problem_text(NETALLOW_HOST_BITS, &r, why, sizeof(why)),
                            "address has bits set past the prefix (the network is 10.2.0.0/16)");
}

static void test_match(void **state)
{
        (void)state;
        struct netallow_rule exact = rule("pypi.org:443");
        assert_true(netallow_match_name(&exact, "pypi.org", 443));
        assert_false(netallow_match_name(&exact, "pypi.org", 80));
        assert_false(netallow_match_name(&exact, "files.pypi.org", 443));
        assert_false(netallow_match_name(&exact, "xpypi.org", 443));
        assert_false(netallow_match_addr(&exact, IP(151, 101, 0, 223), 443));

        struct netallow_rule wild = rule("*.example.com:443");
        assert_true(netallow_match_name(&wild, "a.example.com", 443));
        assert_true(netallow_match_name(&wild, "a.b.example.com", 443));
        assert_false(netallow_match_name(&wild, "example.com", 443));
        assert_false(netallow_match_name(&wild, "badexample.com", 443));
        assert_false(netallow_match_name(&wild, "a.example.com.evil.net", 443));
        assert_false(netallow_match_name(&wild, "a.example.com", 444));

        struct netallow_rule net = rule("10.2.0.0/16:5432");
        assert_true(netallow_match_addr(&net, IP(10, 2, 0, 0), 5432));
        assert_true(netallow_match_addr(&net, IP(10, 2, 255, 255), 5432));
        assert_false(netallow_match_addr(&net, IP(10, 3, 0, 1), 5432));
        assert_false(netallow_match_addr(&net, IP(10, 2, 0, 1), 5433));
        assert_false(netallow_match_name(&net, "10.2.0.1", 5432));
        struct netallow_rule all = rule("0.0.0.0/0:443");
        assert_true(netallow_match_addr(&all, IP(255, 255, 255, 255), 443));
}

static void test_covers(void **state)
{
        (void)state;
        static const struct {
                const char *cap, *job;
                bool want;
        } cases[] = {
                { "pypi.org:443", "pypi.org:443", true },
                { "pypi.org:443", "pypi.org:80", false },
                { "pypi.org:443", "files.pypi.org:443", false },
                { "pypi.org:443", "*.pypi.org:443", false },
                { "*.pypi.org:443", "files.pypi.org:443", true },
                { "*.pypi.org:443", "a.files.pypi.org:443", true },
                { "*.pypi.org:443", "*.pypi.org:443", true },
                { "*.pypi.org:443", "*.files.pypi.org:443", true },
                { "*.pypi.org:443", "pypi.org:443", false },
                { "*.pypi.org:443", "*.org:443", false },
                { "*.pypi.org:443", "xpypi.org:443", false },
                { "10.2.0.0/16:5432", "10.2.3.0/24:5432", true },
                { "10.2.0.0/16:5432", "10.2.0.0/16:5432", true },
                { "10.2.0.0/16:5432", "10.2.0.9:5432", true },
                { "10.2.0.0/16:5432", "10.0.0.0/8:5432", false },
                { "10.2.0.0/16:5432", "10.3.0.0/24:5432", false },
                { "10.2.0.0/16:5432", "10.2.0.0/24:5433", false },
                { "0.0.0.0/0:443", "1.2.3.4:443", true },
                { "0.0.0.0/0:443", "pypi.org:443", false },
                { "pypi.org:443", "151.101.0.223:443", false },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct netallow_rule cap = rule(cases[i].cap), job = rule(cases[i].job);
                if (netallow_covers(&cap, &job) != cases[i].want)
                        fail_msg("cap %s, job %s: want %d", cases[i].cap, cases[i].job,
                                 cases[i].want);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_match),
                cmocka_unit_test(test_covers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
