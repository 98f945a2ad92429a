/* Unit tests for common/secret_mask.c: masking by table, a value split at
 * every byte position, flush and error semantics, random chunking against
 * a plain reference masker (fixed seed), and 10 MiB through it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/dynbuf.h"
#include "common/secret_mask.h"

#define MAX_VALUES 16
#define S(lit) lit, sizeof(lit) - 1

struct bytes {
        const char *p;
        size_t n;
};

static int collect(void *ctx, const char *p, size_t n)
{
        assert_true(n > 0);
        assert_int_equal(dynbuf_add(ctx, p, n), 0);
        return 0;
}

static struct secret_mask *mask_of(const struct bytes *values, size_t n)
{
        const char *v[MAX_VALUES];
        size_t l[MAX_VALUES];
        assert_true(n <= MAX_VALUES);
        for (size_t i = 0; i < n; i++) {
                v[i] = values[i].p;
                l[i] = values[i].n;
        }
        struct secret_mask *m = secret_mask_new(v, l, n);
        assert_non_null(m);
        return m;
}

/* Feeds text in pieces of the sizes cuts[] (the rest at the end), flushes,
 * and compares with want. */
static void check_chunked(struct secret_mask *m, const char *text, size_t len, const size_t *cuts,
                          size_t n_cuts, const char *want, size_t want_len, const char *what)
{
        struct dynbuf out;
        dynbuf_init(&out, 1 << 26);
        size_t off = 0;
        for (size_t i = 0; i <= n_cuts; i++) {
                size_t n = i < n_cuts ? cuts[i] : len - off;
                assert_int_equal(secret_mask_write(m, text + off, n, collect, &out), 0);
                off += n;
        }
        assert_int_equal(secret_mask_flush(m, collect, &out), 0);
        if (out.len != want_len || memcmp(out.data, want, want_len) != 0)
                fail_msg("%s: got \"%.*s\" (%zu), want \"%.*s\"", what, (int)out.len, out.data,
                         out.len, (int)want_len, want);
        dynbuf_done(&out);
}

static const struct {
        struct bytes values[4];
        size_t n;
        struct bytes text, want;
} cases[] = {
        { { { S("secret") } }, 1, { S("my secret here") }, { S("my *** here") } },
        { { { S("secret") } }, 1, { S("secretsecret") }, { S("******") } },
        { { { S("secret") } }, 1, { S("secre secre") }, { S("secre secre") } },
        { { { S("secret") } }, 1, { S("ssecret") }, { S("s***") } },
        { { { S("abcd") }, { S("cdef") } }, 2, { S("xabcdefx") }, { S("x***x") } },
        { { { S("abcd") }, { S("abcdef") } }, 2, { S("abcdefg") }, { S("***g") } },
        { { { S("abcdef") }, { S("cdef") } }, 2, { S("abcdef abcdeX") }, { S("*** abcdeX") } },
        { { { S("bcde") }, { S("abcdefgh") } }, 2, { S("abcdefgX") }, { S("a***fgX") } },
        { { { S("aaaa") } }, 1, { S("aaaaa") }, { S("***") } },
        { { { S("abab") } }, 1, { S("ababab ababxabab") }, { S("*** ***x***") } },
        { { { S("abc") }, { S("xy") } }, 2, { S("abc xy") }, { S("abc xy") } },
        { { { S("abcd") }, { S("abcd") } }, 2, { S("-abcd-") }, { S("-***-") } },
        { { { S("\0\xff\0\x01") } },
          1,
          { S("a\0\xff\0\x01"
              "b\0\xff\0") },
          { S("a***b\0\xff\0") } },
        { { { S("line1\nline2\r\nxy") } },
          1,
          { S("say line2, line1, xy") },
          { S("say ***, ***, xy") } },
        { { { S("line1\nline2\r\nxy") } }, 1, { S("line1\nline2\r\nxy!") }, { S("***!") } },
        { { { S("key\nsecond") } }, 1, { S("key second") }, { S("key ***") } },
        { { { S("pass\n") } }, 1, { S("pass pass\n") }, { S("*** ***") } },
        { { { S("") }, { S("abcd") } }, 2, { S("abcd") }, { S("***") } },
};

static void test_table(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct secret_mask *m = mask_of(cases[i].values, cases[i].n);
                char what[32];
                snprintf(what, sizeof(what), "case %zu", i);
                check_chunked(m, cases[i].text.p, cases[i].text.n, NULL, 0, cases[i].want.p,
                              cases[i].want.n, what);
                secret_mask_free(m);
        }
}

/* Every case, cut in two at every byte, then fed a byte at a time: the
 * same output as in one piece. */
static void test_split_everywhere(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct secret_mask *m = mask_of(cases[i].values, cases[i].n);
                size_t len = cases[i].text.n;
                char what[64];
                for (size_t k = 0; k <= len; k++) {
                        snprintf(what, sizeof(what), "case %zu cut at %zu", i, k);
                        check_chunked(m, cases[i].text.p, len, &k, 1, cases[i].want.p,
                                      cases[i].want.n, what);
                }
                size_t ones[64];
                assert_true(len <= 64);
                for (size_t k = 0; k < len; k++)
                        ones[k] = 1;
                snprintf(what, sizeof(what), "case %zu byte by byte", i);
                check_chunked(m, cases[i].text.p, len, ones, len, cases[i].want.p, cases[i].want.n,
                              what);
                secret_mask_free(m);
        }
}

struct counted {
        struct dynbuf out;
        int calls;
        int fail_with;
};

static int count_emit(void *ctx, const char *p, size_t n)
{
        struct counted *c = ctx;
        c->calls++;
        if (c->fail_with)
                return c->fail_with;
        return dynbuf_add(&c->out, p, n);
}

static void test_flush(void **state)
{
        (void)state;
        struct bytes v[] = { { S("secret") } };
        struct secret_mask *m = mask_of(v, 1);
        struct counted c = { 0 };
        dynbuf_init(&c.out, 1024);
        /* What cannot start a value goes out at once; "s" waits. */
        assert_int_equal(secret_mask_write(m, S("hello s"), count_emit, &c), 0);
        assert_string_equal(c.out.data, "hello ");
        /* A complete match waits for the next byte (a longer value could
         * still follow), then goes out as "***". */
        assert_int_equal(secret_mask_write(m, S("ecret"), count_emit, &c), 0);
        assert_string_equal(c.out.data, "hello ");
        assert_int_equal(secret_mask_write(m, S("!"), count_emit, &c), 0);
        assert_string_equal(c.out.data, "hello ***!");
        /* A held prefix goes out unmasked at a flush... */
        assert_int_equal(secret_mask_write(m, S(" secr"), count_emit, &c), 0);
        assert_string_equal(c.out.data, "hello ***! ");
        assert_int_equal(secret_mask_flush(m, count_emit, &c), 0);
        assert_string_equal(c.out.data, "hello ***! secr");
        /* ...and the stream starts afresh after it. */
        assert_int_equal(secret_mask_write(m, S("et secret"), count_emit, &c), 0);
        assert_int_equal(secret_mask_flush(m, count_emit, &c), 0);
        assert_string_equal(c.out.data, "hello ***! secret ***");
        /* Flushing with nothing held emits nothing. */
        int calls = c.calls;
        assert_int_equal(secret_mask_flush(m, count_emit, &c), 0);
        assert_int_equal(c.calls, calls);
        /* emit's error stops the write and is returned, and again until a
         * flush (which returns it too) starts afresh. */
        c.fail_with = -EPIPE;
        assert_int_equal(secret_mask_write(m, S("more output"), count_emit, &c), -EPIPE);
        assert_int_equal(secret_mask_write(m, S("x"), count_emit, &c), -EPIPE);
        assert_int_equal(secret_mask_flush(m, count_emit, &c), -EPIPE);
        c.fail_with = 0;
        assert_int_equal(secret_mask_write(m, S("ok secret."), count_emit, &c), 0);
        assert_string_equal(c.out.data, "hello ***! secret ***ok ***.");
        dynbuf_done(&c.out);
        secret_mask_free(m);
}

static void test_empty(void **state)
{
        (void)state;
        assert_true(secret_mask_empty(NULL));
        struct secret_mask *none = secret_mask_new(NULL, NULL, 0);
        assert_non_null(none);
        assert_true(secret_mask_empty(none));
        struct bytes shorts[] = { { S("abc") }, { S("") }, { S("a\nb") } };
        struct secret_mask *m = mask_of(shorts, 3);
        assert_true(secret_mask_empty(m));
        check_chunked(m, S("abc a\nb"), NULL, 0, S("abc a\nb"), "short values");
        secret_mask_free(m);
        secret_mask_free(none);
        secret_mask_free(NULL);
        struct bytes four[] = { { S("abcd") } };
        m = mask_of(four, 1);
        assert_false(secret_mask_empty(m));
        secret_mask_free(m);
}

static void test_too_big(void **state)
{
        (void)state;
        size_t len = SECRET_MASK_MAX_TOTAL / 2 + 1;
        char *big = malloc(len);
        assert_non_null(big);
        memset(big, 'k', len);
        const char *v[] = { big, big };
        size_t l[] = { len, len };
        errno = 0;
        assert_null(secret_mask_new(v, l, 2));
        assert_int_equal(errno, E2BIG);
        struct secret_mask *m = secret_mask_new(v, l, 1);
        assert_non_null(m);
        secret_mask_free(m);
        free(big);
}

/* --- random chunking against a reference ----------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t rnd(uint32_t n)
{
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return (uint32_t)(rng % n);
}

/* The reference: the same patterns (values, and lines of multi-line ones),
 * every occurrence found by brute force, overlapping ones merged. */
static size_t reference(const struct bytes *values, size_t n_values, const char *text, size_t len,
                        char *out)
{
        struct bytes pats[MAX_VALUES * 8];
        size_t n_pats = 0;
        for (size_t i = 0; i < n_values; i++) {
                if (values[i].n < SECRET_MASK_MIN_LEN)
                        continue;
                pats[n_pats++] = values[i];
                const char *p = values[i].p, *end = p + values[i].n;
                if (!memchr(p, '\n', values[i].n))
                        continue;
                while (p <= end) {
                        const char *nl = memchr(p, '\n', (size_t)(end - p));
                        const char *e = nl ? nl : end;
                        size_t l = (size_t)(e - p);
                        if (l && p[l - 1] == '\r')
                                l--;
                        if (l >= SECRET_MASK_MIN_LEN)
                                pats[n_pats++] = (struct bytes){ p, l };
                        p = e + 1;
                }
        }
        char *covered = calloc(len + 1, 1), *starts = calloc(len + 1, 1);
        assert_non_null(covered);
        assert_non_null(starts);
        size_t run_end = 0;
        for (size_t i = 0; i < len; i++) {
                size_t longest = 0;
                for (size_t k = 0; k < n_pats; k++)
                        if (pats[k].n <= len - i && pats[k].n > longest &&
                            memcmp(text + i, pats[k].p, pats[k].n) == 0)
                                longest = pats[k].n;
                if (!longest)
                        continue;
                if (i >= run_end)
                        starts[i] = 1;
                for (size_t j = i; j < i + longest; j++)
                        covered[j] = 1;
                if (i + longest > run_end)
                        run_end = i + longest;
        }
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
                if (starts[i]) {
                        memcpy(out + o, "***", 3);
                        o += 3;
                }
                if (!covered[i])
                        out[o++] = text[i];
        }
        free(covered);
        free(starts);
        return o;
}

static void test_random_chunking(void **state)
{
        (void)state;
        static const char alphabet[] = "ab\n\0";
        char vals[MAX_VALUES][16], text[3000], want[3000 * 3], what[64];
        size_t cuts[3000];
        for (int round = 0; round < 300; round++) {
                struct bytes values[MAX_VALUES];
                size_t n_values = 1 + rnd(6);
                for (size_t i = 0; i < n_values; i++) {
                        size_t l = 2 + rnd(9);
                        for (size_t j = 0; j < l; j++)
                                vals[i][j] = alphabet[rnd(round % 2 ? 4 : 2)];
                        values[i] = (struct bytes){ vals[i], l };
                }
                /* Text of random bytes and values, so occurrences abound. */
                size_t len = 0, max = 200 + rnd(2500);
                while (len + 16 < max) {
                        if (rnd(3) == 0) {
                                const struct bytes *v = &values[rnd((uint32_t)n_values)];
                                memcpy(text + len, v->p, v->n);
                                len += v->n;
                        } else {
                                text[len++] = alphabet[rnd(4)];
                        }
                }
                size_t want_len = reference(values, n_values, text, len, want);
                struct secret_mask *m = mask_of(values, n_values);
                size_t n_cuts = 0;
                for (size_t off = 0; off < len; n_cuts++) {
                        cuts[n_cuts] = rnd(round % 3 ? 12 : 300);
                        if (cuts[n_cuts] > len - off)
                                cuts[n_cuts] = len - off;
                        off += cuts[n_cuts];
                }
                snprintf(what, sizeof(what), "round %d", round);
                check_chunked(m, text, len, cuts, n_cuts, want, want_len, what);
                /* No value of 4 bytes or more is left in what went out. */
                for (size_t i = 0; i < n_values; i++)
                        if (values[i].n >= SECRET_MASK_MIN_LEN &&
                            memmem(want, want_len, values[i].p, values[i].n))
                                fail_msg("round %d: value %zu left in the output", round, i);
                secret_mask_free(m);
        }
}

/* 10 MiB of lowercase text with 1000 occurrences of 100 values (upper
 * case and digits, 32 bytes) in chunks of 4 KiB: every one masked, nothing
 * else changed.  No time is asserted; the suite's own timeout and the
 * valgrind suite's would catch a quadratic masker. */
static void test_throughput(void **state)
{
        (void)state;
        enum { N_VALUES = 100, VALUE_LEN = 32, OCCURRENCES = 1000, LEN = 10 << 20 };
        static char vals[N_VALUES][VALUE_LEN];
        const char *v[N_VALUES];
        size_t l[N_VALUES];
        for (int i = 0; i < N_VALUES; i++) {
                for (int j = 0; j < VALUE_LEN; j++)
                        vals[i][j] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[rnd(36)];
                v[i] = vals[i];
                l[i] = VALUE_LEN;
        }
        char *text = malloc(LEN);
        assert_non_null(text);
        for (size_t i = 0; i < LEN; i++)
                text[i] = (char)('a' + rnd(26));
        for (int k = 0; k < OCCURRENCES; k++)
                memcpy(text + (size_t)k * (LEN / OCCURRENCES), vals[k % N_VALUES], VALUE_LEN);
        struct secret_mask *m = secret_mask_new(v, l, N_VALUES);
        assert_non_null(m);
        struct dynbuf out;
        dynbuf_init(&out, (size_t)LEN + 1);
        for (size_t off = 0; off < LEN; off += 4096)
                assert_int_equal(secret_mask_write(m, text + off, 4096, collect, &out), 0);
        assert_int_equal(secret_mask_flush(m, collect, &out), 0);
        assert_int_equal(out.len, (size_t)LEN - OCCURRENCES * (VALUE_LEN - 3));
        size_t stars = 0;
        for (const char *p = out.data; (p = memmem(p, out.len - (size_t)(p - out.data), "***", 3));
             p += 3)
                stars++;
        assert_int_equal(stars, OCCURRENCES);
        dynbuf_done(&out);
        secret_mask_free(m);
        free(text);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),      cmocka_unit_test(test_split_everywhere),
                cmocka_unit_test(test_flush),      cmocka_unit_test(test_empty),
                cmocka_unit_test(test_too_big),    cmocka_unit_test(test_random_chunking),
                cmocka_unit_test(test_throughput),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
