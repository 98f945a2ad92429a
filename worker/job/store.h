/* The worker's use of storage/: resolving named storages in the database,
 * fetching a job's volumes (through the per-worker cache) and its artifact
 * base, and uploading the workspace as the artifact's new version.  A
 * job's lookups go through its services (services.h: lookup), never a
 * connection of their own. */
#ifndef BC_WORKER_JOB_STORE_H
#define BC_WORKER_JOB_STORE_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "storage/storage.h"
#include "worker/spec/spec.h"

struct job_services;
struct metrics;

struct store {
        struct storage_config *s3;          /* NULL when BOXCAR_S3_BUCKET is not set */
        struct storage_cache *cache;        /* volume cache, keyed by sha256 */
        struct storage_cache *images;       /* image cache (image extraction rules) */
        struct storage_limits image_limits; /* the image cache's; lives as long */
        /* Artifact versions kept extracted, with their modes, owned by the
         * job's identity, for workspaces that are overlays over them (NULL:
         * bases are extracted into each job's workspace). */
        struct storage_cache *artifacts;
        long url_ttl_s; /* lifetime of presigned URLs handed out */
        /* Checks the connections made for volume URLs taken from job specs
         * (not owned; NULL: none).  URLs the worker presigns itself for the
         * operator's S3 endpoint are trusted and not checked. */
        const struct netguard *url_guard;
        struct metrics *metrics; /* where cache reclaims are counted (not owned) */
};

/* Sets up S3 (when configured), the volume cache under cache_dir, the
 * image cache under image_dir and the artifact cache under artifact_dir
 * (each NULL: none), each bounded by cache_bytes.  st must not move while
 * open (the image cache points into it). */
int store_open(struct store *st, const char *cache_dir, const char *image_dir,
               const char *artifact_dir, uint64_t cache_bytes, long url_ttl_s,
               struct bc_error *err);
void store_close(struct store *st);

/* The caches under the work dir give way to the jobs of the disk budget:
 * a job that does not fit has them evict entries no job holds, least
 * recently used first (volumes, then artifact bases, then images), and
 * their downloads keep the budget's reserve free.  Before the caches are
 * shared between threads. */
struct disk_budget;
void store_give_way(struct store *st, struct disk_budget *disk, struct metrics *m);

BC_DEFINE_CLEANUP(struct storage_config *, storage_config_free)

struct store_version {
        char sha256[65];
        char *s3_key;
        uint64_t size, file_count;
};
void store_version_done(struct store_version *v);

/* Resolves NAME + "latest"|sha256 on conn (the CLI's; a job's go through
 * its services).  Returns 1 and fills *ret when found, 0 when the storage
 * or version does not exist, negative on a database error. */
int store_resolve(PGconn *conn, const char *storage, const char *version,
                  struct store_version *ret, struct bc_error *err);

/* A presigned GET for a version's object (caller frees). */
int store_presign_get(const struct store *st, const struct store_version *v, long ttl_s,
                      char **ret_url, struct bc_error *err);

/* The volumes a job holds while it runs. */
struct store_mounts {
        struct storage_cache_entry **entries;
        size_t n;
};

/* Acquires every volume of spec from svc->store (cache hit: no transfer).
 * On failure the ones acquired are released and err says which volume
 * (FETCH_FAILED, CHECKSUM_MISMATCH, BAD_ARCHIVE, or BAD_SPEC for a storage
 * version that does not exist). */
int store_acquire_volumes(const struct job_services *svc, const struct job_spec *spec,
                          struct store_mounts *ret, struct bc_error *err);
const char *store_mount_path(const struct store_mounts *m, size_t i);
void store_release_volumes(struct store *st, struct store_mounts *m);

/* Acquires the job's image (spec->image_storage + image_version) from
 * svc->store's image cache: *ret is NULL when the job has none.  A storage
 * that does not exist, is not an image, or lacks the version is
 * BC_BAD_SPEC naming image.storage or image.version; transfers fail as
 * volumes do.  Release with storage_cache_release(st->images, e). */
int store_acquire_image(const struct job_services *svc, const struct job_spec *spec,
                        struct storage_cache_entry **ret, struct bc_error *err);

/* Where a job's artifact starts: the version unpacked into its workspace,
 * and the storage's head at that moment, which the job's new version may
 * replace (and no other).  "" stands for none. */
struct store_artifact_start {
        char base_sha[65];
        char head_sha[65];
        /* With cached: the base version in st->artifacts (NULL when the
         * artifact starts empty), held until store_artifact_start_done. */
        struct storage_cache_entry *base;
};

/* Reads the storage's head and restores the artifact's base version
 * ("latest" is that head): unpacked into workspace, which is empty, or,
 * with cached (svc->store->artifacts must exist), taken from the artifact
 * cache (downloaded and extracted there on a miss) into ret->base,
 * workspace untouched.  *ret_downloaded: compressed bytes fetched (0 on a
 * hit). */
int store_restore_artifact(const struct job_services *svc, const struct job_spec *spec,
                           const char *workspace, bool cached, struct store_artifact_start *ret,
                           uint64_t *ret_downloaded, struct bc_error *err);
/* Releases ret->base (NULL-safe). */
void store_artifact_start_done(struct store *st, struct store_artifact_start *a);

struct store_artifact {
        char sha256[65];
        uint64_t size, file_count;
        bool uploaded; /* false when the same content was already stored */
        char *s3_key;
        char *url; /* presigned GET */
};
void store_artifact_done(struct store_artifact *a);

/* Packs workspace within limits (over one: BC_WORKSPACE_LIMIT, and
 * nothing is uploaded) and uploads it unless stored already; on_packed as
 * for storage_push_dir.  Nothing is
 * recorded: the version is recorded, and the head moved, with the job's
 * completion (boxcar.record_job_artifact). */
int store_save_artifact(struct store *st, const struct job_spec *spec, const char *workspace,
                        const char *tmp_dir, const struct storage_pack_limits *limits,
                        void (*on_packed)(void *ctx, const char *sha256), void *ctx,
                        struct store_artifact *ret, struct bc_error *err);

#endif
