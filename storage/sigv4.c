#include "storage/sigv4.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "common/cleanup.h"
#include "common/uri.h"

/* A canonical request is a few hundred bytes; S3 keys are at most 1 KiB
 * and headers 8 KiB, so 64 KiB is a cap no honest request reaches. */
#define SIGV4_MAX 65536
#define SIGV4_MAX_PAIRS 64

#define _cleanup_dynbuf_ _cleanup_(dynbuf_donep)

int sigv4_uri_encode(struct dynbuf *b, const char *s, int keep_slash)
{
        return bc_uri_encode(b, s, keep_slash);
}

void sigv4_amz_date(time_t now, char buf[static 17])
{
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(buf, 17, "%Y%m%dT%H%M%SZ", &tm);
}

static void hex_encode(const unsigned char *in, size_t n, char *out)
{
        static const char hex[] = "0123456789abcdef";
        for (size_t i = 0; i < n; i++) {
                out[2 * i] = hex[in[i] >> 4];
                out[2 * i + 1] = hex[in[i] & 15];
        }
        out[2 * n] = '\0';
}

static void sha256_hex(const void *data, size_t len, char out[65])
{
        unsigned char md[SHA256_DIGEST_LENGTH];
        SHA256(data, len, md);
        hex_encode(md, sizeof(md), out);
}

static int hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
        unsigned int outlen = 32;
        if (!HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out,
                  &outlen))
                return -EIO;
        return 0;
}

/* An encoded pair kept for sorting: both canonical query parameters and
 * canonical headers are "sorted by name, then value". */
struct enc_pair {
        char *name;
        char *value;
};

static int cmp_pair(const void *a, const void *b)
{
        const struct enc_pair *x = a, *y = b;
        int c = strcmp(x->name, y->name);
        return c ? c : strcmp(x->value, y->value);
}

static void free_pairs(struct enc_pair *p, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(p[i].name);
                free(p[i].value);
        }
}

static char *encode_dup(const char *s)
{
        _cleanup_dynbuf_ struct dynbuf b;
        dynbuf_init(&b, SIGV4_MAX);
        if (dynbuf_addstr(&b, "") < 0 || sigv4_uri_encode(&b, s, 0) < 0)
                return NULL;
        return dynbuf_steal(&b);
}

/* Header values are trimmed and runs of spaces squeezed (SigV4 rule). */
static char *header_value_dup(const char *s)
{
        _cleanup_dynbuf_ struct dynbuf b;
        dynbuf_init(&b, SIGV4_MAX);
        if (dynbuf_addstr(&b, "") < 0)
                return NULL;
        while (*s == ' ' || *s == '\t')
                s++;
        bool space = false;
        for (; *s; s++) {
                if (*s == ' ' || *s == '\t') {
                        space = true;
                        continue;
                }
                if (space && dynbuf_add(&b, " ", 1) < 0)
                        return NULL;
                space = false;
                if (dynbuf_add(&b, s, 1) < 0)
                        return NULL;
        }
        return dynbuf_steal(&b);
}

static char *lower_dup(const char *s)
{
        char *d = strdup(s);
        for (char *p = d; p && *p; p++)
                *p = (char)tolower((unsigned char)*p);
        return d;
}

static bool has_header(const struct sigv4_request *req, const char *name)
{
        for (size_t i = 0; i < req->n_headers; i++)
                if (strcasecmp(req->headers[i].name, name) == 0)
                        return true;
        return false;
}

struct signing {
        bool presign;
        long expires_s;
        char amz_date[17];
        char scope[256];
        struct enc_pair q[SIGV4_MAX_PAIRS];
        size_t nq;
        struct enc_pair h[SIGV4_MAX_PAIRS];
        size_t nh;
};

static int add_pair(struct enc_pair *arr, size_t *n, char *name, char *value)
{
        if (!name || !value || *n >= SIGV4_MAX_PAIRS) {
                free(name);
                free(value);
                return -E2BIG;
        }
        arr[*n].name = name;
        arr[*n].value = value;
        (*n)++;
        return 0;
}

static int add_query(struct signing *s, const char *name, const char *value)
{
        return add_pair(s->q, &s->nq, encode_dup(name), encode_dup(value));
}

static int add_header(struct signing *s, const char *name, const char *value)
{
        return add_pair(s->h, &s->nh, lower_dup(name), header_value_dup(value));
}

/* Collects the canonical query parameters and headers of req. */
static int collect(const struct sigv4_request *req, struct signing *s)
{
        int r = 0;
        for (size_t i = 0; r == 0 && i < req->n_query; i++)
                r = add_query(s, req->query[i].name,
                              req->query[i].value ? req->query[i].value : "");
        r = r ? r : add_header(s, "host", req->host);
        if (s->presign) {
                char cred[512];
                snprintf(cred, sizeof(cred), "%s/%s", req->access_key, s->scope);
                char exp[32];
                snprintf(exp, sizeof(exp), "%ld", s->expires_s);
                r = r ? r : add_query(s, "X-Amz-Algorithm", "AWS4-HMAC-SHA256");
                r = r ? r : add_query(s, "X-Amz-Credential", cred);
                r = r ? r : add_query(s, "X-Amz-Date", s->amz_date);
                r = r ? r : add_query(s, "X-Amz-Expires", exp);
                r = r ? r : add_query(s, "X-Amz-SignedHeaders", "host");
                /* S3 wants the token inside the signed query, unlike other
                 * services that append it afterwards. */
                if (req->session_token)
                        r = r ? r : add_query(s, "X-Amz-Security-Token", req->session_token);
                return r;
        }
        for (size_t i = 0; r == 0 && i < req->n_headers; i++)
                r = add_header(s, req->headers[i].name, req->headers[i].value);
        if (!has_header(req, "x-amz-date"))
                r = r ? r : add_header(s, "x-amz-date", s->amz_date);
        if (!has_header(req, "x-amz-content-sha256"))
                r = r ? r : add_header(s, "x-amz-content-sha256", req->payload_sha256);
        if (req->session_token && !has_header(req, "x-amz-security-token"))
                r = r ? r : add_header(s, "x-amz-security-token", req->session_token);
        return r;
}

static int append_query(struct dynbuf *b, const struct signing *s)
{
        int r = 0;
        for (size_t i = 0; r == 0 && i < s->nq; i++)
                r = dynbuf_printf(b, "%s%s=%s", i ? "&" : "", s->q[i].name, s->q[i].value);
        return r;
}

static int append_signed_headers(struct dynbuf *b, const struct signing *s)
{
        int r = 0;
        for (size_t i = 0; r == 0 && i < s->nh; i++)
                r = dynbuf_printf(b, "%s%s", i ? ";" : "", s->h[i].name);
        return r;
}

static int canonical_request(const struct sigv4_request *req, const struct signing *s,
                             struct dynbuf *b)
{
        int r = dynbuf_printf(b, "%s\n", req->method);
        r = r ? r : sigv4_uri_encode(b, req->path, 1);
        r = r ? r : dynbuf_addstr(b, "\n");
        r = r ? r : append_query(b, s);
        r = r ? r : dynbuf_addstr(b, "\n");
        for (size_t i = 0; r == 0 && i < s->nh; i++)
                r = dynbuf_printf(b, "%s:%s\n", s->h[i].name, s->h[i].value);
        r = r ? r : dynbuf_addstr(b, "\n");
        r = r ? r : append_signed_headers(b, s);
        r = r ? r
              : dynbuf_printf(b, "\n%s",
                              s->presign ? SIGV4_UNSIGNED_PAYLOAD : req->payload_sha256);
        return r;
}

static int signature(const struct sigv4_request *req, const struct signing *s,
                     const char *canonical, char out[65])
{
        char creq_hash[65];
        sha256_hex(canonical, strlen(canonical), creq_hash);
        char sts[512];
        snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s\n%s", s->amz_date, s->scope,
                 creq_hash);

        _cleanup_free_ char *k0 = NULL;
        if (asprintf(&k0, "AWS4%s", req->secret_key) < 0)
                return -ENOMEM;
        char date[9];
        memcpy(date, s->amz_date, 8);
        date[8] = '\0';
        unsigned char k1[32], k2[32], k3[32], k4[32], sig[32];
        int r = hmac(k0, strlen(k0), date, k1);
        r = r ? r : hmac(k1, 32, req->region, k2);
        r = r ? r : hmac(k2, 32, req->service ? req->service : "s3", k3);
        r = r ? r : hmac(k3, 32, "aws4_request", k4);
        r = r ? r : hmac(k4, 32, sts, sig);
        OPENSSL_cleanse(k0, strlen(k0));
        OPENSSL_cleanse(k1, 32);
        OPENSSL_cleanse(k4, 32);
        if (r < 0)
                return r;
        hex_encode(sig, 32, out);
        return 0;
}

/* The shared core: canonicalizes req, signs it, and hands back what the
 * two front ends need. */
static int sign(const struct sigv4_request *req, struct signing *s, char **ret_canonical,
                char ret_sig[65], struct bc_error *err)
{
        if (!req->access_key || !req->secret_key || !req->region || !req->host || !req->path ||
            req->path[0] != '/' || !req->payload_sha256)
                return bc_error_set(err, BC_USAGE, EINVAL, "sigv4: incomplete request");
        sigv4_amz_date(req->now, s->amz_date);
        if (snprintf(s->scope, sizeof(s->scope), "%.8s/%s/%s/aws4_request", s->amz_date,
                     req->region, req->service ? req->service : "s3") >= (int)sizeof(s->scope))
                return bc_error_set(err, BC_USAGE, E2BIG, "sigv4: region too long");

        int r = collect(req, s);
        if (r < 0)
                return bc_error_set(err, BC_USAGE, -r, "sigv4: too many or too long parameters");
        qsort(s->q, s->nq, sizeof(s->q[0]), cmp_pair);
        qsort(s->h, s->nh, sizeof(s->h[0]), cmp_pair);

        _cleanup_dynbuf_ struct dynbuf creq;
        dynbuf_init(&creq, SIGV4_MAX);
        r = canonical_request(req, s, &creq);
        if (r < 0)
                return bc_error_set(err, BC_USAGE, -r, "sigv4: request too large to sign");
        r = signature(req, s, creq.data, ret_sig);
        if (r < 0)
                return bc_error_set(err, BC_INTERNAL, -r, "sigv4: HMAC failed");
        if (ret_canonical)
                *ret_canonical = dynbuf_steal(&creq);
        return 0;
}

static void signing_done(struct signing *s)
{
        free_pairs(s->q, s->nq);
        free_pairs(s->h, s->nh);
}

/* The signed header or query in b, as *ret; r is how building it went. */
static int take_signed(struct dynbuf *b, int r, const char *what, char **ret, struct bc_error *err)
{
        if (r < 0)
                return bc_error_set(err, BC_USAGE, -r, "sigv4: %s too long", what);
        *ret = dynbuf_steal(b);
        return *ret ? 0 : bc_error_set(err, BC_INTERNAL, ENOMEM, "sigv4: out of memory");
}

int sigv4_authorization(const struct sigv4_request *req, char **ret, struct bc_error *err)
{
        struct signing s = { .presign = false };
        char sig[65];
        int r = sign(req, &s, NULL, sig, err);
        if (r < 0) {
                signing_done(&s);
                return r;
        }
        _cleanup_dynbuf_ struct dynbuf b;
        dynbuf_init(&b, SIGV4_MAX);
        r = dynbuf_printf(&b, "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=", req->access_key,
                          s.scope);
        r = r ? r : append_signed_headers(&b, &s);
        r = r ? r : dynbuf_printf(&b, ", Signature=%s", sig);
        signing_done(&s);
        return take_signed(&b, r, "authorization", ret, err);
}

int sigv4_presign_query(const struct sigv4_request *req, long expires_s, char **ret,
                        struct bc_error *err)
{
        if (req->n_headers)
                return bc_error_set(err, BC_USAGE, EINVAL, "sigv4: presigned URLs sign only host");
        struct signing s = { .presign = true, .expires_s = expires_s };
        char sig[65];
        int r = sign(req, &s, NULL, sig, err);
        if (r < 0) {
                signing_done(&s);
                return r;
        }
        _cleanup_dynbuf_ struct dynbuf b;
        dynbuf_init(&b, SIGV4_MAX);
        r = append_query(&b, &s);
        r = r ? r : dynbuf_printf(&b, "&X-Amz-Signature=%s", sig);
        signing_done(&s);
        return take_signed(&b, r, "query", ret, err);
}

int sigv4_debug_sign(const struct sigv4_request *req, long expires_s, char **ret_canonical,
                     char **ret_signature, struct bc_error *err)
{
        struct signing s = { .presign = expires_s > 0, .expires_s = expires_s };
        char sig[65];
        _cleanup_free_ char *creq = NULL;
        int r = sign(req, &s, &creq, sig, err);
        signing_done(&s);
        if (r < 0)
                return r;
        char *sig_dup = strdup(sig);
        if (!sig_dup)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "sigv4: out of memory");
        if (ret_canonical)
                *ret_canonical = steal_pointer(&creq);
        *ret_signature = sig_dup;
        return 0;
}
