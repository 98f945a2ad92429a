/* A version as the database lists it, and getting its tree: the layers'
 * presigned URLs, the worker's caches (storage_cache_acquire_layers), or a
 * plain directory (the bottom layer extracted, the others applied).
 *
 * The layer list comes from the database, which the worker trusts no more
 * than S3: a list that is empty, too long or malformed, and a layer that
 * S3 no longer holds, are BC_BAD_ARCHIVE naming the version, never a
 * restore of part of a tree. */
#include "worker/job/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/rmtree.h"
#include "worker/db/db.h"

void store_version_done(struct store_version *v)
{
        if (!v)
                return;
        free(v->s3_key);
        v->s3_key = NULL;
}

/* A text[] of hex digests as PostgreSQL prints it: "{a,b,c}". */
static int parse_layers(const char *s, struct store_version *v, struct bc_error *err)
{
        size_t len = strlen(s);
        v->n_layers = 0;
        if (len < 2 || s[0] != '{' || s[len - 1] != '}')
                return bc_error_set(err, BC_BAD_ARCHIVE, EINVAL, "version %s: layer list %.80s",
                                    v->sha256, s);
        const char *p = s + 1;
        while (*p != '}') {
                if (v->n_layers == STORAGE_MAX_LAYERS)
                        return bc_error_set(err, BC_BAD_ARCHIVE, E2BIG,
                                            "version %s: more than %d layers", v->sha256,
                                            STORAGE_MAX_LAYERS);
                char *hex = v->layers[v->n_layers];
                memcpy(hex, p, 64);
                hex[64] = '\0';
                if (strlen(p) < 65 || !storage_sha256_valid(hex) || (p[64] != ',' && p[64] != '}'))
                        return bc_error_set(err, BC_BAD_ARCHIVE, EINVAL,
                                            "version %s: malformed layer list", v->sha256);
                for (size_t i = 0; i < v->n_layers; i++)
                        if (strcmp(v->layers[i], hex) == 0)
                                return bc_error_set(err, BC_BAD_ARCHIVE, ELOOP,
                                                    "version %s: layer %s listed twice", v->sha256,
                                                    hex);
                v->n_layers++;
                p += 64 + (p[64] == ',');
        }
        if (!v->n_layers)
                return bc_error_set(err, BC_BAD_ARCHIVE, EINVAL, "version %s: no layer",
                                    v->sha256);
        return 0;
}

char *store_array_literal(size_t n, const char *const *vals, const uint64_t *nums)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return NULL;
        fputc('{', f);
        for (size_t i = 0; i < n; i++) {
                if (i)
                        fputc(',', f);
                if (nums) {
                        fprintf(f, "%llu", (unsigned long long)nums[i]);
                        continue;
                }
                fputc('"', f);
                for (const char *v = vals[i]; *v; v++) {
                        if (*v == '"' || *v == '\\')
                                fputc('\\', f);
                        fputc(*v, f);
                }
                fputc('"', f);
        }
        fputc('}', f);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

int store_version_from_row(const PGresult *res, int first, struct store_version *ret,
                           struct bc_error *err)
{
        if (PQntuples(res) == 0 || PQgetisnull(res, 0, first))
                return 0;
        struct store_version v = { 0 };
        snprintf(v.sha256, sizeof(v.sha256), "%s", PQgetvalue(res, 0, first));
        v.size = strtoull(PQgetvalue(res, 0, first + 2), NULL, 10);
        v.file_count = strtoull(PQgetvalue(res, 0, first + 3), NULL, 10);
        int r = parse_layers(PQgetvalue(res, 0, first + 4), &v, err);
        if (r < 0)
                return r;
        v.tree = strcmp(PQgetvalue(res, 0, first + 5), "tree") == 0;
        snprintf(v.bottom_tree, sizeof(v.bottom_tree), "%s", PQgetvalue(res, 0, first + 6));
        if (!PQgetisnull(res, 0, first + 1)) {
                v.s3_key = strdup(PQgetvalue(res, 0, first + 1));
                if (!v.s3_key)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        *ret = v;
        return 1;
}

int store_resolve(PGconn *conn, const char *storage, const char *version,
                  struct store_version *ret, struct bc_error *err)
{
        const char *p[] = { storage, version };
        _cleanup_pgresult_ PGresult *res = db_exec(conn, STORE_RESOLVE_SQL, 2, p, err);
        if (!res)
                return -EPROTO;
        return store_version_from_row(res, 0, ret, err);
}

static int need_s3(const struct store *st, struct bc_error *err)
{
        if (st->s3)
                return 0;
        /* A worker without S3 settings cannot serve this job; another may. */
        return bc_error_set(err, BC_FETCH_FAILED, ENOTSUP,
                            "S3 is not configured on this worker (set BOXCAR_S3_BUCKET and the "
                            "AWS_* variables)");
}

int store_presign_get(const struct store *st, const struct store_version *v, long ttl_s,
                      char **ret_url, struct bc_error *err)
{
        int r = need_s3(st, err);
        if (r < 0)
                return r;
        if (!v->s3_key)
                return bc_error_set(err, BC_NOT_FOUND, ENOENT,
                                    "version %s has %zu layers and no whole-tree tarball yet "
                                    "(boxcar storage url builds it)",
                                    v->sha256, v->n_layers);
        return storage_presign(st->s3, STORAGE_GET, v->s3_key, ttl_s, ret_url, err);
}

/* Restores presign for 15 minutes: enough to start a transfer that may
 * then run for as long as it takes. */
#define LAYER_URL_TTL_S 900

static void free_urls(char **urls, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(urls[i]);
}

static int presign_layers(const struct store *st, const struct store_version *v,
                          char *urls[STORAGE_MAX_LAYERS], struct bc_error *err)
{
        int r = need_s3(st, err);
        for (size_t i = 0; r >= 0 && i < v->n_layers; i++) {
                _cleanup_free_ char *key = NULL;
                r = storage_object_key(st->s3, v->layers[i], &key, err);
                if (r >= 0)
                        r = storage_presign(st->s3, STORAGE_GET, key, LAYER_URL_TTL_S, &urls[i],
                                            err);
                if (r < 0)
                        free_urls(urls, i);
        }
        return r;
}

/* A layer S3 answers 404 for is gone (collected, or never stored): the
 * version cannot be restored, which is the version's fault, not the
 * network's, and retrying would not help. */
static int layer_failed(const struct store_version *v, int r, struct bc_error *err)
{
        if (!err || err->code != BC_FETCH_FAILED || err->errnum != ENOENT)
                return r;
        _cleanup_free_ char *why = strdup(bc_error_message(err));
        return bc_error_set(err, BC_BAD_ARCHIVE, ENOENT,
                            "version %s: a layer is missing from S3 (%s)", v->sha256,
                            why ? why : "404");
}

int store_cache_version(const struct store *st, struct storage_cache *cache,
                        const struct store_version *v, struct storage_cache_entry **ret,
                        struct bc_error *err)
{
        char *urls[STORAGE_MAX_LAYERS] = { 0 };
        const char *shas[STORAGE_MAX_LAYERS];
        int r = presign_layers(st, v, urls, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < v->n_layers; i++)
                shas[i] = v->layers[i];
        r = storage_cache_acquire_layers(cache, (const char *const *)urls, shas, v->n_layers, ret,
                                         err);
        free_urls(urls, v->n_layers);
        return r < 0 ? layer_failed(v, r, err) : 0;
}

int store_extract_version(const struct store *st, const struct store_version *v, const char *dest,
                          const struct storage_limits *limits, uint64_t *ret_downloaded,
                          struct bc_error *err)
{
        char *urls[STORAGE_MAX_LAYERS] = { 0 };
        int r = presign_layers(st, v, urls, err);
        if (r < 0)
                return r;
        bool existed = access(dest, F_OK) == 0;
        uint64_t downloaded = 0;
        for (size_t i = 0; r >= 0 && i < v->n_layers; i++) {
                struct storage_fetch_result fr = { 0 };
                r = i == 0 ? storage_fetch_extract(st->s3, urls[0], v->layers[0], dest, limits,
                                                   NULL, &fr, err)
                           : storage_fetch_apply(st->s3, urls[i], v->layers[i], dest, limits, &fr,
                                                 err);
                downloaded += fr.size;
        }
        free_urls(urls, v->n_layers);
        if (r < 0 && !existed) {
                (void)fs_rm_rf(dest);
        } else if (r < 0) {
                /* A failed apply leaves a part-applied tree: never a
                 * version, so nothing of it stays. */
                _cleanup_fd_ int fd = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0)
                        (void)fs_empty_dir(fd);
        }
        if (ret_downloaded)
                *ret_downloaded = downloaded;
        return r < 0 ? layer_failed(v, r, err) : 0;
}
