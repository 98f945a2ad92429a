/* Where an S3 object lives for a given configuration (path-style or
 * virtual-hosted), and presigning with an injectable clock.  Internal. */
#ifndef BC_STORAGE_S3_H
#define BC_STORAGE_S3_H

#include <time.h>

#include "common/error.h"
#include "storage/creds.h"
#include "storage/sigv4.h"
#include "storage/storage.h"

#define S3_MAX_KEY 1024 /* S3's own limit on key bytes */

struct s3_target {
        char *url;  /* scheme://host + encoded path, no query */
        char *host; /* Host header value */
        char *path; /* raw (unencoded) path for the signer: /bucket/key or /key */
};

int s3_target_init(const struct storage_config *cfg, const char *key, struct s3_target *ret,
                   struct bc_error *err);
/* The bucket itself (for bucket-level requests such as ListObjectsV2). */
int s3_target_bucket(const struct storage_config *cfg, struct s3_target *ret,
                     struct bc_error *err);
void s3_target_done(struct s3_target *t);
static inline void s3_target_donep(struct s3_target *t)
{
        s3_target_done(t);
}

const char *s3_method_name(enum storage_method m);

/* The credentials to sign with now: cfg->creds's (fetched or refreshed
 * when needed) or the fixed fields.  Release with aws_creds_done(). */
int s3_credentials(const struct storage_config *cfg, struct aws_creds *ret, struct bc_error *err);

/* storage_presign at a given time, with extra raw query parameters (e.g.
 * response-content-disposition) signed into the URL. */
int s3_presign_at(const struct storage_config *cfg, enum storage_method method, const char *key,
                  const struct sigv4_pair *params, size_t n_params, time_t now, long expires_s,
                  char **ret, struct bc_error *err);

/* A request the worker signs itself (header auth), for upload.c and
 * check.c. */
struct put_body;
struct s3_call {
        const struct storage_config *cfg;
        const char *method;
        const struct s3_target *target;
        const struct sigv4_pair *query; /* raw; the URL must carry the same */
        size_t n_query;
        const char *payload_sha256;
        const struct sigv4_pair *headers; /* extra signed headers */
        size_t n_headers;
        struct put_body *body; /* PUT only (upload.c) */
        int64_t length;        /* out: the answer's Content-Length, -1 if none */
        long status;           /* out: the last answer's HTTP status, 0 if none */
};

/* The header list for c signed now, with credentials from s3_credentials
 * (a failure there keeps its message and code). */
struct curl_slist;
int s3_signed_headers(const struct s3_call *c, struct curl_slist **ret, struct bc_error *err);

#endif
