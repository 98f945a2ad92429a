/* S3 settings from the environment, object keys, limits and presigning. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cleanup.h"
#include "storage/aws_config.h"
#include "storage/creds.h"
#include "common/dynbuf.h"
#include "storage/s3.h"
#include "storage/storage.h"

void storage_config_free(struct storage_config *cfg)
{
        if (!cfg)
                return;
        creds_provider_free(cfg->creds);
        free(cfg->access_key);
        aws_secret_free(cfg->secret_key);
        aws_secret_free(cfg->session_token);
        free(cfg->region);
        free(cfg->endpoint);
        free(cfg->bucket);
        free(cfg->prefix);
        free(cfg->ca_bundle);
        free(cfg);
}
BC_DEFINE_CLEANUP(struct storage_config *, storage_config_free)

static const char *env_nonempty(const char *name)
{
        const char *v = getenv(name);
        return v && *v ? v : NULL;
}

static int env_required(const char *name, char **ret, struct bc_error *err)
{
        const char *v = env_nonempty(name);
        if (!v)
                return bc_error_set(err, BC_CONFIG, EINVAL, "%s is not set", name);
        *ret = strdup(v);
        return *ret ? 0 : bc_error_set(err, BC_CONFIG, ENOMEM, "out of memory");
}

/* scheme://host[:port] with nothing after it but an optional '/': a base
 * path would change every signature and no S3-compatible server needs it. */
static int check_endpoint(const char *ep, const char *from, struct bc_error *err)
{
        const char *rest;
        if (strncmp(ep, "http://", 7) == 0)
                rest = ep + 7;
        else if (strncmp(ep, "https://", 8) == 0)
                rest = ep + 8;
        else
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "%s must start with http:// or https://", from);
        size_t n = strcspn(rest, "/?#@");
        if (n == 0 || (rest[n] && strcmp(rest + n, "/") != 0))
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "%s must be scheme://host[:port] without a path", from);
        return 0;
}

/* Bucket names are DNS labels (3..63 of a-z 0-9 . -): anything else would
 * break virtual-hosted URLs and the signer's Host. */
static int check_bucket(const char *b, struct bc_error *err)
{
        size_t n = strlen(b);
        if (n < 3 || n > 63)
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "BOXCAR_S3_BUCKET must be 3..63 characters");
        for (const char *p = b; *p; p++)
                if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '.' ||
                      *p == '-'))
                        return bc_error_set(err, BC_CONFIG, EINVAL,
                                            "BOXCAR_S3_BUCKET may contain only a-z 0-9 . -");
        return 0;
}

static char *trim_slashes(const char *s)
{
        while (*s == '/')
                s++;
        size_t n = strlen(s);
        while (n && s[n - 1] == '/')
                n--;
        return strndup(s, n);
}

/* The first of AWS_REGION, AWS_DEFAULT_REGION, the profile's region. */
static int pick_region(struct storage_config *c, const struct aws_profile *prof,
                       struct bc_error *err)
{
        const char *v = env_nonempty("AWS_REGION");
        v = v ? v : env_nonempty("AWS_DEFAULT_REGION");
        v = v ? v : prof->region;
        c->region = strdup(v ? v : "us-east-1");
        if (!c->region)
                return bc_error_set(err, BC_CONFIG, ENOMEM, "out of memory");
        for (const char *p = c->region; *p; p++)
                if (!(isalnum((unsigned char)*p) || *p == '-'))
                        return bc_error_set(err, BC_CONFIG, EINVAL, "the AWS region is malformed");
        return 0;
}

/* The first of AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
 * "s3 = endpoint_url", its endpoint_url (the SDKs' order). */
static int pick_endpoint(struct storage_config *c, const struct aws_profile *prof,
                         struct bc_error *err)
{
        const char *v = env_nonempty("AWS_ENDPOINT_URL_S3"), *from = "AWS_ENDPOINT_URL_S3";
        if (!v && (v = env_nonempty("AWS_ENDPOINT_URL")))
                from = "AWS_ENDPOINT_URL";
        if (!v && (v = prof->s3_endpoint_url))
                from = "the profile's s3 endpoint_url";
        if (!v && (v = prof->endpoint_url))
                from = "the profile's endpoint_url";
        if (!v)
                return 0;
        int r = check_endpoint(v, from, err);
        if (r < 0)
                return r;
        c->endpoint = strndup(v, strlen(v) - (v[strlen(v) - 1] == '/'));
        return c->endpoint ? 0 : bc_error_set(err, BC_CONFIG, ENOMEM, "out of memory");
}

/* BOXCAR_S3_FORCE_PATH_STYLE, else the profile's s3 addressing_style,
 * else path-style for custom endpoints (MinIO, s3rver, … rarely have
 * wildcard DNS) and dotted buckets (they break AWS's TLS wildcard). */
static int pick_path_style(struct storage_config *c, const struct aws_profile *prof,
                           struct bc_error *err)
{
        c->path_style = c->endpoint || strchr(c->bucket, '.');
        const char *v = env_nonempty("BOXCAR_S3_FORCE_PATH_STYLE");
        if (v) {
                bool on = !strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes");
                bool off = !strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no");
                if (!on && !off)
                        return bc_error_set(err, BC_CONFIG, EINVAL,
                                            "BOXCAR_S3_FORCE_PATH_STYLE must be true or false");
                c->path_style = on;
                return 0;
        }
        v = prof->s3_addressing_style;
        if (!v || strcmp(v, "auto") == 0)
                return 0;
        if (strcmp(v, "path") != 0 && strcmp(v, "virtual") != 0)
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "%s: s3 addressing_style must be path, virtual or auto",
                                    prof->config_path);
        c->path_style = strcmp(v, "path") == 0;
        return 0;
}

int storage_config_from_env(struct storage_config **ret, struct bc_error *err)
{
        _cleanup_(storage_config_freep) struct storage_config *c = calloc(1, sizeof(*c));
        if (!c)
                return bc_error_set(err, BC_CONFIG, ENOMEM, "out of memory");
        _cleanup_(aws_profile_donep) struct aws_profile prof = { 0 };
        int r = aws_profile_load(&prof, err);
        r = r ? r : pick_region(c, &prof, err);
        r = r ? r : aws_ca_bundle(&prof, &c->ca_bundle, err);
        r = r ? r : creds_provider_new(&prof, c->region, &c->creds, err);
        r = r ? r : env_required("BOXCAR_S3_BUCKET", &c->bucket, err);
        r = r ? r : check_bucket(c->bucket, err);
        r = r ? r : pick_endpoint(c, &prof, err);
        r = r ? r : pick_path_style(c, &prof, err);
        if (r < 0)
                return r;
        const char *v = env_nonempty("BOXCAR_S3_PREFIX");
        c->prefix = trim_slashes(v ? v : "");
        if (!c->prefix)
                return bc_error_set(err, BC_CONFIG, ENOMEM, "out of memory");
        c->retries = 4;
        c->retry_base_ms = 250;
        c->retry_max_ms = 8000;
        c->connect_timeout_s = 10;
        c->low_speed_time_s = 30;
        *ret = steal_pointer(&c);
        return 0;
}

const char *storage_credentials_source(const struct storage_config *cfg)
{
        return cfg->creds ? creds_provider_source(cfg->creds) : "fixed";
}

int s3_credentials(const struct storage_config *cfg, struct aws_creds *ret, struct bc_error *err)
{
        if (cfg->creds)
                return creds_provider_get(cfg->creds, ret, err);
        struct aws_creds c = {
                .access_key = cfg->access_key ? strdup(cfg->access_key) : NULL,
                .secret_key = cfg->secret_key ? strdup(cfg->secret_key) : NULL,
                .session_token = cfg->session_token ? strdup(cfg->session_token) : NULL,
        };
        if (!c.access_key || !c.secret_key || (cfg->session_token && !c.session_token)) {
                aws_creds_done(&c);
                return bc_error_set(err, BC_CONFIG, EINVAL, "no S3 credentials in the settings");
        }
        *ret = c;
        return 0;
}

int storage_credentials_key_id(const struct storage_config *cfg, char **ret, struct bc_error *err)
{
        _cleanup_(aws_creds_donep) struct aws_creds c = { 0 };
        int r = s3_credentials(cfg, &c, err);
        if (r < 0)
                return r;
        *ret = steal_pointer(&c.access_key);
        return 0;
}

bool storage_sha256_valid(const char *s)
{
        if (!s)
                return false;
        size_t i = 0;
        for (; s[i]; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return i == STORAGE_SHA256_HEX_LEN;
}

int storage_object_key(const struct storage_config *cfg, const char *sha256, char **ret,
                       struct bc_error *err)
{
        if (!storage_sha256_valid(sha256))
                return bc_error_set(err, BC_USAGE, EINVAL, "object key: malformed sha256");
        const char *prefix = cfg && cfg->prefix ? cfg->prefix : "";
        char *k = NULL;
        if (asprintf(&k, "%s%ssha256/%.2s/%s.tar.gz", prefix, *prefix ? "/" : "", sha256, sha256) <
            0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        *ret = k;
        return 0;
}

void storage_limits_default(struct storage_limits *ret)
{
        *ret = (struct storage_limits){
                .max_bytes = 16ULL << 30,
                .max_entries = 1000000,
                .max_download = 16ULL << 30,
                .max_ratio = 250,
                .ratio_floor = 64ULL << 20,
        };
}

int storage_limits_validate(const struct storage_limits *l, struct bc_error *err)
{
        if (!l->max_bytes || !l->max_entries || !l->max_download)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "limits: max_bytes, max_entries and max_download must be > 0");
        if (l->max_ratio && l->ratio_floor > l->max_bytes)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "limits: ratio_floor exceeds max_bytes");
        return 0;
}

/* ---- where objects live --------------------------------------------- */

void s3_target_done(struct s3_target *t)
{
        if (!t)
                return;
        free(t->url);
        free(t->host);
        free(t->path);
        t->url = t->host = t->path = NULL;
}

/* Host header value: the authority without a default port, the way curl
 * and botocore send it (the signature covers it). */
static char *endpoint_host(const char *ep, const char **ret_scheme)
{
        bool https = strncmp(ep, "https://", 8) == 0;
        const char *h = ep + (https ? 8 : 7);
        *ret_scheme = https ? "https" : "http";
        size_t n = strlen(h);
        const char *dflt = https ? ":443" : ":80";
        size_t dn = strlen(dflt);
        if (n > dn && strcmp(h + n - dn, dflt) == 0 && h[0] != '[')
                n -= dn;
        return strndup(h, n);
}

/* key "" is the bucket itself: "/bucket/" or "/". */
static int target_init(const struct storage_config *cfg, const char *key, struct s3_target *ret,
                       struct bc_error *err)
{
        struct s3_target t = { 0 };
        const char *scheme = "https";
        int r = 0;
        if (cfg->endpoint)
                t.host = endpoint_host(cfg->endpoint, &scheme);
        else if (cfg->path_style)
                r = asprintf(&t.host, "s3.%s.amazonaws.com", cfg->region);
        else if (strcmp(cfg->region, "us-east-1") == 0)
                /* The global endpoint, as botocore uses for us-east-1. */
                r = asprintf(&t.host, "%s.s3.amazonaws.com", cfg->bucket);
        else
                r = asprintf(&t.host, "%s.s3.%s.amazonaws.com", cfg->bucket, cfg->region);
        if (r < 0)
                t.host = NULL;
        if (cfg->path_style)
                r = asprintf(&t.path, "/%s/%s", cfg->bucket, key);
        else
                r = asprintf(&t.path, "/%s", key);
        if (r < 0)
                t.path = NULL;

        struct dynbuf b;
        dynbuf_init(&b, 8192);
        if (t.host && t.path && dynbuf_printf(&b, "%s://%s", scheme, t.host) == 0 &&
            sigv4_uri_encode(&b, t.path, 1) == 0)
                t.url = dynbuf_steal(&b);
        dynbuf_done(&b);
        if (!t.url) {
                s3_target_done(&t);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        *ret = t;
        return 0;
}

int s3_target_init(const struct storage_config *cfg, const char *key, struct s3_target *ret,
                   struct bc_error *err)
{
        if (!key || !*key || strlen(key) > S3_MAX_KEY)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "object key empty or longer than %d bytes", S3_MAX_KEY);
        return target_init(cfg, key, ret, err);
}

int s3_target_bucket(const struct storage_config *cfg, struct s3_target *ret, struct bc_error *err)
{
        return target_init(cfg, "", ret, err);
}

const char *s3_method_name(enum storage_method m)
{
        switch (m) {
        case STORAGE_GET:
                return "GET";
        case STORAGE_PUT:
                return "PUT";
        case STORAGE_HEAD:
                return "HEAD";
        }
        return "GET";
}

int s3_presign_at(const struct storage_config *cfg, enum storage_method method, const char *key,
                  const struct sigv4_pair *params, size_t n_params, time_t now, long expires_s,
                  char **ret, struct bc_error *err)
{
        if (expires_s < STORAGE_PRESIGN_MIN_S || expires_s > STORAGE_PRESIGN_MAX_S)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "presign: expiry must be %d..%d seconds, got %ld",
                                    STORAGE_PRESIGN_MIN_S, STORAGE_PRESIGN_MAX_S, expires_s);
        _cleanup_(aws_creds_donep) struct aws_creds creds = { 0 };
        int r = s3_credentials(cfg, &creds, err);
        if (r < 0)
                return r;
        struct s3_target t;
        r = s3_target_init(cfg, key, &t, err);
        if (r < 0)
                return r;
        struct sigv4_request req = {
                .method = s3_method_name(method),
                .host = t.host,
                .path = t.path,
                .query = params,
                .n_query = n_params,
                .payload_sha256 = SIGV4_UNSIGNED_PAYLOAD,
                .access_key = creds.access_key,
                .secret_key = creds.secret_key,
                .session_token = creds.session_token,
                .region = cfg->region,
                .now = now,
        };
        _cleanup_free_ char *query = NULL;
        r = sigv4_presign_query(&req, expires_s, &query, err);
        if (r < 0) {
                s3_target_done(&t);
                return bc_error_prefix(err, "presign");
        }
        char *url = NULL;
        r = asprintf(&url, "%s?%s", t.url, query);
        s3_target_done(&t);
        if (r < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        *ret = url;
        return 0;
}

int storage_presign(const struct storage_config *cfg, enum storage_method method, const char *key,
                    long expires_s, char **ret, struct bc_error *err)
{
        return s3_presign_at(cfg, method, key, NULL, 0, time(NULL), expires_s, ret, err);
}
