#include "worker/job/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "sandbox/sandbox.h"
#include "worker/db/db.h"
#include "worker/job/services.h"
#include "worker/metrics/wmetrics.h"
#include "worker/workdir/disk_budget.h"
#include "worker/log/log.h"

/* The artifact cache: trees owned by the job's identity, in a 0700 dir. */
static int open_artifact_cache(struct store *st, const char *dir, uint64_t cache_bytes,
                               struct bc_error *err)
{
        int r = storage_cache_new(dir, cache_bytes, st->s3, NULL, &st->artifacts, err);
        if (r >= 0)
                r = storage_cache_set_owner(st->artifacts, SANDBOX_JOB_UID, SANDBOX_JOB_GID, err);
        return r;
}

/* "trees" beside the volume cache (both under the work dir). */
static int open_trees_dir(struct store *st, const char *cache_dir, struct bc_error *err)
{
        const char *slash = strrchr(cache_dir, '/');
        int len = slash ? (int)(slash - cache_dir) : 1;
        if (asprintf(&st->trees_dir, "%.*s/trees", len, slash ? cache_dir : ".") < 0) {
                st->trees_dir = NULL;
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        if (mkdir(st->trees_dir, 0700) < 0 && errno != EEXIST)
                return bc_error_set(err, BC_IO, errno, "create %s: %m", st->trees_dir);
        return 0;
}

int store_open(struct store *st, const char *cache_dir, const char *image_dir,
               const char *artifact_dir, uint64_t cache_bytes, long url_ttl_s,
               struct bc_error *err)
{
        memset(st, 0, sizeof(*st));
        st->url_ttl_s = url_ttl_s;
        const char *bucket = getenv("BOXCAR_S3_BUCKET");
        if (bucket && *bucket) {
                int r = storage_config_from_env(&st->s3, err);
                if (r < 0)
                        return bc_error_prefix(err, "S3 settings");
        }
        int r = open_trees_dir(st, cache_dir, err);
        if (r >= 0)
                r = storage_cache_new(cache_dir, cache_bytes, st->s3, NULL, &st->cache, err);
        if (r < 0) {
                store_close(st);
                return bc_error_prefix(err, "volume cache %s", cache_dir);
        }
        storage_limits_default(&st->image_limits);
        st->image_limits.image = true;
        r = image_dir ? storage_cache_new(image_dir, cache_bytes, st->s3, &st->image_limits,
                                          &st->images, err)
                      : 0;
        if (r < 0) {
                store_close(st);
                return bc_error_prefix(err, "image cache %s", image_dir);
        }
        r = artifact_dir ? open_artifact_cache(st, artifact_dir, cache_bytes, err) : 0;
        if (r < 0) {
                store_close(st);
                return bc_error_prefix(err, "artifact cache %s", artifact_dir);
        }
        return 0;
}

void store_close(struct store *st)
{
        storage_cache_free(st->artifacts);
        storage_cache_free(st->images);
        storage_cache_free(st->cache);
        storage_config_free(st->s3);
        free(st->trees_dir);
        memset(st, 0, sizeof(*st));
}

/* The caches under the work dir, in the order they give way to jobs. */
#define N_WORK_DIR_CACHES 3
struct named_cache {
        const char *name;
        struct storage_cache *cache; /* NULL: none */
};

static void work_dir_caches(const struct store *st, struct named_cache ret[N_WORK_DIR_CACHES])
{
        ret[0] = (struct named_cache){ "volumes", st->cache };
        ret[1] = (struct named_cache){ "artifacts", st->artifacts };
        ret[2] = (struct named_cache){ "images", st->images };
}

/* The disk budget's reclaimer: the bytes freed of `bytes` asked. */
static uint64_t reclaim(void *ctx, uint64_t bytes)
{
        struct store *st = ctx;
        struct named_cache caches[N_WORK_DIR_CACHES];
        work_dir_caches(st, caches);
        uint64_t freed = 0;
        for (size_t i = 0; i < N_WORK_DIR_CACHES && freed < bytes; i++) {
                uint64_t got = storage_cache_reclaim(caches[i].cache, bytes - freed);
                if (!got)
                        continue;
                wmetrics_disk_reclaimed(st->metrics, caches[i].name, got);
                log_event(LOG_INFO, "disk.reclaimed", "cache", caches[i].name,
                          LOG_INT("bytes", got), LOG_INT("asked", bytes - freed), "detail",
                          "cache entries no job holds evicted to make room for a job", NULL);
                freed += got;
        }
        return freed;
}

void store_give_way(struct store *st, struct disk_budget *disk, struct metrics *m)
{
        st->metrics = m;
        uint64_t room, avail, reserve;
        struct named_cache caches[N_WORK_DIR_CACHES];
        work_dir_caches(st, caches);
        if (disk_budget_room(disk, &room, &avail, &reserve) == 0)
                for (size_t i = 0; i < N_WORK_DIR_CACHES; i++)
                        storage_cache_set_min_free(caches[i].cache, reserve);
        disk_budget_set_reclaim(disk, reclaim, st);
}


/* A volume given by storage + version, from the volume cache. */
static int acquire_stored_volume(const struct job_services *svc, const struct spec_volume *vol,
                                 const char *queue, struct storage_cache_entry **ret,
                                 struct bc_error *err)
{
        struct store_version v = { 0 };
        const char *p[] = { vol->storage, vol->version, queue };
        _cleanup_pgresult_ PGresult *res = svc->lookup(svc->ctx, STORE_RESOLVE_JOB_SQL, 3, p, err);
        int found = res ? store_version_from_row(res, 0, &v, err) : -EPROTO;
        if (found < 0)
                return bc_error_prefix(err, "resolve storage %s", vol->storage);
        if (found == 0)
                return bc_error_set(err, BC_BAD_SPEC, ENOENT, "storage %s has no version %s",
                                    vol->storage, vol->version);
        int r = store_cache_version(svc->store, svc->store->cache, &v, ret, err);
        store_version_done(&v);
        return r;
}

int store_acquire_volumes(const struct job_services *svc, const struct job_spec *spec,
                          const char *queue, struct store_mounts *ret, struct bc_error *err)
{
        struct store *st = svc->store;
        memset(ret, 0, sizeof(*ret));
        if (!spec->n_volumes)
                return 0;
        ret->entries = calloc(spec->n_volumes, sizeof(*ret->entries));
        if (!ret->entries)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        for (size_t i = 0; i < spec->n_volumes; i++) {
                const struct spec_volume *vol = &spec->volumes[i];
                char field[64];
                snprintf(field, sizeof(field), "volumes[%zu] (%s)", i, vol->name);
                int r = vol->storage
                                ? acquire_stored_volume(svc, vol, queue, &ret->entries[i], err)
                                : storage_cache_acquire_url(st->cache, vol->url, vol->sha256,
                                                            st->url_guard, &ret->entries[i], err);
                if (r < 0) {
                        store_release_volumes(st, ret);
                        return bc_error_prefix(err, "%s", field);
                }
                ret->n = i + 1;
        }
        return 0;
}

const char *store_mount_path(const struct store_mounts *m, size_t i)
{
        return storage_cache_entry_path(m->entries[i]);
}

void store_release_volumes(struct store *st, struct store_mounts *m)
{
        for (size_t i = 0; i < m->n; i++)
                storage_cache_release(st->cache, m->entries[i]);
        free(m->entries);
        memset(m, 0, sizeof(*m));
}

int store_acquire_image(const struct job_services *svc, const struct job_spec *spec,
                        const char *queue, struct storage_cache_entry **ret, struct bc_error *err)
{
        struct store *st = svc->store;
        *ret = NULL;
        if (!spec->image_storage)
                return 0;
        if (!st->images)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOTSUP, "image: no image cache");
        const char *p[] = { spec->image_storage, spec->image_version, queue };
        _cleanup_pgresult_ PGresult *res = svc->lookup(
                svc->ctx,
                "select kind, " STORE_VERSION_COLUMNS
                " from boxcar.resolve_image($1, $2, boxcar.queue_scope($3))",
                3, p, err);
        if (!res)
                return bc_error_prefix(err, "image: resolve storage %s", spec->image_storage);
        if (PQntuples(res) == 0)
                return bc_error_set(err, BC_BAD_SPEC, ENOENT, "image.storage: no storage %s",
                                    spec->image_storage);
        if (strcmp(PQgetvalue(res, 0, 0), "image") != 0)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "image.storage: %s is a storage of kind %s, not an image "
                                    "(push one with boxcar storage push --kind image)",
                                    spec->image_storage, PQgetvalue(res, 0, 0));
        struct store_version v = { 0 };
        int found = store_version_from_row(res, 1, &v, err);
        if (found < 0)
                return found;
        if (found == 0)
                return bc_error_set(err, BC_BAD_SPEC, ENOENT,
                                    "image.version: storage %s has no version %s",
                                    spec->image_storage, spec->image_version);
        int r = store_cache_version(st, st->images, &v, ret, err);
        store_version_done(&v);
        return r < 0 ? bc_error_prefix(err, "image %s", spec->image_storage) : 0;
}

int store_restore_artifact(const struct job_services *svc, const struct job_spec *spec,
                           const char *queue, const char *workspace, bool cached,
                           struct store_artifact_start *ret, uint64_t *ret_downloaded,
                           struct bc_error *err)
{
        struct store *st = svc->store;
        memset(ret, 0, sizeof(*ret));
        *ret_downloaded = 0;
        if (!spec->artifact_storage)
                return 0;
        /* The head and the base in one read: "latest" is the head read here,
         * the one the new version may later replace, and no other. */
        const char *p[] = { spec->artifact_storage, spec->artifact_base, queue };
        _cleanup_pgresult_ PGresult *res = svc->lookup(
                svc->ctx,
                "select head, " STORE_VERSION_COLUMNS
                " from boxcar.artifact_start($1, $2, boxcar.queue_scope($3))",
                3, p, err);
        if (!res)
                return bc_error_prefix(err, "artifact: resolve storage %s",
                                       spec->artifact_storage);
        snprintf(ret->head_sha, sizeof(ret->head_sha), "%s",
                 PQgetisnull(res, 0, 0) ? "" : PQgetvalue(res, 0, 0));
        bool latest = strcmp(spec->artifact_base, "latest") == 0;
        if (strcmp(spec->artifact_base, "empty") == 0 || (latest && !ret->head_sha[0]))
                return 0; /* a new artifact starts empty */
        struct store_version v = { 0 };
        int found = store_version_from_row(res, 1, &v, err);
        if (found < 0)
                return found;
        if (found == 0)
                return bc_error_set(err, BC_BAD_SPEC, ENOENT,
                                    "artifact.base: storage %s has no "
                                    "version %s",
                                    spec->artifact_storage, spec->artifact_base);
        int r = 0;
        if (cached) {
                /* The same extractor and limits as below: a hostile layer
                 * is refused alike, and only a complete tree is published. */
                r = store_cache_version(st, st->artifacts, &v, &ret->base, err);
                if (r >= 0)
                        *ret_downloaded = storage_cache_entry_downloaded_bytes(ret->base);
        } else {
                r = store_extract_version(st, &v, workspace, NULL, ret_downloaded, err);
        }
        if (r < 0) {
                store_version_done(&v);
                return bc_error_prefix(err, "artifact %s base", spec->artifact_storage);
        }
        memcpy(ret->base_sha, v.sha256, 65);
        ret->base_version = v;
        return 0;
}

void store_artifact_start_done(struct store *st, struct store_artifact_start *a)
{
        if (!a)
                return;
        if (a->base)
                storage_cache_release(st->artifacts, a->base);
        a->base = NULL;
        store_version_done(&a->base_version);
}
