/* Unit tests for worker/cli/term_safe.c: what a terminal is shown of a
 * job's bytes (controls visible, UTF-8 kept, the rest as \xNN), the same
 * whichever way the bytes are cut, and JSON made terminal-safe without
 * changing what it says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include <cmocka.h>

#include "common/dynbuf.h"
#include "worker/cli/term_safe.h"

#define S(lit) lit, sizeof(lit) - 1

static const struct {
        const char *in;
        size_t len;
        const char *want;
} cases[] = {
        { S("plain\ttext\n"), "plain\ttext\n" },
        { S("\x1b[31mred\x1b[0m \x1b]0;title\x07"), "^[[31mred^[[0m ^[]0;title^G" },
        { S("\x1b[2J\x1b[H"), "^[[2J^[[H" },
        { S("a\rb"), "a^Mb" },
        { S("a\r\nb\r\n"), "a\r\nb\r\n" },
        { S("a\r\r\n"), "a^M\r\n" },
        { S("end\r"), "end^M" },
        { S("\x00\x01\x08\x7f\x1f"), "^@^A^H^?^_" },
        { S("\xc2\x9b"
            "31m \xc2\x85 \xc2\x80"),
          "\\u009b31m \\u0085 \\u0080" },
        { S("\xc2\xa0 \xc2\xbf"), "\xc2\xa0 \xc2\xbf" },
        { S("\x9b"
            "31m \x84 \xff"),
          "\\x9b31m \\x84 \\xff" },
        { S("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"),
          "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80" },
        { S("\xc0\xaf \xc1\xbf"), "\\xc0\\xaf \\xc1\\xbf" },
        { S("\xe0\x80\xaf"), "\\xe0\\x80\\xaf" },
        { S("\xed\xa0\x80"), "\\xed\\xa0\\x80" },
        { S("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80" },
        { S("\xf5\x80"), "\\xf5\\x80" },
        { S("ab\xe2\x9c"), "ab\\xe2\\x9c" },
        { S("\xe2\x9cX\xe2\x1b"), "\\xe2\\x9cX\\xe2^[" },
        { S("\xf0\x9f\x98"), "\\xf0\\x9f\\x98" },
        { S(""), "" },
};

static char *shown(const char *in, size_t len, size_t cut)
{
        struct term_safe t = { 0 };
        struct dynbuf out;
        dynbuf_init(&out, 4096);
        assert_int_equal(term_safe_feed(&t, in, cut, &out), 0);
        assert_int_equal(term_safe_feed(&t, in + cut, len - cut, &out), 0);
        assert_int_equal(term_safe_end(&t, &out), 0);
        char *s = strdup(out.data ? out.data : "");
        dynbuf_done(&out);
        return s;
}

static void test_shown(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                for (size_t cut = 0; cut <= cases[i].len; cut++) {
                        char *got = shown(cases[i].in, cases[i].len, cut);
                        if (strcmp(got, cases[i].want) != 0)
                                fail_msg("case %zu cut at %zu: got \"%s\", want \"%s\"", i, cut,
                                         got, cases[i].want);
                        free(got);
                }
        }
}

/* Nothing a terminal obeys comes out, whatever the bytes: no C0 but
 * newline, tab and CR before newline, no DEL, no C1 byte outside a
 * character above U+009F. */
static void test_no_control_survives(void **state)
{
        (void)state;
        uint32_t x = 12345;
        for (int round = 0; round < 2000; round++) {
                unsigned char in[64];
                size_t len = (size_t)(round % 64);
                for (size_t i = 0; i < len; i++) {
                        x = x * 1103515245u + 12345u;
                        in[i] = (unsigned char)(x >> 16);
                }
                char *got = shown((const char *)in, len, len / 2);
                const unsigned char *g = (const unsigned char *)got;
                for (size_t i = 0; g[i]; i++) {
                        bool c0 = g[i] < 0x20 && g[i] != '\n' && g[i] != '\t' &&
                                  !(g[i] == '\r' && g[i + 1] == '\n');
                        bool c1 = g[i] == 0xc2 && g[i + 1] >= 0x80 && g[i + 1] <= 0x9f;
                        if (c0 || g[i] == 0x7f || c1)
                                fail_msg("round %d: byte 0x%02x at %zu came out", round, g[i], i);
                }
                free(got);
        }
}

static void test_json(void **state)
{
        (void)state;
        const char *in = "{\"a\": \"x\x7fy\xc2\x9b"
                         "z\xc2\xa0\xc2\x80\", \"b\": [1, \"\\u001b\"]}";
        char *out = term_safe_json(in);
        assert_non_null(out);
        assert_string_equal(
                out, "{\"a\": \"x\\u007fy\\u009bz\xc2\xa0\\u0080\", \"b\": [1, \"\\u001b\"]}");
        cJSON *a = cJSON_Parse(in), *b = cJSON_Parse(out);
        assert_non_null(a);
        assert_non_null(b);
        assert_true(cJSON_Compare(a, b, true));
        cJSON_Delete(a);
        cJSON_Delete(b);
        free(out);
        out = term_safe_json("");
        assert_string_equal(out, "");
        free(out);
}

static void test_text(void **state)
{
        (void)state;
        char *out = term_safe_text("E\x1b[2J\r\xc2\x9b\xe2\x9c\x93");
        assert_string_equal(out, "E^[[2J^M\\u009b\xe2\x9c\x93");
        free(out);
        out = term_safe_text("");
        assert_string_equal(out, "");
        free(out);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_shown),
                cmocka_unit_test(test_no_control_survives),
                cmocka_unit_test(test_json),
                cmocka_unit_test(test_text),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
