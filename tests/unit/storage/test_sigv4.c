/* Unit tests for storage/ settings and signing: AWS's published SigV4
 * examples, botocore vectors (tests/storage/gen_vectors.py), object keys,
 * expiry and limit validation, configuration from the environment. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "storage/s3.h"
#include "storage/sigv4.h"
#include "storage/storage.h"

struct presign_vector {
        const char *desc, *region, *endpoint, *bucket, *key, *method, *token;
        long expires;
        int path_style;
        struct sigv4_pair params[4];
        size_t n_params;
        const char *base, *signature;
};

struct header_vector {
        const char *desc, *region, *url, *method, *token;
        struct sigv4_pair headers[4];
        size_t n_headers;
        const char *payload, *authorization;
};

#include "sigv4_vectors.h"

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

static enum storage_method method_of(const char *m)
{
        return strcmp(m, "PUT") == 0    ? STORAGE_PUT
               : strcmp(m, "HEAD") == 0 ? STORAGE_HEAD
                                        : STORAGE_GET;
}

static void test_presign_vectors(void **state)
{
        (void)state;
        for (size_t i = 0; i < ELEMENTSOF(presign_vectors); i++) {
                const struct presign_vector *v = &presign_vectors[i];
                struct storage_config cfg = {
                        .access_key = (char *)AK,
                        .secret_key = (char *)SK,
                        .session_token = (char *)v->token,
                        .region = (char *)v->region,
                        .endpoint = (char *)v->endpoint,
                        .bucket = (char *)v->bucket,
                        .prefix = (char *)"",
                        .path_style = v->path_style,
                };
                struct bc_error err = BC_ERROR_INIT;
                char *url = NULL;
                int r = s3_presign_at(&cfg, method_of(v->method), v->key, v->params, v->n_params,
                                      VEC_NOW, v->expires, &url, &err);
                if (r < 0)
                        fail_msg("%s: %s", v->desc, bc_error_message(&err));
                size_t blen = strcspn(url, "?");
                if (strlen(v->base) != blen || strncmp(url, v->base, blen) != 0)
                        fail_msg("%s: base\n got %.*s\nwant %s", v->desc, (int)blen, url, v->base);
                const char *sig = strstr(url, "X-Amz-Signature=");
                assert_non_null(sig);
                if (strcmp(sig + 16, v->signature) != 0)
                        fail_msg("%s: signature\n got %s\nwant %s", v->desc, sig + 16,
                                 v->signature);
                /* The token must travel in the URL, the secret never. */
                assert_null(strstr(url, "EXAMPLEKEY"));
                assert_int_equal(v->token != NULL, strstr(url, "X-Amz-Security-Token=") != NULL);
                free(url);
        }
}

static int unhex(char c)
{
        return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c - 'a' + 10;
}

static char *pct_decode(const char *s, size_t n)
{
        char *d = malloc(n + 1), *o = d;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '%' && i + 2 < n + 1) {
                        *o++ = (char)(unhex(s[i + 1]) * 16 + unhex(s[i + 2]));
                        i += 2;
                } else {
                        *o++ = s[i];
                }
        }
        *o = '\0';
        return d;
}

static void test_header_vectors(void **state)
{
        (void)state;
        for (size_t i = 0; i < ELEMENTSOF(header_vectors); i++) {
                const struct header_vector *v = &header_vectors[i];
                /* scheme://host/path?query, split and percent-decoded: the
                 * signer takes raw values and encodes them itself. */
                const char *h = strstr(v->url, "://") + 3;
                size_t hn = strcspn(h, "/");
                _cleanup_free_ char *host = strndup(h, hn);
                const char *p = h + hn;
                size_t pn = strcspn(p, "?");
                _cleanup_free_ char *path = pct_decode(p, pn);
                struct sigv4_pair q[8];
                size_t nq = 0;
                char *owned[16];
                size_t nowned = 0;
                for (const char *s = p[pn] ? p + pn + 1 : NULL; s && *s;) {
                        size_t len = strcspn(s, "&");
                        size_t kn = strcspn(s, "=");
                        if (kn > len)
                                kn = len;
                        q[nq].name = owned[nowned++] = pct_decode(s, kn);
                        q[nq].value = owned[nowned++] = kn < len ? pct_decode(s + kn + 1,
                                                                              len - kn - 1)
                                                                 : strdup("");
                        nq++;
                        s += len + (s[len] == '&');
                }
                struct sigv4_request req = {
                        .method = v->method,
                        .host = host,
                        .path = path,
                        .query = q,
                        .n_query = nq,
                        .headers = v->headers,
                        .n_headers = v->n_headers,
                        .payload_sha256 = v->payload,
                        .access_key = AK,
                        .secret_key = SK,
                        .session_token = v->token,
                        .region = v->region,
                        .now = VEC_NOW,
                };
                struct bc_error err = BC_ERROR_INIT;
                char *auth = NULL;
                if (sigv4_authorization(&req, &auth, &err) < 0)
                        fail_msg("%s: %s", v->desc, bc_error_message(&err));
                if (strcmp(auth, v->authorization) != 0)
                        fail_msg("%s:\n got %s\nwant %s", v->desc, auth, v->authorization);
                free(auth);
                for (size_t k = 0; k < nowned; k++)
                        free(owned[k]);
        }
}

/* The remaining examples of AWS's "Signature Calculations for the
 * Authorization Header: Transferring Payload in a Single Chunk" page
 * (the GET-with-Range one is among the botocore vectors), with the
 * signatures AWS publishes. */
static void test_aws_header_examples(void **state)
{
        (void)state;
        static const struct sigv4_pair put_headers[] = {
                { "Date", "Fri, 24 May 2013 00:00:00 GMT" },
                { "x-amz-date", "20130524T000000Z" },
                { "x-amz-storage-class", "REDUCED_REDUNDANCY" },
        };
        static const struct sigv4_pair lifecycle[] = { { "lifecycle", "" } };
        static const struct sigv4_pair list[] = { { "max-keys", "2" }, { "prefix", "J" } };
        static const struct {
                const char *desc, *method, *path;
                const struct sigv4_pair *query;
                size_t nq;
                const struct sigv4_pair *headers;
                size_t nh;
                const char *payload, *want;
        } cases[] = {
                { "PUT object", "PUT", "/test$file.text", NULL, 0, put_headers, 3,
                  "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
                  "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                  "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
                  "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd" },
                { "GET bucket lifecycle", "GET", "/", lifecycle, 1, NULL, 0, SIGV4_EMPTY_SHA256,
                  "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                  "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
                  "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543" },
                { "GET bucket (list objects)", "GET", "/", list, 2, NULL, 0, SIGV4_EMPTY_SHA256,
                  "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                  "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
                  "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct sigv4_request req = {
                        .method = cases[i].method,
                        .host = "examplebucket.s3.amazonaws.com",
                        .path = cases[i].path,
                        .query = cases[i].query,
                        .n_query = cases[i].nq,
                        .headers = cases[i].headers,
                        .n_headers = cases[i].nh,
                        .payload_sha256 = cases[i].payload,
                        .access_key = AK,
                        .secret_key = SK,
                        .region = "us-east-1",
                        .now = VEC_NOW,
                };
                char *auth = NULL;
                assert_int_equal(sigv4_authorization(&req, &auth, NULL), 0);
                if (strcmp(auth, cases[i].want) != 0)
                        fail_msg("%s:\n got %s\nwant %s", cases[i].desc, auth, cases[i].want);
                free(auth);
        }
}

/* AWS's presigned-URL example, through the public configuration path
 * (no endpoint: virtual-hosted on the us-east-1 global endpoint). */
static void test_aws_presign_example(void **state)
{
        (void)state;
        struct storage_config cfg = {
                .access_key = (char *)AK,
                .secret_key = (char *)SK,
                .region = (char *)"us-east-1",
                .bucket = (char *)"examplebucket",
                .prefix = (char *)"",
        };
        char *url = NULL;
        assert_int_equal(
                s3_presign_at(&cfg, STORAGE_GET, "test.txt", NULL, 0, VEC_NOW, 86400, &url, NULL),
                0);
        assert_string_equal(
                url,
                "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
                "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
                "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
        free(url);
}

static void test_expiry_bounds(void **state)
{
        (void)state;
        struct storage_config cfg = {
                .access_key = (char *)AK,
                .secret_key = (char *)SK,
                .region = (char *)"us-east-1",
                .bucket = (char *)"examplebucket",
                .prefix = (char *)"",
        };
        static const struct {
                long expires;
                int ok;
        } cases[] = {
                { -1, 0 },     { 0, 0 },      { 1, 1 },        { 3600, 1 },
                { 604800, 1 }, { 604801, 0 }, { 1L << 40, 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct bc_error err = BC_ERROR_INIT;
                char *url = NULL;
                int r = storage_presign(&cfg, STORAGE_GET, "k", cases[i].expires, &url, &err);
                if (cases[i].ok) {
                        assert_int_equal(r, 0);
                        assert_non_null(url);
                } else {
                        assert_int_equal(r, -EINVAL);
                        assert_null(url);
                        assert_int_equal(err.code, BC_USAGE);
                        assert_non_null(strstr(bc_error_message(&err), "expiry"));
                }
                free(url);
                bc_error_clear(&err);
        }
}

static void test_object_key(void **state)
{
        (void)state;
        static const char sha[] =
                "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        static const struct {
                const char *prefix, *sha, *want;
        } cases[] = {
                { "", sha,
                  "sha256/9f/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.tar.gz" },
                { "boxcar", sha,
                  "boxcar/sha256/9f/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.tar.gz" },
                { "a/b", sha,
                  "a/b/sha256/9f/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.tar.gz" },
                { "", "9F86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", NULL },
                { "", "9f86", NULL },
                { "", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08a", NULL },
                { "", "../6d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", NULL },
                { "", "", NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct storage_config cfg = { .prefix = (char *)cases[i].prefix };
                char *key = NULL;
                struct bc_error err = BC_ERROR_INIT;
                int r = storage_object_key(&cfg, cases[i].sha, &key, &err);
                if (cases[i].want) {
                        assert_int_equal(r, 0);
                        assert_string_equal(key, cases[i].want);
                } else {
                        assert_true(r < 0);
                        assert_int_equal(err.code, BC_USAGE);
                        assert_null(key);
                }
                free(key);
                bc_error_clear(&err);
        }
        assert_false(storage_sha256_valid(NULL));
}

static void test_limits(void **state)
{
        (void)state;
        struct storage_limits l;
        storage_limits_default(&l);
        assert_int_equal(storage_limits_validate(&l, NULL), 0);
        struct storage_limits bad[4] = { l, l, l, l };
        bad[0].max_bytes = 0;
        bad[1].max_entries = 0;
        bad[2].max_download = 0;
        bad[3].max_bytes = 1024;
        bad[3].ratio_floor = 4096;
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct bc_error err = BC_ERROR_INIT;
                assert_int_equal(storage_limits_validate(&bad[i], &err), -EINVAL);
                assert_int_equal(err.code, BC_USAGE);
                bc_error_clear(&err);
        }
        bad[3].max_ratio = 0; /* no ratio check: the floor is irrelevant */
        assert_int_equal(storage_limits_validate(&bad[3], NULL), 0);
}

static void clear_env(void)
{
        static const char *const vars[] = {
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN",
                "AWS_REGION",
                "AWS_DEFAULT_REGION",
                "AWS_ENDPOINT_URL_S3",
                "AWS_ENDPOINT_URL",
                "AWS_PROFILE",
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                "AWS_ROLE_ARN",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "BOXCAR_S3_BUCKET",
                "BOXCAR_S3_PREFIX",
                "BOXCAR_S3_FORCE_PATH_STYLE",
        };
        for (size_t i = 0; i < ELEMENTSOF(vars); i++)
                unsetenv(vars[i]);
        /* No shared files and no instance metadata: only what a test sets. */
        setenv("AWS_CONFIG_FILE", "/nonexistent/aws/config", 1);
        setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws/credentials", 1);
        setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

static void expect_config_error(const char *needle)
{
        struct storage_config *cfg = NULL;
        struct bc_error err = BC_ERROR_INIT;
        assert_true(storage_config_from_env(&cfg, &err) < 0);
        assert_null(cfg);
        assert_int_equal(err.code, BC_CONFIG);
        if (!strstr(bc_error_message(&err), needle))
                fail_msg("error '%s' does not name %s", bc_error_message(&err), needle);
        bc_error_clear(&err);
}

static void test_config_env(void **state)
{
        (void)state;
        clear_env();
        expect_config_error("AWS_ACCESS_KEY_ID");
        setenv("AWS_ACCESS_KEY_ID", AK, 1);
        expect_config_error("AWS_SECRET_ACCESS_KEY");
        setenv("AWS_SECRET_ACCESS_KEY", SK, 1);
        expect_config_error("BOXCAR_S3_BUCKET");
        setenv("BOXCAR_S3_BUCKET", "Bad_Bucket", 1);
        expect_config_error("BOXCAR_S3_BUCKET");
        setenv("BOXCAR_S3_BUCKET", "boxcar", 1);
        setenv("AWS_ENDPOINT_URL_S3", "ftp://x", 1);
        expect_config_error("AWS_ENDPOINT_URL_S3");
        setenv("AWS_ENDPOINT_URL_S3", "http://h:1/base", 1);
        expect_config_error("AWS_ENDPOINT_URL_S3");

        setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:80/", 1);
        setenv("BOXCAR_S3_PREFIX", "/team/a/", 1);
        struct storage_config *cfg = NULL;
        assert_int_equal(storage_config_from_env(&cfg, NULL), 0);
        assert_string_equal(cfg->region, "us-east-1");
        assert_string_equal(cfg->endpoint, "http://127.0.0.1:80");
        assert_string_equal(cfg->prefix, "team/a");
        assert_null(cfg->session_token);
        assert_true(cfg->path_style);
        struct s3_target t;
        assert_int_equal(s3_target_init(cfg, "team/a/x y", &t, NULL), 0);
        assert_string_equal(t.host, "127.0.0.1"); /* default port dropped, as curl sends it */
        assert_string_equal(t.url, "http://127.0.0.1/boxcar/team/a/x%20y");
        assert_string_equal(t.path, "/boxcar/team/a/x y");
        s3_target_done(&t);
        storage_config_free(cfg);

        unsetenv("AWS_ENDPOINT_URL_S3");
        setenv("AWS_REGION", "eu-west-1", 1);
        assert_int_equal(storage_config_from_env(&cfg, NULL), 0);
        assert_false(cfg->path_style);
        assert_int_equal(s3_target_init(cfg, "k", &t, NULL), 0);
        assert_string_equal(t.url, "https://boxcar.s3.eu-west-1.amazonaws.com/k");
        s3_target_done(&t);
        storage_config_free(cfg);
        storage_config_free(NULL);
        clear_env();
}

static void test_uri_encode(void **state)
{
        (void)state;
        static const struct {
                const char *in;
                int slash;
                const char *want;
        } cases[] = {
                { "AZaz09-._~", 0, "AZaz09-._~" },
                { "a b+c", 1, "a%20b%2Bc" },
                { "a/b", 1, "a/b" },
                { "a/b", 0, "a%2Fb" },
                { "\303\251*", 0, "%C3%A9%2A" },
                { "", 0, "" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct dynbuf b;
                dynbuf_init(&b, 64);
                assert_int_equal(dynbuf_addstr(&b, ""), 0);
                assert_int_equal(sigv4_uri_encode(&b, cases[i].in, cases[i].slash), 0);
                assert_string_equal(b.data, cases[i].want);
                dynbuf_done(&b);
        }
        struct dynbuf small;
        dynbuf_init(&small, 4);
        assert_int_equal(sigv4_uri_encode(&small, "    ", 0), -E2BIG);
        dynbuf_done(&small);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_aws_presign_example),
                cmocka_unit_test(test_aws_header_examples),
                cmocka_unit_test(test_presign_vectors),
                cmocka_unit_test(test_header_vectors),
                cmocka_unit_test(test_expiry_bounds),
                cmocka_unit_test(test_object_key),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_config_env),
                cmocka_unit_test(test_uri_encode),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
