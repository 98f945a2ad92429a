/* Where an S3 object lives for a given configuration (path-style or
 * virtual-hosted), and presigning with an injectable clock.  Internal. */
#ifndef BC_STORAGE_S3_H
#define BC_STORAGE_S3_H

#include <time.h>

#include "common/error.h"
#include "storage/sigv4.h"
#include "storage/storage.h"

#define S3_MAX_KEY 1024 /* S3's own limit on key bytes */

struct s3_target {
        char *url;      /* scheme://host + encoded path, no query */
        char *host;     /* Host header value */
        char *path;     /* raw (unencoded) path for the signer: /bucket/key or /key */
};

int s3_target_init(const struct storage_config *cfg, const char *key, struct s3_target *ret,
                   struct bc_error *err);
void s3_target_done(struct s3_target *t);

const char *s3_method_name(enum storage_method m);

/* storage_presign at a given time, with extra raw query parameters (e.g.
 * response-content-disposition) signed into the URL. */
int s3_presign_at(const struct storage_config *cfg, enum storage_method method, const char *key,
                  const struct sigv4_pair *params, size_t n_params, time_t now, long expires_s,
                  char **ret, struct bc_error *err);

#endif
