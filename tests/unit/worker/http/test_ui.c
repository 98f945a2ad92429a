/* Unit tests for the dashboard's text handling (worker/http/ui_html.c,
 * ui_auth.c): escaping makes any text inert in element text and quoted
 * attributes, URL encoding leaves only unreserved characters, form fields
 * decode (and never overrun), ids are checked, and the secret comparison
 * matches exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "worker/http/ui-internal.h"

static char *esc(const char *s, size_t n)
{
        static char out[1024];
        struct dynbuf b;
        dynbuf_init(&b, sizeof(out) - 1);
        ui_esc_n(&b, s, n);
        snprintf(out, sizeof(out), "%s", b.data ? b.data : "");
        dynbuf_done(&b);
        return out;
}

static void test_escape(void **state)
{
        (void)state;
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "plain text", "plain text" },
                { "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;" },
                { "\"><img src=x onerror=alert(1)>",
                  "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" },
                { "' onmouseover='x", "&#39; onmouseover=&#39;x" },
                { "a & b &amp;", "a &amp; b &amp;amp;" },
                { "", "" },
                { "é ✓", "é ✓" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                assert_string_equal(esc(cases[i].in, strlen(cases[i].in)), cases[i].out);
        /* A NUL inside the text is shown, not a place where it ends. */
        assert_string_equal(esc("a\0<b", 4), "a\xef\xbf\xbd&lt;b");
}

static void test_urlenc(void **state)
{
        (void)state;
        struct dynbuf b;
        dynbuf_init(&b, 1024);
        ui_urlenc(&b, "a/b c&d=e\"<>?#%~._-Z9");
        assert_string_equal(b.data, "a%2Fb%20c%26d%3De%22%3C%3E%3F%23%25~._-Z9");
        dynbuf_done(&b);
}

static void test_form_value(void **state)
{
        (void)state;
        struct dynbuf b;
        dynbuf_init(&b, 1024);
        dynbuf_addstr(&b, "csrf=ab12&id=a%2Fb+c%zz&idx=no&empty=&last=%41");
        char v[64];
        assert_true(ui_form_value(&b, "csrf", v, sizeof(v)));
        assert_string_equal(v, "ab12");
        assert_true(ui_form_value(&b, "id", v, sizeof(v)));
        assert_string_equal(v, "a/b c%zz"); /* a bad escape stays as sent */
        assert_true(ui_form_value(&b, "empty", v, sizeof(v)));
        assert_string_equal(v, "");
        assert_true(ui_form_value(&b, "last", v, sizeof(v)));
        assert_string_equal(v, "A");
        assert_false(ui_form_value(&b, "i", v, sizeof(v)));
        assert_false(ui_form_value(&b, "token", v, sizeof(v)));
        char small[4];
        assert_true(ui_form_value(&b, "csrf", small, sizeof(small)));
        assert_string_equal(small, "ab1"); /* cut, never overrun */
        dynbuf_done(&b);
}

/* A repeated field (the job list's checkboxes): every value, in order,
 * and nothing of a field whose name only starts the same. */
static void test_form_next(void **state)
{
        (void)state;
        struct dynbuf b;
        dynbuf_init(&b, 1024);
        dynbuf_addstr(&b, "id=a&csrf=x&ids=no&id=b%20c&op=retry&id=");
        char v[64];
        size_t pos = 0;
        assert_true(ui_form_next(&b, "id", &pos, v, sizeof(v)));
        assert_string_equal(v, "a");
        assert_true(ui_form_next(&b, "id", &pos, v, sizeof(v)));
        assert_string_equal(v, "b c");
        assert_true(ui_form_next(&b, "id", &pos, v, sizeof(v)));
        assert_string_equal(v, "");
        assert_false(ui_form_next(&b, "id", &pos, v, sizeof(v)));
        assert_false(ui_form_next(&b, "id", &pos, v, sizeof(v))); /* stays at the end */
        pos = 0;
        assert_true(ui_form_next(&b, "op", &pos, v, sizeof(v)));
        assert_string_equal(v, "retry");
        assert_false(ui_form_next(&b, "op", &pos, v, sizeof(v)));
        dynbuf_reset(&b);
        pos = 0;
        assert_false(ui_form_next(&b, "id", &pos, v, sizeof(v))); /* an empty body */
        dynbuf_done(&b);
}

static void test_uuid(void **state)
{
        (void)state;
        assert_true(ui_is_uuid("0b6f3c2e-1a2b-4c3d-8e9f-0123456789ab"));
        assert_true(ui_is_uuid("0B6F3C2E-1A2B-4C3D-8E9F-0123456789AB"));
        assert_false(ui_is_uuid("0b6f3c2e-1a2b-4c3d-8e9f-0123456789a"));
        assert_false(ui_is_uuid("0b6f3c2e-1a2b-4c3d-8e9f-0123456789abc"));
        assert_false(ui_is_uuid("0b6f3c2e11a2b-4c3d-8e9f-0123456789ab"));
        assert_false(ui_is_uuid("0b6f3c2e-1a2b-4c3d-8e9f-0123456789a<"));
        assert_false(ui_is_uuid(""));
        assert_false(ui_is_uuid(NULL));
}

static void test_equal(void **state)
{
        (void)state;
        assert_true(ui_auth_equal("secret-token-123", "secret-token-123"));
        assert_false(ui_auth_equal("secret-token-12", "secret-token-123"));
        assert_false(ui_auth_equal("secret-token-1234", "secret-token-123"));
        assert_false(ui_auth_equal("", "secret-token-123"));
        assert_false(ui_auth_equal("secret-token-124", "secret-token-123"));
        assert_true(ui_auth_equal("", ""));
}

static void test_loopback_host(void **state)
{
        (void)state;
        static const struct {
                const char *host;
                bool want;
        } cases[] = {
                { "localhost", true },
                { "localhost:9470", true },
                { "LocalHost:9470", true },
                { "127.0.0.1", true },
                { "127.0.0.1:9470", true },
                { "127.1.2.3:9470", true },
                { "127.255.255.255", true },
                { "[::1]", true },
                { "[::1]:9470", true },
                { "localhost:9471", false },
                { "127.0.0.1:80", false },
                { "[::1]:947", false },
                { "localhost:", false },
                { "localhost:09470", false },
                { "localhost:+9470", false },
                { "localhost:9470:9470", false },
                { "localhost:99999999", false },
                { "127.x.attacker.example", false },
                { "127.x.attacker.example:9470", false },
                { "127.0.0.1.evil.example", false },
                { "127.0.0.1.evil.example:9470", false },
                { "localhost.evil.example", false },
                { "localhost.", false },
                { "127.1:9470", false },
                { "127.0.0.01", false },
                { "127.0.0.256", false },
                { "0177.0.0.1", false },
                { "128.0.0.1", false },
                { "10.0.0.1", false },
                { "evil.example", false },
                { "[::1", false },
                { "[::1]x", false },
                { "[::2]:9470", false },
                { "[::ffff:127.0.0.1]", false },
                { "::1", false },
                { "", false },
                { ":9470", false },
                { NULL, false },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                if (ui_auth_loopback_host(cases[i].host, 9470) != cases[i].want)
                        fail_msg("Host %s: want %d", cases[i].host ? cases[i].host : "(none)",
                                 cases[i].want);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_escape),        cmocka_unit_test(test_urlenc),
                cmocka_unit_test(test_form_value),    cmocka_unit_test(test_form_next),
                cmocka_unit_test(test_uuid),          cmocka_unit_test(test_equal),
                cmocka_unit_test(test_loopback_host),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
