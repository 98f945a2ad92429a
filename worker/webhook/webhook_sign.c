#include "worker/webhook/webhook_sign.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "common/base64.h"
#include "common/dynbuf.h"

#define SECRET_PREFIX "whsec_"
#define HMAC_LEN 32
/* base64 of 32 bytes, padded: what every v1 signature we accept looks like. */
#define SIG_B64_LEN 44
/* Ids are header values we also put in the signed text: keep them short
 * and plain so they cannot smuggle a header or a newline. */
#define MSG_ID_MAX 256
/* Seconds since the epoch as decimal; 15 digits keep now - ts in range. */
#define TIMESTAMP_MAX_DIGITS 15

struct webhook_key {
        unsigned char bytes[WEBHOOK_SECRET_MAX_BYTES];
        size_t len;
};

struct webhook_secrets {
        EVP_MAC *hmac; /* fetched once; EVP_MAC objects are shareable across threads */
        size_t n;
        struct webhook_key keys[WEBHOOK_SIGNING_KEYS_MAX];
};

BC_DEFINE_CLEANUP(EVP_MAC_CTX *, EVP_MAC_CTX_free)

/* Strict standard-alphabet base64 (padding optional, nothing else
 * allowed) into out[cap].  OpenSSL's EVP_DecodeBlock is not used because
 * it skips whitespace and counts padding as data.  Returns the decoded
 * length, or -EINVAL (bad text) / -E2BIG (more than cap bytes). */
static int b64_decode(const char *in, size_t len, unsigned char *out, size_t cap)
{
        if (len % 4 == 0 && len >= 2 && in[len - 1] == '=')
                len -= in[len - 2] == '=' ? 2 : 1;
        if (len % 4 == 1)
                return -EINVAL;
        size_t need = len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0);
        if (need > cap)
                return -E2BIG;
        unsigned acc = 0, bits = 0;
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
                int v = base64_value((unsigned char)in[i]);
                if (v < 0)
                        return -EINVAL;
                acc = (acc << 6) | (unsigned)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[o++] = (unsigned char)(acc >> bits);
                        acc &= (1u << bits) - 1;
                }
        }
        return (int)o;
}

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t count_entries(const char *v)
{
        size_t n = 0;
        while (*v) {
                while (is_space(*v))
                        v++;
                if (!*v)
                        break;
                n++;
                while (*v && !is_space(*v))
                        v++;
        }
        return n;
}

/* One "whsec_<base64>" entry into key.  Messages describe the entry's
 * shape only: a secret pasted into a log line is a leaked secret. */
static int parse_one(const char *e, size_t len, size_t idx, size_t n, struct webhook_key *key,
                     struct bc_error *err)
{
        size_t plen = strlen(SECRET_PREFIX);
        if (len < plen || memcmp(e, SECRET_PREFIX, plen) != 0)
                return bc_error_set(
                        err, BC_CONFIG, EINVAL,
                        "webhook secret entry %zu of %zu: does not start with " SECRET_PREFIX, idx,
                        n);
        int r = b64_decode(e + plen, len - plen, key->bytes, sizeof(key->bytes));
        if (r == -E2BIG)
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "webhook secret entry %zu of %zu: key longer than %d bytes",
                                    idx, n, WEBHOOK_SECRET_MAX_BYTES);
        if (r < 0)
                return bc_error_set(
                        err, BC_CONFIG, EINVAL,
                        "webhook secret entry %zu of %zu: not valid base64 after " SECRET_PREFIX,
                        idx, n);
        if (r < WEBHOOK_SECRET_MIN_BYTES) {
                OPENSSL_cleanse(key->bytes, sizeof(key->bytes));
                return bc_error_set(
                        err, BC_CONFIG, EINVAL,
                        "webhook secret entry %zu of %zu: key is %d bytes, need %d to %d", idx, n,
                        r, WEBHOOK_SECRET_MIN_BYTES, WEBHOOK_SECRET_MAX_BYTES);
        }
        key->len = (size_t)r;
        return 0;
}

int webhook_secrets_parse(const char *value, struct webhook_secrets **ret, struct bc_error *err)
{
        size_t n = value ? count_entries(value) : 0;
        if (n == 0)
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "webhook secret: empty (expected " SECRET_PREFIX "<base64>)");
        if (n > WEBHOOK_SECRETS_MAX)
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "webhook secret: %zu entries, at most %d", n,
                                    WEBHOOK_SECRETS_MAX);
        _cleanup_webhook_secrets_ struct webhook_secrets *s = calloc(1, sizeof(*s));
        if (!s)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "webhook secret: out of memory");
        const char *p = value;
        for (size_t i = 0; i < n; i++) {
                while (is_space(*p))
                        p++;
                const char *start = p;
                while (*p && !is_space(*p))
                        p++;
                int r = parse_one(start, (size_t)(p - start), i + 1, n, &s->keys[i], err);
                if (r < 0)
                        return r;
                s->n++;
        }
        s->hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        if (!s->hmac)
                return bc_error_set(err, BC_INTERNAL, EIO, "webhook secret: OpenSSL has no HMAC");
        *ret = steal_pointer(&s);
        return 0;
}

void webhook_secrets_free(struct webhook_secrets *s)
{
        if (!s)
                return;
        EVP_MAC_free(s->hmac);
        OPENSSL_cleanse(s->keys, sizeof(s->keys));
        free(s);
}

size_t webhook_secrets_count(const struct webhook_secrets *s)
{
        return s ? s->n : 0;
}

int webhook_secrets_new(struct webhook_secrets **ret, struct bc_error *err)
{
        _cleanup_webhook_secrets_ struct webhook_secrets *s = calloc(1, sizeof(*s));
        if (!s)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "webhook secrets: out of memory");
        s->hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        if (!s->hmac)
                return bc_error_set(err, BC_INTERNAL, EIO, "webhook secrets: OpenSSL has no HMAC");
        *ret = steal_pointer(&s);
        return 0;
}

int webhook_secrets_add(struct webhook_secrets *s, const unsigned char *key, size_t len,
                        struct bc_error *err)
{
        if (s->n >= WEBHOOK_SIGNING_KEYS_MAX)
                return bc_error_set(err, BC_CONFIG, E2BIG,
                                    "webhook secrets: more than %d keys to sign with",
                                    WEBHOOK_SIGNING_KEYS_MAX);
        if (len < WEBHOOK_SECRET_MIN_BYTES || len > WEBHOOK_SECRET_MAX_BYTES)
                return bc_error_set(err, BC_INTERNAL, EINVAL,
                                    "webhook secrets: a key of %zu bytes, need %d to %d", len,
                                    WEBHOOK_SECRET_MIN_BYTES, WEBHOOK_SECRET_MAX_BYTES);
        memcpy(s->keys[s->n].bytes, key, len);
        s->keys[s->n].len = len;
        s->n++;
        return 0;
}

void webhook_secrets_reset(struct webhook_secrets *s)
{
        OPENSSL_cleanse(s->keys, sizeof(s->keys));
        s->n = 0;
}

int webhook_secrets_hmac(const struct webhook_secrets *s, size_t i, const struct iovec *parts,
                         size_t n, unsigned char out[static HMAC_LEN])
{
        if (i >= s->n)
                return -EINVAL;
        _cleanup_(EVP_MAC_CTX_freep) EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(s->hmac);
        if (!ctx)
                return -ENOMEM;
        char digest[] = "SHA256";
        OSSL_PARAM params[] = {
                OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                OSSL_PARAM_construct_end(),
        };
        if (!EVP_MAC_init(ctx, s->keys[i].bytes, s->keys[i].len, params))
                return -EIO;
        for (size_t k = 0; k < n; k++)
                if (parts[k].iov_len > 0 &&
                    !EVP_MAC_update(ctx, parts[k].iov_base, parts[k].iov_len))
                        return -EIO;
        size_t mac_len = 0;
        if (!EVP_MAC_final(ctx, out, &mac_len, HMAC_LEN) || mac_len != HMAC_LEN)
                return -EIO;
        return 0;
}

/* base64(HMAC-SHA256(key i, "<id>.<ts>.<body>")) into out (NUL-terminated).
 * Streamed through EVP_MAC so a large body is never copied. */
static int sign_one(const struct webhook_secrets *s, size_t i, const char *msg_id, const char *ts,
                    const char *body, size_t body_len, char out[static SIG_B64_LEN + 1])
{
        struct iovec parts[] = {
                { (void *)msg_id, strlen(msg_id) }, { (void *)".", 1 },
                { (void *)ts, strlen(ts) },         { (void *)".", 1 },
                { (void *)body, body_len },
        };
        unsigned char mac[HMAC_LEN];
        int r = webhook_secrets_hmac(s, i, parts, ELEMENTSOF(parts), mac);
        if (r < 0)
                return r;
        EVP_EncodeBlock((unsigned char *)out, mac, HMAC_LEN);
        OPENSSL_cleanse(mac, sizeof(mac));
        return 0;
}

static bool msg_id_ok(const char *id)
{
        size_t n = id ? strlen(id) : 0;
        if (n == 0 || n > MSG_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (id[i] <= 0x20 || id[i] >= 0x7f)
                        return false;
        return true;
}

int webhook_sign(const struct webhook_secrets *s, const char *msg_id, long long timestamp,
                 const char *body, size_t body_len, char **ret_header, struct bc_error *err)
{
        if (webhook_secrets_count(s) == 0)
                return bc_error_set(err, BC_CONFIG, EINVAL, "webhook sign: no secret");
        if (!msg_id_ok(msg_id))
                return bc_error_set(err, BC_INTERNAL, EINVAL,
                                    "webhook sign: message id empty, too long or not printable");
        char ts[32];
        snprintf(ts, sizeof(ts), "%lld", timestamp);
        struct dynbuf b;
        dynbuf_init(&b, WEBHOOK_SIGNING_KEYS_MAX * (SIG_B64_LEN + 4));
        for (size_t i = 0; i < s->n; i++) {
                char sig[SIG_B64_LEN + 1];
                int r = sign_one(s, i, msg_id, ts, body, body_len, sig);
                if (r < 0) {
                        dynbuf_done(&b);
                        return bc_error_set(err, BC_INTERNAL, -r, "webhook sign: HMAC failed");
                }
                r = dynbuf_printf(&b, "%sv1,%s", i ? " " : "", sig);
                if (r < 0) {
                        dynbuf_done(&b);
                        return bc_error_set(err, BC_INTERNAL, -r, "webhook sign: out of memory");
                }
        }
        char *h = dynbuf_steal(&b);
        if (!h)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "webhook sign: out of memory");
        *ret_header = h;
        return 0;
}

/* Decimal seconds only: a sign, a space or a fraction is a different
 * string from the one that was signed, so it cannot be "fixed up". */
static int parse_timestamp(const char *s, long long *ret)
{
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > TIMESTAMP_MAX_DIGITS)
                return -EINVAL;
        long long v = 0;
        for (size_t i = 0; i < n; i++) {
                if (!isdigit((unsigned char)s[i]))
                        return -EINVAL;
                v = v * 10 + (s[i] - '0');
        }
        *ret = v;
        return 0;
}

/* Whether any "v1,<b64>" entry of header equals any of the expected
 * signatures.  CRYPTO_memcmp keeps the comparison time independent of
 * where the bytes differ, so a forger learns nothing from timing.
 * *ret_v1 counts the v1 entries seen. */
static bool header_matches(const char *header, char expected[][SIG_B64_LEN + 1], size_t n,
                           size_t *ret_v1)
{
        bool match = false;
        size_t v1 = 0;
        const char *p = header;
        while (*p) {
                while (is_space(*p))
                        p++;
                const char *start = p;
                while (*p && !is_space(*p))
                        p++;
                size_t len = (size_t)(p - start);
                if (len < 3 || memcmp(start, "v1,", 3) != 0)
                        continue;
                v1++;
                if (len - 3 != SIG_B64_LEN)
                        continue;
                for (size_t i = 0; i < n; i++)
                        if (CRYPTO_memcmp(start + 3, expected[i], SIG_B64_LEN) == 0)
                                match = true;
        }
        *ret_v1 = v1;
        return match;
}

int webhook_verify(const struct webhook_secrets *s, const char *msg_id, const char *timestamp,
                   const char *body, size_t body_len, const char *signature_header, long long now,
                   long long tolerance_s, struct bc_error *err)
{
        if (webhook_secrets_count(s) == 0)
                return bc_error_set(err, BC_CONFIG, EINVAL, "no webhook secret to verify with");
        if (!msg_id || !*msg_id)
                return bc_error_set(err, BC_CHECKSUM_MISMATCH, EINVAL, "webhook-id missing");
        if (!msg_id_ok(msg_id))
                return bc_error_set(err, BC_CHECKSUM_MISMATCH, EINVAL,
                                    "webhook-id too long or not printable");
        long long ts;
        if (!timestamp || !*timestamp)
                return bc_error_set(err, BC_CHECKSUM_MISMATCH, EINVAL,
                                    "webhook-timestamp missing");
        if (parse_timestamp(timestamp, &ts) < 0)
                return bc_error_set(err, BC_CHECKSUM_MISMATCH, EINVAL,
                                    "webhook-timestamp is not decimal seconds");
        if (!signature_header || !*signature_header)
                return bc_error_set(err, BC_CHECKSUM_MISMATCH, EINVAL,
                                    "webhook-signature missing");

        char expected[WEBHOOK_SIGNING_KEYS_MAX][SIG_B64_LEN + 1];
        for (size_t i = 0; i < s->n; i++) {
                int r = sign_one(s, i, msg_id, timestamp, body, body_len, expected[i]);
                if (r < 0)
                        return bc_error_set(err, BC_INTERNAL, -r, "webhook verify: HMAC failed");
        }
        size_t v1 = 0;
        bool match = header_matches(signature_header, expected, s->n, &v1);
        OPENSSL_cleanse(expected, sizeof(expected));
        if (v1 == 0)
                return bc_error_set(err, BC_CHECKSUM_MISMATCH, EINVAL,
                                    "webhook-signature has no v1 signature");
        if (!match)
                return bc_error_set(
                        err, BC_CHECKSUM_MISMATCH, EBADMSG,
                        "no matching signature (%zu v1 signature%s checked against "
                        "%zu secret%s; wrong secret, or id, timestamp or body changed)",
                        v1, v1 == 1 ? "" : "s", s->n, s->n == 1 ? "" : "s");
        long long skew = now - ts;
        if (tolerance_s >= 0 && (skew > tolerance_s || skew < -tolerance_s))
                return bc_error_set(err, BC_CHECKSUM_MISMATCH, ERANGE,
                                    "stale timestamp: %lld s %s now, tolerance %lld s",
                                    skew < 0 ? -skew : skew, skew < 0 ? "ahead of" : "before",
                                    tolerance_s);
        return 0;
}
