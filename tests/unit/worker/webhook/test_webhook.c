/* Unit tests for webhook signing (Standard Webhooks test vector, rotation,
 * verification failures, secret parsing), the per-scope secrets derived
 * from the master key and their cache, and the pure parts of delivery:
 * URLs for logs, Retry-After, quoting response bodies and keeping the
 * URL's credentials out of them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/error.h"
#include "worker/webhook/webhook_derive.h"
#include "worker/webhook/webhook_post-internal.h"
#include "worker/webhook/webhook_post.h"
#include "worker/webhook/webhook_sign.h"

/* https://github.com/standard-webhooks/standard-webhooks (spec test vector) */
#define VEC_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define VEC_ID "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define VEC_TS 1614265330LL
#define VEC_TS_S "1614265330"
#define VEC_BODY "{\"test\": 2432232314}"
#define VEC_SIG "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
/* Two more keys (32 × 'B', 40 × 'C'); their signatures of the vector's
 * message were computed with Python's hmac module, not with boxcar. */
#define B_SECRET "whsec_QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI="
#define B_SIG "v1,qa+R7+zLUg4i64aCnJ92E+PbLXR7446Vnf40cfEl3Xs="
#define C_SECRET "whsec_Q0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQw=="
#define C_SIG "v1,pliGn405Oc/xhJ1nBRahNmDL+zX9I4Nl4urhP8xfYDY="

static struct webhook_secrets *secrets(const char *value)
{
        struct webhook_secrets *s = NULL;
        struct bc_error err = BC_ERROR_INIT;
        int r = webhook_secrets_parse(value, &s, &err);
        if (r < 0)
                fail_msg("parse '%s': %s", value, bc_error_message(&err));
        bc_error_clear(&err);
        return s;
}

static char *sign(const char *secret_value, const char *id, long long ts, const char *body)
{
        struct webhook_secrets *s = secrets(secret_value);
        struct bc_error err = BC_ERROR_INIT;
        char *h = NULL;
        assert_int_equal(webhook_sign(s, id, ts, body, strlen(body), &h, &err), 0);
        assert_null(err.message);
        webhook_secrets_free(s);
        return h;
}

static void test_vector(void **state)
{
        (void)state;
        char *h = sign(VEC_SECRET, VEC_ID, VEC_TS, VEC_BODY);
        assert_string_equal(h, VEC_SIG);
        free(h);
}

static void test_rotation_signs_with_every_secret(void **state)
{
        (void)state;
        char *h = sign(VEC_SECRET " " B_SECRET, VEC_ID, VEC_TS, VEC_BODY);
        assert_string_equal(h, VEC_SIG " " B_SIG);
        free(h);
        /* Any whitespace separates entries (a value from a file or YAML). */
        h = sign("\t" C_SECRET "\n  " VEC_SECRET "  ", VEC_ID, VEC_TS, VEC_BODY);
        assert_string_equal(h, C_SIG " " VEC_SIG);
        free(h);
}

/* Secrets derived from B_SECRET (C_SECRET for the last) as the master key,
 * computed with Python's hmac module from the definition in
 * webhook_derive.h, not with boxcar. */
static const struct derive_case {
        const char *master, *scope, *endpoint;
        int generation;
        const char *want;
} derive_cases[] = {
        { B_SECRET, "acme", "", 1, "whsec_UB55wZbJXExc8rV7jbxCMVAb4Df+Nu6K8sLuo8WxuLw=" },
        { B_SECRET, "acme", "", 2, "whsec_iKbi4SbZeBGuSwbG5dneSHAyv7/vPhelBhry0FGQ5XM=" },
        { B_SECRET, "acme", "", 0, "whsec_XcrccvJ/b3yAJ5pDAIbi5E+bk3NvROzbfBdTMTya26M=" },
        { B_SECRET, "acme", "https://a.example/h", 1,
          "whsec_YmFui5glWd27OO25sjmEamIoJ8gcZZ8KUvt2w4/Xgns=" },
        { B_SECRET, "beta", "", 1, "whsec_ClnkuFopYMHyqO982vek490/9ClOjVvO9g2uzdoMdAw=" },
        { C_SECRET, "acme", "", 1, "whsec_vY+UYY9uifF5PKHf2doqH9BPHqXpZ9Xfe1lPB/jppZ8=" },
};

static void test_derive_table(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(derive_cases) / sizeof(derive_cases[0]); i++) {
                const struct derive_case *c = &derive_cases[i];
                struct webhook_secrets *m = secrets(c->master);
                struct bc_error err = BC_ERROR_INIT;
                unsigned char key[WEBHOOK_DERIVED_KEY_BYTES];
                char text[WEBHOOK_SECRET_TEXT_SIZE];
                assert_int_equal(
                        webhook_derive_key(m, 0, c->scope, c->endpoint, c->generation, key, &err),
                        0);
                webhook_key_text(key, text);
                if (strcmp(text, c->want) != 0)
                        fail_msg("case %zu (%s, '%s', %d): got %s", i, c->scope, c->endpoint,
                                 c->generation, text);
                webhook_secrets_free(m);
        }
}

static void test_derive_refuses(void **state)
{
        (void)state;
        struct webhook_secrets *m = secrets(B_SECRET);
        struct bc_error err = BC_ERROR_INIT;
        unsigned char key[WEBHOOK_DERIVED_KEY_BYTES];
        assert_int_equal(webhook_derive_key(m, 0, "", "", 1, key, &err), -EINVAL);
        assert_non_null(strstr(bc_error_message(&err), "scope"));
        bc_error_clear(&err);
        assert_int_equal(webhook_derive_key(m, 0, "acme", "", -1, key, &err), -EINVAL);
        assert_non_null(strstr(bc_error_message(&err), "generation"));
        bc_error_clear(&err);
        char long_scope[WEBHOOK_SCOPE_MAX + 2];
        memset(long_scope, 'a', sizeof(long_scope) - 1);
        long_scope[sizeof(long_scope) - 1] = '\0';
        assert_int_equal(webhook_derive_key(m, 0, long_scope, "", 1, key, &err), -EINVAL);
        bc_error_clear(&err);
        webhook_secrets_free(m);
}

/* A delivery signed with derived keys from a small cache: every key comes
 * out right whether it was cached, evicted or new, and each master key
 * adds one signature. */
static void test_keycache_signs_with_derived_keys(void **state)
{
        (void)state;
        struct webhook_secrets *m = secrets(B_SECRET " " C_SECRET);
        struct webhook_keycache *c = NULL;
        struct webhook_secrets *set = NULL;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(webhook_keycache_new(m, 2, &c, &err), 0);
        assert_int_equal(webhook_secrets_new(&set, &err), 0);
        static const struct {
                const char *scope, *endpoint;
                int gen;
        } order[] = {
                { "acme", "", 1 }, { "beta", "", 1 }, { "acme", "https://a.example/h", 1 },
                { "acme", "", 1 }, { "acme", "", 1 },
        };
        for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
                webhook_secrets_reset(set);
                assert_int_equal(webhook_keycache_add(c, order[i].scope, order[i].endpoint,
                                                      order[i].gen, set, &err),
                                 0);
                assert_int_equal(webhook_secrets_count(set), 2);
                char *h = NULL;
                assert_int_equal(
                        webhook_sign(set, VEC_ID, VEC_TS, VEC_BODY, strlen(VEC_BODY), &h, &err),
                        0);
                /* The same header as signing with the derived secrets' text. */
                char want_secrets[2 * WEBHOOK_SECRET_TEXT_SIZE + 1];
                unsigned char key[WEBHOOK_DERIVED_KEY_BYTES];
                char text[WEBHOOK_SECRET_TEXT_SIZE];
                want_secrets[0] = '\0';
                for (size_t k = 0; k < 2; k++) {
                        assert_int_equal(webhook_derive_key(m, k, order[i].scope,
                                                            order[i].endpoint, order[i].gen, key,
                                                            &err),
                                         0);
                        webhook_key_text(key, text);
                        strcat(want_secrets, k ? " " : "");
                        strcat(want_secrets, text);
                }
                char *want = sign(want_secrets, VEC_ID, VEC_TS, VEC_BODY);
                assert_string_equal(h, want);
                free(want);
                free(h);
        }
        /* The first pair is generation 1 of acme as the table says. */
        webhook_secrets_reset(set);
        assert_int_equal(webhook_keycache_add(c, "acme", "", 1, set, &err), 0);
        char *h = NULL;
        assert_int_equal(webhook_sign(set, VEC_ID, VEC_TS, VEC_BODY, strlen(VEC_BODY), &h, &err),
                         0);
        char *want = sign("whsec_UB55wZbJXExc8rV7jbxCMVAb4Df+Nu6K8sLuo8WxuLw= "
                          "whsec_vY+UYY9uifF5PKHf2doqH9BPHqXpZ9Xfe1lPB/jppZ8=",
                          VEC_ID, VEC_TS, VEC_BODY);
        assert_string_equal(h, want);
        free(want);
        free(h);
        webhook_secrets_free(set);
        webhook_keycache_free(c);
        webhook_secrets_free(m);
}

static void test_signing_set_is_bounded(void **state)
{
        (void)state;
        struct webhook_secrets *set = NULL;
        struct bc_error err = BC_ERROR_INIT;
        unsigned char key[WEBHOOK_DERIVED_KEY_BYTES] = { 1 };
        assert_int_equal(webhook_secrets_new(&set, &err), 0);
        for (int i = 0; i < WEBHOOK_SIGNING_KEYS_MAX; i++)
                assert_int_equal(webhook_secrets_add(set, key, sizeof(key), &err), 0);
        assert_int_equal(webhook_secrets_add(set, key, sizeof(key), &err), -E2BIG);
        bc_error_clear(&err);
        webhook_secrets_reset(set);
        assert_int_equal(webhook_secrets_count(set), 0);
        assert_int_equal(webhook_secrets_add(set, key, 8, &err), -EINVAL);
        bc_error_clear(&err);
        webhook_secrets_free(set);
}

struct verify_case {
        const char *what;
        const char *secret, *id, *ts, *body, *header;
        long long now, tolerance;
        int want;
        const char *want_msg; /* substring of the error, when want != 0 */
};

static void test_verify_table(void **state)
{
        (void)state;
        static const struct verify_case cases[] = {
                { "vector", VEC_SECRET, VEC_ID, VEC_TS_S, VEC_BODY, VEC_SIG, VEC_TS, 300, 0,
                  NULL },
                { "body changed", VEC_SECRET, VEC_ID, VEC_TS_S, "{\"test\": 2432232315}", VEC_SIG,
                  VEC_TS, 300, -EBADMSG, "no matching signature" },
                { "body gains a newline", VEC_SECRET, VEC_ID, VEC_TS_S, VEC_BODY "\n", VEC_SIG,
                  VEC_TS, 300, -EBADMSG, "no matching signature" },
                { "id changed", VEC_SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJeK", VEC_TS_S, VEC_BODY,
                  VEC_SIG, VEC_TS, 300, -EBADMSG, "no matching signature" },
                { "timestamp changed", VEC_SECRET, VEC_ID, "1614265331", VEC_BODY, VEC_SIG, VEC_TS,
                  300, -EBADMSG, "no matching signature" },
                { "wrong secret", B_SECRET, VEC_ID, VEC_TS_S, VEC_BODY, VEC_SIG, VEC_TS, 300,
                  -EBADMSG, "wrong secret" },
                { "stale", VEC_SECRET, VEC_ID, VEC_TS_S, VEC_BODY, VEC_SIG, VEC_TS + 301, 300,
                  -ERANGE, "stale timestamp: 301 s before now" },
                { "from the future", VEC_SECRET, VEC_ID, VEC_TS_S, VEC_BODY, VEC_SIG, VEC_TS - 301,
                  300, -ERANGE, "301 s ahead of now" },
                { "at the tolerance edge", VEC_SECRET, VEC_ID, VEC_TS_S, VEC_BODY, VEC_SIG,
                  VEC_TS + 300, 300, 0, NULL },
                { "check skipped", VEC_SECRET, VEC_ID, VEC_TS_S, VEC_BODY, VEC_SIG, 2000000000LL,
                  -1, 0, NULL },
                { "other versions ignored", VEC_SECRET, VEC_ID, VEC_TS_S, VEC_BODY,
                  "v1a,abc v2,xyz " VEC_SIG, VEC_TS, 300, 0, NULL },
                { "only other versions", VEC_SECRET, VEC_ID, VEC_TS_S, VEC_BODY,
                  "v1a,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", VEC_TS, 300, -EINVAL,
                  "no v1 signature" },
                { "truncated signature", VEC_SECRET, VEC_ID, VEC_TS_S, VEC_BODY,
                  "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE", VEC_TS, 300, -EBADMSG, NULL },
                { "empty header", VEC_SECRET, VEC_ID, VEC_TS_S, VEC_BODY, "", VEC_TS, 300, -EINVAL,
                  "webhook-signature missing" },
                { "no header", VEC_SECRET, VEC_ID, VEC_TS_S, VEC_BODY, NULL, VEC_TS, 300, -EINVAL,
                  "webhook-signature missing" },
                { "no id", VEC_SECRET, NULL, VEC_TS_S, VEC_BODY, VEC_SIG, VEC_TS, 300, -EINVAL,
                  "webhook-id" },
                { "timestamp with fraction", VEC_SECRET, VEC_ID, VEC_TS_S ".0", VEC_BODY, VEC_SIG,
                  VEC_TS, 300, -EINVAL, "webhook-timestamp" },
                { "timestamp with space", VEC_SECRET, VEC_ID, " " VEC_TS_S, VEC_BODY, VEC_SIG,
                  VEC_TS, 300, -EINVAL, "webhook-timestamp" },
                { "negative timestamp", VEC_SECRET, VEC_ID, "-1", VEC_BODY, VEC_SIG, VEC_TS, 300,
                  -EINVAL, "webhook-timestamp" },
                { "rotation: header has both, verifier the old", VEC_SECRET, VEC_ID, VEC_TS_S,
                  VEC_BODY, VEC_SIG " " B_SIG, VEC_TS, 300, 0, NULL },
                { "rotation: header has both, verifier the new", B_SECRET, VEC_ID, VEC_TS_S,
                  VEC_BODY, VEC_SIG " " B_SIG, VEC_TS, 300, 0, NULL },
                { "rotation: verifier has both, header the new", VEC_SECRET " " B_SECRET, VEC_ID,
                  VEC_TS_S, VEC_BODY, B_SIG, VEC_TS, 300, 0, NULL },
                { "rotation: neither", C_SECRET, VEC_ID, VEC_TS_S, VEC_BODY, VEC_SIG " " B_SIG,
                  VEC_TS, 300, -EBADMSG, "2 v1 signatures checked against 1 secret" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct verify_case *c = &cases[i];
                struct webhook_secrets *s = secrets(c->secret);
                struct bc_error err = BC_ERROR_INIT;
                int r = webhook_verify(s, c->id, c->ts, c->body, strlen(c->body), c->header,
                                       c->now, c->tolerance, &err);
                if (r != c->want)
                        fail_msg("%s: got %d (%s), want %d", c->what, r, bc_error_message(&err),
                                 c->want);
                if (c->want_msg && !strstr(bc_error_message(&err), c->want_msg))
                        fail_msg("%s: message '%s' lacks '%s'", c->what, bc_error_message(&err),
                                 c->want_msg);
                bc_error_clear(&err);
                webhook_secrets_free(s);
        }
}

static void test_sign_refuses_bad_ids(void **state)
{
        (void)state;
        struct webhook_secrets *s = secrets(VEC_SECRET);
        static const char *const ids[] = { "", "a b", "a\r\nX-Evil: 1", "caf\xc3\xa9" };
        for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
                struct bc_error err = BC_ERROR_INIT;
                char *h = NULL;
                assert_int_equal(webhook_sign(s, ids[i], VEC_TS, "{}", 2, &h, &err), -EINVAL);
                assert_null(h);
                bc_error_clear(&err);
        }
        /* An empty body is signed as "<id>.<ts>." */
        struct bc_error err = BC_ERROR_INIT;
        char *h = NULL;
        assert_int_equal(webhook_sign(s, VEC_ID, VEC_TS, NULL, 0, &h, &err), 0);
        assert_int_equal(webhook_verify(s, VEC_ID, VEC_TS_S, NULL, 0, h, VEC_TS, 0, &err), 0);
        free(h);
        webhook_secrets_free(s);
}

struct secret_case {
        const char *value;
        const char *want_msg;
        const char *must_not_show; /* key material that must not be echoed */
};

static void test_bad_secrets(void **state)
{
        (void)state;
        static const struct secret_case cases[] = {
                { NULL, "empty", NULL },
                { "", "empty", NULL },
                { " \t\n", "empty", NULL },
                { "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "entry 1 of 1: does not start with whsec_",
                  "MfKQ9r8G" },
                { "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                  "entry 2 of 2: does not start with whsec_", "MfKQ9r8G" },
                { VEC_SECRET " whsec_MfKQ9r8GKYqr!wjUPD8ILPZIo2LaLaSw",
                  "entry 2 of 2: not valid base64 after whsec_", "KYqr!wj" },
                { "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwA", "not valid base64", "MfKQ9r8G" },
                { "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=", "not valid base64", "MfKQ9r8G" },
                { "whsec_", "key is 0 bytes, need 24 to 64", NULL },
                { "whsec_c2hvcnRrZXk=", "entry 1 of 1: key is 8 bytes, need 24 to 64",
                  "c2hvcnRrZXk" },
                { "whsec_a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2"
                  "tra2tra2tra2s=",
                  "key longer than 64 bytes", "a2tra2tr" },
                { VEC_SECRET " " VEC_SECRET " " VEC_SECRET " " VEC_SECRET " " VEC_SECRET
                             " " VEC_SECRET " " VEC_SECRET " " VEC_SECRET " " VEC_SECRET,
                  "9 entries, at most 8", "MfKQ9r8G" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct secret_case *c = &cases[i];
                struct webhook_secrets *s = NULL;
                struct bc_error err = BC_ERROR_INIT;
                assert_int_equal(webhook_secrets_parse(c->value, &s, &err), -EINVAL);
                assert_null(s);
                assert_int_equal(err.code, BC_CONFIG);
                const char *m = bc_error_message(&err);
                if (!strstr(m, c->want_msg))
                        fail_msg("case %zu: message '%s' lacks '%s'", i, m, c->want_msg);
                if (c->must_not_show && strstr(m, c->must_not_show))
                        fail_msg("case %zu: message '%s' shows the secret", i, m);
                bc_error_clear(&err);
        }
        /* Unpadded base64 is the same key. */
        char *h = sign("whsec_QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI", VEC_ID, VEC_TS,
                       VEC_BODY);
        assert_string_equal(h, B_SIG);
        free(h);
}

static void test_url_for_log(void **state)
{
        (void)state;
        static const char *const cases[][2] = {
                { "https://user:pass@example.com/hook?token=abc#frag",
                  "https://example.com/hook" },
                { "https://tok@example.com/", "https://example.com/" },
                { "http://example.com:8080/a/b?x=1&sig=s", "http://example.com:8080/a/b" },
                { "https://example.com", "https://example.com/" },
                { "https://example.com?secret=1", "https://example.com/" },
                { "http://[::1]:9000/h", "http://[::1]:9000/h" },
                { "http://u:p@127.0.0.1:1/x#y", "http://127.0.0.1:1/x" },
                { "ftp://u:p@host/x?y", "ftp://host/x" },
                { "not a url", "<invalid URL>" },
                { "", "<invalid URL>" },
                { NULL, "<invalid URL>" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *got = webhook_url_for_log(cases[i][0]);
                assert_non_null(got);
                if (strcmp(got, cases[i][1]) != 0)
                        fail_msg("'%s': got '%s', want '%s'", cases[i][0] ? cases[i][0] : "(null)",
                                 got, cases[i][1]);
                free(got);
        }
        /* An unencoded '/' in a password must not make the rest of it look
         * like a path we then print. */
        char *got = webhook_url_for_log("http://user:se/cret@example.com/h");
        assert_null(strstr(got, "cret"));
        free(got);
}

struct retry_case {
        const char *value;
        double want;
};

static void test_retry_after(void **state)
{
        (void)state;
        const long long now = 1445412480; /* Wed, 21 Oct 2015 07:28:00 GMT */
        static const struct retry_case cases[] = {
                { "120", 120 },
                { "0", 0 },
                { " 7 ", 7 },
                { "99999999999999999999999", WEBHOOK_RETRY_AFTER_MAX_S },
                { "Wed, 21 Oct 2015 07:29:00 GMT", 60 },
                { "Wednesday, 21-Oct-15 07:30:00 GMT", 120 },
                { "Wed Oct 21 07:28:30 2015", 30 },
                { "Wed, 21 Oct 2015 07:00:00 GMT", 0 },
                { "Wed, 21 Oct 2025 07:28:00 GMT", WEBHOOK_RETRY_AFTER_MAX_S },
                { "", -1 },
                { "   ", -1 },
                { NULL, -1 },
                { "-5", -1 },
                { "1.5", -1 },
                { "5s", -1 },
                { "soon", -1 },
                { "+5", -1 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                double got = webhook_parse_retry_after(cases[i].value, now);
                if (got != cases[i].want)
                        fail_msg("'%s': got %g, want %g",
                                 cases[i].value ? cases[i].value : "(null)", got, cases[i].want);
        }
}

static void test_body_quote(void **state)
{
        (void)state;
        static const struct {
                const char *body;
                size_t max;
                const char *want;
        } cases[] = {
                { "oops", 200, "oops" },
                { "  line one\r\n\tline two\n\n", 200, "line one line two" },
                { "\x1b[31mred\x1b[0m", 200, "[31mred [0m" },
                { "abcdef", 3, "abc" },
                { "caf\xc3\xa9!", 4, "caf" }, /* never half an é */
                { "caf\xc3\xa9!", 5, "caf\xc3\xa9" },
                { "bad \xff byte", 200, "bad \xef\xbf\xbd byte" },
                { "", 200, "" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *got = webhook_body_quote(cases[i].body, strlen(cases[i].body), cases[i].max);
                assert_non_null(got);
                if (strcmp(got, cases[i].want) != 0)
                        fail_msg("case %zu: got '%s', want '%s'", i, got, cases[i].want);
                free(got);
        }
}

static void test_redact_url_secrets(void **state)
{
        (void)state;
        static const char *const cases[][3] = {
                { "https://u:hunter2@h/p?token=abc%2Fdef&x=1",
                  "Not found: /p?token=abc%2Fdef&x=1 (token abc/def, user u, pass hunter2)",
                  "Not found: /p?*** (token ***, user u, pass ***)" },
                { "https://h/p?sig=S3CR3T", "bad sig S3CR3T!", "bad sig ***!" },
                { "https://h/p", "plain error", "plain error" },
                { "https://h/p?q=a+b", "q was a b", "q was ***" },
                { "not a url", "whatever", "whatever" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                size_t len = 0;
                char *got = webhook_redact_url_secrets(cases[i][1], strlen(cases[i][1]),
                                                       cases[i][0], &len);
                assert_non_null(got);
                assert_int_equal(len, strlen(got));
                if (strcmp(got, cases[i][2]) != 0)
                        fail_msg("case %zu: got '%s', want '%s'", i, got, cases[i][2]);
                free(got);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vector),
                cmocka_unit_test(test_rotation_signs_with_every_secret),
                cmocka_unit_test(test_derive_table),
                cmocka_unit_test(test_derive_refuses),
                cmocka_unit_test(test_keycache_signs_with_derived_keys),
                cmocka_unit_test(test_signing_set_is_bounded),
                cmocka_unit_test(test_verify_table),
                cmocka_unit_test(test_sign_refuses_bad_ids),
                cmocka_unit_test(test_bad_secrets),
                cmocka_unit_test(test_url_for_log),
                cmocka_unit_test(test_retry_after),
                cmocka_unit_test(test_body_quote),
                cmocka_unit_test(test_redact_url_secrets),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
