/* The pieces of --network allow that need no namespace: the DNS
 * responder's answers, the options and the status's "network" object
 * (the enforcement itself: tests/e2e/t_network_allow.sh). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sandbox/egress-internal.h"
#include "sandbox/sandbox.h"

/* A query for name (dotted) of type qtype, with id 0x1234 and RD set. */
static size_t query(uint8_t *q, const char *name, uint16_t qtype)
{
        static const uint8_t hdr[12] = { 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0 };
        memcpy(q, hdr, sizeof(hdr));
        size_t n = 12;
        const char *p = name;
        while (*p) {
                size_t l = strcspn(p, ".");
                q[n++] = (uint8_t)l;
                memcpy(q + n, p, l);
                n += l;
                p += l;
                if (*p == '.')
                        p++;
        }
        q[n++] = 0;
        q[n++] = (uint8_t)(qtype >> 8);
        q[n++] = (uint8_t)qtype;
        q[n++] = 0;
        q[n++] = 1;
        return n;
}

struct rules {
        struct netallow_rule r[3];
};

static void load_rules(struct rules *rs)
{
        assert_int_equal(netallow_parse("pypi.org:443", &rs->r[0]), NETALLOW_OK);
        assert_int_equal(netallow_parse("*.example.com:8080", &rs->r[1]), NETALLOW_OK);
        assert_int_equal(netallow_parse("10.2.0.0/16:5432", &rs->r[2]), NETALLOW_OK);
}

static size_t ask(const struct rules *rs, struct egress_names *names, const char *name,
                  uint16_t type, uint8_t *out, bool *refused)
{
        uint8_t q[512];
        char asked[NETALLOW_NAME_MAX + 1];
        size_t n = query(q, name, type);
        return egress_dns_answer(rs->r, 3, names, q, n, out, asked, refused);
}

static uint32_t answer_a(const uint8_t *out, size_t len)
{
        assert_true(len >= 4);
        return (uint32_t)out[len - 4] << 24 | (uint32_t)out[len - 3] << 16 |
               (uint32_t)out[len - 2] << 8 | out[len - 1];
}

static void test_dns_allowed_names(void **state)
{
        (void)state;
        struct rules rs;
        load_rules(&rs);
        struct egress_names names = { 0 };
        uint8_t out[600];
        bool refused = true;
        size_t len = ask(&rs, &names, "pypi.org", 1, out, &refused);
        assert_false(refused);
        assert_true(len > 0);
        assert_int_equal(out[0], 0x12);        /* the id */
        assert_int_equal(out[2] & 0x80, 0x80); /* a response */
        assert_int_equal(out[3] & 0x0f, 0);    /* NOERROR */
        assert_int_equal(out[7], 1);           /* one answer */
        uint32_t a = answer_a(out, len);
        assert_int_equal(a, EGRESS_SYNTH_NET | 1);
        assert_string_equal(egress_names_lookup(&names, a), "pypi.org");
        /* The same name keeps its address; case does not matter. */
        len = ask(&rs, &names, "PyPI.org", 1, out, &refused);
        assert_int_equal(answer_a(out, len), a);
        /* A name under a wildcard gets the next one. */
        len = ask(&rs, &names, "files.example.com", 1, out, &refused);
        assert_false(refused);
        assert_int_equal(answer_a(out, len), EGRESS_SYNTH_NET | 2);
        assert_string_equal(egress_names_lookup(&names, EGRESS_SYNTH_NET | 2),
                            "files.example.com");
        assert_null(egress_names_lookup(&names, EGRESS_SYNTH_NET | 3));
        assert_null(egress_names_lookup(&names, 0x0a020001));
        /* AAAA for an allowed name: no data, not an error. */
        len = ask(&rs, &names, "pypi.org", 28, out, &refused);
        assert_false(refused);
        assert_int_equal(out[3] & 0x0f, 0);
        assert_int_equal(out[7], 0);
        egress_names_free(&names);
}

static void test_dns_refused_names(void **state)
{
        (void)state;
        struct rules rs;
        load_rules(&rs);
        struct egress_names names = { 0 };
        uint8_t out[600];
        static const char *const refused_names[] = {
                "example.com", /* a wildcard does not cover its apex */
                "evil.org",    "pypi.org.evil.org", "files.example.com.evil.org",
                "10.2.0.1", /* CIDR rules have no names */
        };
        for (size_t i = 0; i < sizeof(refused_names) / sizeof(refused_names[0]); i++) {
                bool refused = false;
                size_t len = ask(&rs, &names, refused_names[i], 1, out, &refused);
                print_message("# %s\n", refused_names[i]);
                assert_true(refused);
                assert_true(len > 0);
                assert_int_equal(out[3] & 0x0f, 3); /* NXDOMAIN */
                assert_int_equal(out[7], 0);
        }
        assert_true(names.n <= 1); /* no address handed out */
        /* A '.' inside a label is not a label boundary. */
        uint8_t q[512];
        size_t n = query(q, "pypi.org", 1);
        q[12 + 5] = '.'; /* "pypi.org" -> label "pypi.org" of 8 bytes */
        q[12] = 8;
        char asked[NETALLOW_NAME_MAX + 1];
        bool refused = false;
        (void)egress_dns_answer(rs.r, 3, &names, q, n, out, asked, &refused);
        assert_true(refused);
        egress_names_free(&names);
}

static void test_dns_malformed(void **state)
{
        (void)state;
        struct rules rs;
        load_rules(&rs);
        struct egress_names names = { 0 };
        uint8_t q[512], out[600];
        char asked[NETALLOW_NAME_MAX + 1];
        bool refused;
        size_t n = query(q, "pypi.org", 1);
        assert_int_equal(egress_dns_answer(rs.r, 3, &names, q, 11, out, asked, &refused), 0);
        q[2] |= 0x80; /* a response, not a query */
        assert_int_equal(egress_dns_answer(rs.r, 3, &names, q, n, out, asked, &refused), 0);
        n = query(q, "pypi.org", 1);
        q[12] = 0xc0; /* a compression pointer in a question */
        assert_int_equal(egress_dns_answer(rs.r, 3, &names, q, n, out, asked, &refused), 0);
        n = query(q, "pypi.org", 1);
        assert_int_equal(egress_dns_answer(rs.r, 3, &names, q, n - 3, out, asked, &refused), 0);
        q[5] = 2; /* two questions */
        assert_int_equal(egress_dns_answer(rs.r, 3, &names, q, n, out, asked, &refused), 0);
        egress_names_free(&names);
}

static void test_options(void **state)
{
        (void)state;
        char *bad[][8] = {
                { "H", "--network", "allow", "--", "true" },
                { "H", "--network-allow", "pypi.org:443", "--", "true" },
                { "H", "--network", "allow", "--network-allow", "pypi.org", "--", "true" },
        };
        int bad_argc[] = { 5, 5, 7 };
        for (size_t i = 0; i < 3; i++) {
                struct helper_config c;
                struct bc_error err = BC_ERROR_INIT;
                assert_int_equal(helper_config_parse(bad_argc[i], bad[i], &c, &err), -EINVAL);
                assert_int_equal(err.code, BC_USAGE);
                bc_error_clear(&err);
        }
        char *rules[] = { "pypi.org:443", "10.2.0.0/16:5432" };
        const bool rule_private[] = { false, true };
        char *cmd[] = { "true", NULL };
        struct sandbox_opts o = { .argv = cmd,
                                  .network = SANDBOX_NET_ALLOW,
                                  .net_allow = rules,
                                  .net_allow_private = rule_private,
                                  .n_net_allow = 2,
                                  .net_private = true };
        char **argv = NULL;
        assert_int_equal(sandbox_argv_build(&o, "H", -1, &argv, NULL), 0);
        int argc = 0;
        while (argv[argc])
                argc++;
        struct helper_config c;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(helper_config_parse(argc, argv, &c, &err), 0);
        assert_int_equal(c.network, SANDBOX_NET_ALLOW);
        assert_int_equal(c.n_net_rules, 2);
        assert_string_equal(c.net_rules[0].name, "pypi.org");
        assert_true(c.net_rules[1].is_cidr);
        assert_false(c.net_rules[0].private_ok);
        assert_true(c.net_rules[1].private_ok); /* --network-allow-private */
        assert_true(c.net_private);
        helper_config_done(&c);
        sandbox_argv_free(argv);
        /* An allow-list without rules, or rules without one, is refused. */
        o.n_net_allow = 0;
        assert_true(sandbox_argv_build(&o, "H", -1, &argv, &err) < 0);
        bc_error_clear(&err);
        o.network = SANDBOX_NET_NONE;
        o.n_net_allow = 2;
        assert_true(sandbox_argv_build(&o, "H", -1, &argv, &err) < 0);
        bc_error_clear(&err);
}

static void test_status_network(void **state)
{
        (void)state;
        char *list[] = { "evil.org (DNS)", "a\"b\\c:1" };
        struct sandbox_status in = { .has_network = true,
                                     .net_bytes_out = 12,
                                     .net_bytes_in = 3456,
                                     .net_connections = 2,
                                     .net_refused = 7,
                                     .net_refused_list = list,
                                     .n_net_refused_list = 2 };
        char *json = sbx_status_to_json(&in);
        assert_non_null(json);
        struct sandbox_status out;
        assert_int_equal(sandbox_status_parse(json, strlen(json), &out, NULL), 0);
        assert_true(out.has_network);
        assert_int_equal(out.net_bytes_out, 12);
        assert_int_equal(out.net_bytes_in, 3456);
        assert_int_equal(out.net_connections, 2);
        assert_int_equal(out.net_refused, 7);
        assert_int_equal(out.n_net_refused_list, 2);
        assert_string_equal(out.net_refused_list[0], "evil.org (DNS)");
        assert_string_equal(out.net_refused_list[1], "a\"b\\c:1");
        sandbox_status_done(&out);
        free(json);
        /* Without an allow-list there is no "network" object. */
        struct sandbox_status plain = { .exit_code = 0 };
        json = sbx_status_to_json(&plain);
        assert_null(strstr(json, "network"));
        assert_int_equal(sandbox_status_parse(json, strlen(json), &out, NULL), 0);
        assert_false(out.has_network);
        sandbox_status_done(&out);
        free(json);
        const char *bad = "{\"exit_code\":0,\"signal\":0,\"network\":{\"refused_list\":[1]}}";
        assert_true(sandbox_status_parse(bad, strlen(bad), &out, NULL) < 0);
}

/* The resolver's cache: answers kept by name, failures not, at most
 * EGRESS_CACHE_MAX names (the oldest make room). */
static void test_resolver_cache(void **state)
{
        (void)state;
        struct egress_resolver *r = egress_resolver_new(NULL, EGRESS_RESOLVER_UID,
                                                        EGRESS_RESOLVER_GID);
        assert_non_null(r);
        struct egress_addrs a = { .n = 1 };
        a.a[0].family = 2; /* AF_INET */
        memcpy(a.a[0].addr, "\x0a\x01\x02\x03", 4);
        egress_resolver_store(r, "db.internal", &a);
        const struct egress_addrs *got = egress_resolver_cached(r, "db.internal");
        assert_non_null(got);
        assert_memory_equal(got->a[0].addr, "\x0a\x01\x02\x03", 4);
        assert_null(egress_resolver_cached(r, "other.internal"));
        struct egress_addrs failed = { .err = -2 };
        egress_resolver_store(r, "nx.internal", &failed);
        assert_null(egress_resolver_cached(r, "nx.internal"));
        char name[32];
        for (int i = 0; i < EGRESS_CACHE_MAX + 10; i++) {
                snprintf(name, sizeof(name), "n%d.internal", i);
                egress_resolver_store(r, name, &a);
        }
        int kept = 0;
        for (int i = 0; i < EGRESS_CACHE_MAX + 10; i++) {
                snprintf(name, sizeof(name), "n%d.internal", i);
                kept += egress_resolver_cached(r, name) != NULL;
        }
        assert_int_equal(kept, EGRESS_CACHE_MAX);
        snprintf(name, sizeof(name), "n%d.internal", EGRESS_CACHE_MAX + 9);
        assert_non_null(egress_resolver_cached(r, name)); /* the newest is kept */
        egress_resolver_free(r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dns_allowed_names), cmocka_unit_test(test_dns_refused_names),
                cmocka_unit_test(test_dns_malformed),     cmocka_unit_test(test_options),
                cmocka_unit_test(test_status_network),    cmocka_unit_test(test_resolver_cache),
        };
        return cmocka_run_group_tests_name("sandbox_egress", tests, NULL, NULL);
}
