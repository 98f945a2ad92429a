/* Unit tests for common/netguard.c: which addresses the worker's own
 * requests may reach, the operator's allow list, and the libcurl hook
 * judging the address actually connected (a name, not a literal). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/netguard.h"

static socklen_t sockaddr_of(const char *text, struct sockaddr_storage *ss)
{
        memset(ss, 0, sizeof(*ss));
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        if (inet_pton(AF_INET, text, &s4->sin_addr) == 1) {
                s4->sin_family = AF_INET;
                return sizeof(*s4);
        }
        assert_int_equal(inet_pton(AF_INET6, text, &s6->sin6_addr), 1);
        s6->sin6_family = AF_INET6;
        return sizeof(*s6);
}

static bool permits(const struct netguard *g, const char *text, const char **range)
{
        struct sockaddr_storage ss;
        socklen_t len = sockaddr_of(text, &ss);
        return netguard_permits(g, (struct sockaddr *)&ss, len, range);
}

static void test_default_refuses_special(void **state)
{
        (void)state;
        static const struct {
                const char *addr;
                const char *range_part;
        } refused[] = {
                { "127.0.0.1", "loopback" },
                { "127.255.255.254", "loopback" },
                { "10.1.2.3", "10.0.0.0/8" },
                { "172.16.0.1", "172.16.0.0/12" },
                { "172.31.255.255", "172.16.0.0/12" },
                { "192.168.1.1", "192.168.0.0/16" },
                { "169.254.169.254", "cloud metadata" },
                { "100.64.0.1", "CGNAT" },
                { "100.127.255.255", "CGNAT" },
                { "0.0.0.0", "this network" },
                { "0.1.2.3", "this network" },
                { "224.0.0.1", "multicast" },
                { "239.255.255.250", "multicast" },
                { "255.255.255.255", "broadcast" },
                { "192.0.0.192", "192.0.0.0/24" },
                { "198.18.0.1", "benchmarking" },
                { "::1", "loopback ::1" },
                { "::", "unspecified" },
                { "fe80::1", "link-local fe80::/10" },
                { "fd00:ec2::254", "unique local" },
                { "fc00::1", "unique local" },
                { "ff02::1", "multicast" },
                { "fec0::1", "site-local" },
                { "2001:db8::1", "documentation" },
                /* IPv4 hidden in IPv6: judged as the IPv4 host reached. */
                { "::ffff:127.0.0.1", "loopback 127" },
                { "::ffff:169.254.169.254", "cloud metadata" },
                { "::ffff:10.0.0.1", "10.0.0.0/8" },
                { "64:ff9b::a9fe:a9fe", "cloud metadata" },
                { "64:ff9b::7f00:1", "loopback 127" },
                { "2002:7f00:1::1", "loopback 127" },
                { "2002:a00:1::", "10.0.0.0/8" },
                { "::127.0.0.1", "IPv4-compatible" },
        };
        struct netguard g = { 0 };
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                const char *range = NULL;
                if (permits(&g, refused[i].addr, &range))
                        fail_msg("%s was permitted", refused[i].addr);
                assert_non_null(range);
                if (!strstr(range, refused[i].range_part))
                        fail_msg("%s: range '%s' lacks '%s'", refused[i].addr, range,
                                 refused[i].range_part);
        }
}

static void test_default_permits_public(void **state)
{
        (void)state;
        static const char *const ok[] = {
                "1.1.1.1",
                "8.8.8.8",
                "93.184.216.34",
                "172.15.255.255",
                "172.32.0.0",
                "100.63.255.255",
                "100.128.0.0",
                "169.253.255.255",
                "192.169.0.1",
                "223.255.255.255",
                "2606:4700:4700::1111",
                "2a00:1450:4001::200e",
                "::ffff:8.8.8.8",
                "64:ff9b::808:808",
                "2002:808:808::1",
        };
        struct netguard g = { 0 };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                if (!permits(&g, ok[i], NULL))
                        fail_msg("%s was refused", ok[i]);
        /* A NULL guard has no allow list but the same defaults. */
        assert_false(permits(NULL, "127.0.0.1", NULL));
        assert_true(permits(NULL, "8.8.8.8", NULL));
}

static void test_allow_list(void **state)
{
        (void)state;
        struct netguard g = { 0 };
        assert_int_equal(netguard_allow_list(&g, "10.2.0.0/16,fd00::/8,127.0.0.1", NULL), 0);
        assert_int_equal(g.n_allow, 3);
        assert_true(permits(&g, "10.2.0.1", NULL));
        assert_true(permits(&g, "10.2.255.255", NULL));
        assert_true(permits(&g, "::ffff:10.2.3.4", NULL));
        assert_true(permits(&g, "64:ff9b::a02:304", NULL));
        assert_false(permits(&g, "10.3.0.1", NULL));
        assert_true(permits(&g, "fd00::1", NULL));
        assert_false(permits(&g, "fc00::1", NULL));
        assert_true(permits(&g, "127.0.0.1", NULL));
        assert_false(permits(&g, "127.0.0.2", NULL));
        assert_false(permits(&g, "169.254.169.254", NULL));
        struct netguard all = { .allow_all = true };
        assert_true(permits(&all, "169.254.169.254", NULL));
        assert_true(permits(&all, "::1", NULL));
}

static void test_allow_list_malformed(void **state)
{
        (void)state;
        static const char *const bad[] = {
                "",
                "10.0.0.0/",
                "10.0.0.0/33",
                "10.2.3.4/16",
                "fd00::/129",
                "fd00::1/8",
                "10.0.0",
                "host.example",
                "10.0.0.0/8x",
                "10.0.0.0/-1",
                "10.0.0.0/008x",
                "10.0.0.0/8,",
                ",10.0.0.0/8",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct netguard g = { 0 };
                struct bc_error err = BC_ERROR_INIT;
                if (netguard_allow_list(&g, bad[i], &err) >= 0)
                        fail_msg("'%s' was accepted", bad[i]);
                assert_int_equal(err.code, BC_USAGE);
                bc_error_clear(&err);
        }
        struct netguard g = { 0 };
        for (int i = 0; i < NETGUARD_MAX_CIDRS; i++)
                assert_int_equal(netguard_allow_cidr(&g, "10.0.0.0/8", NULL), 0);
        assert_int_equal(netguard_allow_cidr(&g, "10.0.0.0/8", NULL), -E2BIG);
}

/* A port on loopback where nothing listens: reaching it means "connection
 * refused" from the kernel, not being refused by the guard. */
static int closed_port(void)
{
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = { .sin_family = AF_INET,
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
        socklen_t len = sizeof(a);
        getsockname(fd, (struct sockaddr *)&a, &len);
        close(fd);
        return ntohs(a.sin_port);
}

static CURLcode get(const char *url, struct netguard_curl *ctx)
{
        CURL *c = curl_easy_init();
        assert_non_null(c);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
        curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
        netguard_curl_attach(c, ctx);
        CURLcode cc = curl_easy_perform(c);
        curl_easy_cleanup(c);
        return cc;
}

static void test_curl_hook_judges_resolved_address(void **state)
{
        (void)state;
        char url[128];
        /* A name, not a literal: only the resolved address can be judged. */
        snprintf(url, sizeof(url), "http://localhost:%d/x", closed_port());
        struct netguard g = { 0 };
        struct netguard_curl ctx = { .guard = &g };
        assert_int_equal(get(url, &ctx), CURLE_COULDNT_CONNECT);
        assert_true(ctx.refused);
        assert_true(strcmp(ctx.addr, "127.0.0.1") == 0 || strcmp(ctx.addr, "::1") == 0);
        char *m = netguard_curl_message(&ctx);
        assert_non_null(m);
        assert_non_null(strstr(m, ctx.addr));
        assert_non_null(strstr(m, "loopback"));
        assert_non_null(strstr(m, "--allow-private-urls"));
        assert_non_null(strstr(m, "--allow-url-cidr"));
        free(m);

        /* Allowed: the connection is attempted and the kernel refuses it. */
        struct netguard allow = { 0 };
        assert_int_equal(netguard_allow_list(&allow, "127.0.0.0/8,::1", NULL), 0);
        struct netguard_curl ctx2 = { .guard = &allow };
        assert_int_equal(get(url, &ctx2), CURLE_COULDNT_CONNECT);
        assert_false(ctx2.refused);

        /* No guard: nothing is judged. */
        struct netguard_curl ctx3 = { .guard = NULL };
        assert_int_equal(get(url, &ctx3), CURLE_COULDNT_CONNECT);
        assert_false(ctx3.refused);
}

/* The kernel's answer on this host: loopback, in every spelling, is
 * local; addresses nobody assigns here are not.  And the connect-time
 * check refuses a local address that no range covers only through
 * netguard_host_local (the ordinary case is the public address). */
static bool host_local(const char *text)
{
        struct sockaddr_storage ss;
        socklen_t len = sockaddr_of(text, &ss);
        return netguard_host_local((struct sockaddr *)&ss, len);
}

static void test_host_local(void **state)
{
        (void)state;
        assert_true(host_local("127.0.0.1"));
        assert_true(host_local("127.3.4.5"));
        assert_true(host_local("::ffff:127.0.0.1"));
        assert_false(host_local("1.1.1.1"));
        assert_false(host_local("198.51.100.77"));
        assert_false(host_local("2001:db8::77"));
        assert_true(netguard_host_local(NULL, 0)); /* fails closed */
        struct netguard g = { 0 }, all = { .allow_all = true }, list = { 0 };
        assert_int_equal(netguard_allow_cidr(&list, "127.0.0.0/8", NULL), 0);
        struct sockaddr_storage ss;
        socklen_t len = sockaddr_of("8.8.8.8", &ss);
        assert_true(netguard_permits_connect(&g, (struct sockaddr *)&ss, len, NULL));
        len = sockaddr_of("127.0.0.1", &ss);
        assert_false(netguard_permits_connect(&g, (struct sockaddr *)&ss, len, NULL));
        assert_true(netguard_permits_connect(&all, (struct sockaddr *)&ss, len, NULL));
        assert_true(netguard_permits_connect(&list, (struct sockaddr *)&ss, len, NULL));
}

int main(void)
{
        curl_global_init(CURL_GLOBAL_DEFAULT);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_default_refuses_special),
                cmocka_unit_test(test_default_permits_public),
                cmocka_unit_test(test_allow_list),
                cmocka_unit_test(test_allow_list_malformed),
                cmocka_unit_test(test_curl_hook_judges_resolved_address),
                cmocka_unit_test(test_host_local),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
