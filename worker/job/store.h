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
        /* Manifests of the trees this worker made or used, so that the
         * next version of a chain needs no download (NULL: none kept). */
        char *trees_dir;
};

/* Sets up S3 (when configured), the volume cache under cache_dir, the
 * image cache under image_dir and the artifact cache under artifact_dir
 * (each NULL: none), each bounded by cache_bytes, and the manifests kept
 * in cache_dir's sibling "trees".  st must not move while
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

/* A version as the database lists it (boxcar.resolve_storage_version and
 * kin): its layers, bottom first, are what a restore downloads; s3_key is
 * its whole-tree .tar.gz when there is one (always for a one-layer
 * version: that layer). */
struct store_version {
        char sha256[65];
        char *s3_key; /* NULL when no whole-tree tarball was built */
        uint64_t size, file_count;
        bool tree;            /* named by its tree manifest, else by its tarball */
        char bottom_tree[65]; /* tree id of the bottom layer alone ("" if none) */
        size_t n_layers;
        char layers[STORAGE_MAX_LAYERS][65];
};
void store_version_done(struct store_version *v);

/* The columns every version query selects, in this order, after any
 * others: version_from_row reads them from a given column on. */
#define STORE_VERSION_COLUMNS "sha256, s3_key, size, file_count, layers, format, bottom_tree"
/* NAME ($1) + "latest"|sha256 ($2) resolved, as the CLI and jobs ask. */
#define STORE_RESOLVE_SQL \
        "select " STORE_VERSION_COLUMNS " from boxcar.resolve_storage_version($1, $2)"
/* The same for a job of queue $3: only a storage its scope may read
 * (owned, shared with it or public; sql/68_storage_scopes.sql), so a
 * storage unshared since the job was queued is not served. */
#define STORE_RESOLVE_JOB_SQL                                                           \
        "select " STORE_VERSION_COLUMNS " from boxcar.resolve_storage_version($1, $2, " \
        "boxcar.queue_scope($3))"

/* Row 0 of res from column first on (STORE_VERSION_COLUMNS): 1 and *ret
 * filled, 0 when those columns are null (no such version), or
 * BC_BAD_ARCHIVE for a layer list that cannot be (empty, too long,
 * malformed). */
int store_version_from_row(const PGresult *res, int first, struct store_version *ret,
                           struct bc_error *err);

/* Resolves NAME + "latest"|sha256 on conn (the CLI's; a job's go through
 * its services).  Returns 1 and fills *ret when found, 0 when the storage
 * or version does not exist, negative on a database error. */
int store_resolve(PGconn *conn, const char *storage, const char *version,
                  struct store_version *ret, struct bc_error *err);

/* A presigned GET for a version's whole-tree tarball (caller frees);
 * BC_NOT_FOUND when it has none (see store_build_tarball). */
int store_presign_get(const struct store *st, const struct store_version *v, long ttl_s,
                      char **ret_url, struct bc_error *err);

/* Downloads v's layers into cache (the ones it lacks: see
 * storage_cache_acquire_layers).  A layer missing from S3 is
 * BC_BAD_ARCHIVE naming it. */
int store_cache_version(const struct store *st, struct storage_cache *cache,
                        const struct store_version *v, struct storage_cache_entry **ret,
                        struct bc_error *err);
/* Extracts v into dest (absent or empty): the bottom layer, then each
 * layer above applied in turn.  limits NULL: the defaults.  *ret_downloaded
 * (may be NULL): compressed bytes fetched.  On failure dest is removed
 * (emptied when it existed). */
int store_extract_version(const struct store *st, const struct store_version *v, const char *dest,
                          const struct storage_limits *limits, uint64_t *ret_downloaded,
                          struct bc_error *err);

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
                          const char *queue, struct store_mounts *ret, struct bc_error *err);
const char *store_mount_path(const struct store_mounts *m, size_t i);
void store_release_volumes(struct store *st, struct store_mounts *m);

/* Acquires the job's image (spec->image_storage + image_version) from
 * svc->store's image cache: *ret is NULL when the job has none.  A storage
 * that does not exist, is not an image, or lacks the version is
 * BC_BAD_SPEC naming image.storage or image.version; transfers fail as
 * volumes do.  Release with storage_cache_release(st->images, e). */
int store_acquire_image(const struct job_services *svc, const struct job_spec *spec,
                        const char *queue, struct storage_cache_entry **ret, struct bc_error *err);

/* Where a job's artifact starts: the version unpacked into its workspace,
 * and the storage's head at that moment, which the job's new version may
 * replace (and no other).  "" stands for none. */
struct store_artifact_start {
        char base_sha[65];
        char head_sha[65];
        /* With cached: the base version in st->artifacts (NULL when the
         * artifact starts empty), held until store_artifact_start_done. */
        struct storage_cache_entry *base;
        /* The base version (its layers, which the new version builds on);
         * zeroed when the artifact starts empty. */
        struct store_version base_version;
};

/* Reads the storage's head and restores the artifact's base version
 * ("latest" is that head): unpacked into workspace, which is empty, or,
 * with cached (svc->store->artifacts must exist), taken from the artifact
 * cache (downloaded and extracted there on a miss) into ret->base,
 * workspace untouched.  *ret_downloaded: compressed bytes fetched (0 on a
 * hit).  queue: the job's; a storage another scope owns reads as one
 * without versions. */
int store_restore_artifact(const struct job_services *svc, const struct job_spec *spec,
                           const char *queue, const char *workspace, bool cached,
                           struct store_artifact_start *ret, uint64_t *ret_downloaded,
                           struct bc_error *err);
/* Releases ret->base (NULL-safe). */
void store_artifact_start_done(struct store *st, struct store_artifact_start *a);

/* One statement on the database, autocommitted: a job's services
 * (lookup) or the CLI's connection.  The result (caller PQclear()s it), or
 * NULL with err set. */
struct store_db {
        PGresult *(*exec)(void *ctx, const char *sql, int nparams, const char *const *params,
                          struct bc_error *err);
        void *ctx;
};

/* What store_save_version versions. */
struct store_save_args {
        const char *dir;                          /* the tree (a job's merged workspace) */
        const char *upper;                        /* its overlay upper directory, or NULL */
        const struct store_version *base;         /* the version dir started from, or NULL */
        const char *tmp_dir;                      /* where the layer is written before upload */
        const struct storage_pack_limits *limits; /* NULL: the defaults */
        /* Called (may be NULL) once the new version's layers are known and
         * before the upload, with the name its tree is cached under
         * (storage_stack_id), for work that can overlap the upload. */
        void (*on_packed)(void *ctx, const char *stack_id);
        void *ctx;
};

struct store_saved {
        struct store_version v; /* the new version: sha256 (its tree), layers,
                                 * bottom_tree, s3_key (its whole tarball when
                                 * it is one layer, else NULL), size (bytes of
                                 * its top layer), file_count */
        char stack_id[65];      /* its tree's name in the caches */
        bool uploaded;          /* bytes of its layer were sent */
        bool unchanged;         /* the tree is base's: the same version */
        bool whole;             /* its top layer holds the whole tree */
        uint64_t changed_bytes; /* file data in its top layer */
};
void store_saved_done(struct store_saved *s);

/* Versions a->dir: its tree's manifest, and the layer that makes it from
 * a->base's layers (the whole tree when there is no base, the base has no
 * manifest (made before layered versions), or most of it changed; the
 * difference from the bottom layer when the base's stack is full: see
 * STORAGE_MAX_LAYERS), registered in boxcar.storage_objects through db
 * before it is uploaded (so the collector can never delete it under us)
 * and uploaded unless stored already.  Nothing is recorded as a version:
 * the caller does that (a job with its completion,
 * boxcar.record_job_artifact; the CLI with boxcar.add_storage_version).
 * Over a pack limit: BC_WORKSPACE_LIMIT and nothing uploaded. */
int store_save_version(const struct store *st, const struct store_db *db,
                       const struct store_save_args *a, struct store_saved *ret,
                       struct bc_error *err);

/* The manifest of tree id: from st->trees_dir, else downloaded from S3
 * (and kept in trees_dir).  BC_NOT_FOUND when S3 has none. */
int store_tree_get(const struct store *st, const char *id, struct storage_tree **ret,
                   struct bc_error *err);
/* Keeps t in st->trees_dir (best effort: the manifest is in S3 too). */
void store_tree_keep(const struct store *st, const struct storage_tree *t);

/* A PostgreSQL array literal ("{...}") of n strings (vals, quoted) or
 * numbers (nums, when not NULL); the caller frees it, NULL when out of
 * memory. */
char *store_array_literal(size_t n, const char *const *vals, const uint64_t *nums);

/* Records v (saved by store_save_version) as storage's new head, its
 * parent parent (or NULL), outside any job (boxcar.add_storage_version):
 * `boxcar storage push`, a session's final checkpoint.  scope: the
 * writer's; a storage another scope owns is refused. */
int store_record_version(const struct store_db *db, const char *storage, const char *scope,
                         const struct store_version *v, const char *parent, struct bc_error *err);

/* Registers objects (boxcar.register_storage_objects) before they are
 * checked or uploaded: kinds "layer" or "tree". */
int store_register_objects(const struct store_db *db, size_t n, const char *const *keys,
                           const char *const *kinds, const char *const *shas,
                           const uint64_t *sizes, struct bc_error *err);

#endif
