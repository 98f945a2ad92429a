/* boxcar storage: S3 settings and SigV4 presigning, content-addressed
 * upload of deterministic tarballs, hostile-input-safe extraction streamed
 * straight from a download, and a per-worker volume cache (DESIGN §5–6).
 *
 * Every fallible function returns 0 (or a count) on success and a negative
 * errno on failure, filling the caller's `struct bc_error *err` (may be
 * NULL) with one of BC_CONFIG, BC_USAGE, BC_IO, BC_FETCH_FAILED,
 * BC_UPLOAD_FAILED, BC_CHECKSUM_MISMATCH, BC_BAD_ARCHIVE, BC_NOT_FOUND.
 * Outputs (`ret_…`) are written only on success.  Messages never contain a
 * secret key, a session token or a presigned query string.  Nothing here
 * logs.  All functions are safe to call from several threads at once on
 * distinct objects; a struct storage_config and a struct storage_cache may
 * be shared between threads. */
#ifndef BC_STORAGE_STORAGE_H
#define BC_STORAGE_STORAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/netguard.h"

#define STORAGE_SHA256_HEX_LEN 64

/* ---- S3 settings ------------------------------------------------------ */

struct creds_provider;

struct storage_config {
        /* Where credentials come from: the AWS SDKs' chain (storage/creds.h),
         * set by storage_config_from_env.  When it is NULL (tests, tools)
         * the three fixed fields below are used instead. */
        struct creds_provider *creds;
        char *access_key;
        char *secret_key;
        char *session_token; /* NULL when none */
        char *region;        /* AWS_REGION, AWS_DEFAULT_REGION, the profile's
                                 * region, else "us-east-1" */
        char *endpoint;      /* AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the
                                 * profile's s3 endpoint_url or endpoint_url;
                                 * without trailing '/', NULL for AWS itself */
        char *bucket;        /* BOXCAR_S3_BUCKET */
        char *ca_bundle;     /* AWS_CA_BUNDLE, else the profile's ca_bundle:
                                 * the CAs S3's TLS is checked against (NULL:
                                 * the system's) */
        char *prefix;        /* BOXCAR_S3_PREFIX without surrounding '/',
                                 * "" when unset */
        bool path_style;     /* BOXCAR_S3_FORCE_PATH_STYLE, else the profile's
                                 * s3 addressing_style, else true for custom
                                 * endpoints (and buckets with dots),
                                 * virtual-hosted on AWS */
        /* Transfer policy; storage_config_from_env sets the defaults shown,
         * callers (and tests) may change them before use. */
        int retries;           /* extra attempts after the first: 4 */
        int retry_base_ms;     /* first backoff, doubled each time: 250 */
        int retry_max_ms;      /* backoff ceiling: 8000 */
        int connect_timeout_s; /* 10 */
        int low_speed_time_s;  /* abort below 1 KiB/s for this long: 30 */
};

/* Reads the variables above from the environment and the AWS shared files
 * (AWS_PROFILE, AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE, AWS_CA_BUNDLE)
 * and picks the credential source, without any network access (temporary
 * credentials are fetched at first use).  A missing BOXCAR_S3_BUCKET, no
 * credential source at all, a partial one, or a malformed endpoint is
 * BC_CONFIG naming the variable.  *ret is the caller's, freed with
 * storage_config_free(). */
int storage_config_from_env(struct storage_config **ret, struct bc_error *err);
void storage_config_free(struct storage_config *cfg);

/* Where the credentials come from, for logs: "env", "assume role
 * (profile x, source_profile y)", "shared files (profile x)",
 * "credential_process (profile x: /its/command)", "web identity",
 * "container", "IMDS", or "fixed". */
const char *storage_credentials_source(const struct storage_config *cfg);

/* The access key id in use (not a secret; it is in every signed URL),
 * fetching credentials first when needed.  *ret is a new heap string.
 * Errors as for any signed request (BC_FETCH_FAILED naming the source). */
int storage_credentials_key_id(const struct storage_config *cfg, char **ret, struct bc_error *err);

/* Checks that the bucket answers to these settings: a signed
 * ListObjects of at most one key under the prefix (the permission the
 * HEAD before each upload needs anyway), no retries, 10 s at most (plus
 * the credentials' own fetch when they are due).  On failure *ret_why
 * gets a short reason fit for /readyz and logs: the S3 error code
 * ("NoSuchBucket", "SignatureDoesNotMatch", "AccessDenied",
 * "InvalidAccessKeyId", or "HTTP 500"), "unreachable: <curl's reason>",
 * or "credentials: <why>"; err holds the full message. */
int storage_check_bucket(const struct storage_config *cfg, char ret_why[static 160],
                         struct bc_error *err);

/* ---- Content addressing ----------------------------------------------- */

/* True when s is exactly 64 lowercase hex digits. */
bool storage_sha256_valid(const char *s);

/* "<prefix>/sha256/<2 hex>/<sha256>.tar.gz" ("sha256/…" when the prefix is
 * empty).  *ret is a new heap string the caller frees.  A malformed sha256
 * is BC_USAGE. */
int storage_object_key(const struct storage_config *cfg, const char *sha256, char **ret,
                       struct bc_error *err);

/* ---- Presigning ------------------------------------------------------- */

enum storage_method { STORAGE_GET, STORAGE_PUT, STORAGE_HEAD };

#define STORAGE_PRESIGN_MIN_S 1
#define STORAGE_PRESIGN_MAX_S 604800 /* 7 days, S3's limit for SigV4 */

/* A SigV4 query-presigned URL for `key` in the configured bucket, valid
 * for expires_s seconds from now (1 s .. 7 days, else BC_USAGE).  *ret is
 * a new heap string the caller frees; it is a bearer credential: never
 * log it. */
int storage_presign(const struct storage_config *cfg, enum storage_method method, const char *key,
                    long expires_s, char **ret, struct bc_error *err);

/* ---- Limits for untrusted archives ------------------------------------ */

struct storage_limits {
        uint64_t max_bytes;    /* uncompressed tar stream (bounds disk use) */
        uint64_t max_entries;  /* headers of any kind */
        uint64_t max_download; /* compressed bytes accepted from the network */
        uint32_t max_ratio;    /* uncompressed/compressed, 0 = no check */
        uint64_t ratio_floor;  /* ratio checked only beyond this many
                                 * uncompressed bytes, so tiny archives of
                                 * zeros are not refused */
        /* An image (a root filesystem) holds setuid programs and device
         * nodes by nature, so they are neutralised instead of refused:
         * setuid/setgid bits are cleared and devices, fifos and sockets are
         * not created (skipped).  Everything else is refused as for a
         * volume.  false for volumes and artifacts. */
        bool image;
        /* Bytes of the destination's filesystem that must stay free (the
         * worker's --disk-reserve): extraction stops with BC_IO and
         * ENOSPC, the archive not at fault, once less is free.  0: only
         * the filesystem's own limit. */
        uint64_t min_free;
};

/* 16 GiB, 1,000,000 entries, 16 GiB download, ratio 250 beyond 64 MiB. */
void storage_limits_default(struct storage_limits *ret);
/* BC_USAGE when a cap is 0 or the ratio floor exceeds max_bytes. */
int storage_limits_validate(const struct storage_limits *l, struct bc_error *err);

/* ---- Packing ------------------------------------------------------------ */

/* Bounds on packing a tree that may be hostile.  Going past one, or an
 * entry that cannot be read (EACCES), is BC_WORKSPACE_LIMIT naming the
 * path and the limit. */
#define STORAGE_PACK_MAX_DEPTH 128
struct storage_pack_limits {
        uint64_t max_bytes;   /* file data stored (holes and extra links are free) */
        uint64_t max_entries; /* files, directories, symlinks */
        uint32_t max_depth;   /* directory nesting */
        double max_seconds;   /* wall-clock budget of the whole pack */
};
/* 16 GiB, 10,000,000 entries, depth STORAGE_PACK_MAX_DEPTH, 3600 s. */
void storage_pack_limits_default(struct storage_pack_limits *ret);

struct storage_pack_result {
        char sha256[STORAGE_SHA256_HEX_LEN + 1]; /* of the .tar.gz bytes */
        uint64_t size;                           /* bytes of .tar.gz written */
        uint64_t file_count;                     /* regular files and symlinks */
        uint64_t skipped;                        /* sockets, fifos, devices: not packed */
};

/* Writes dir as a deterministic .tar.gz to out_fd (from its current
 * position; the fd stays the caller's).  Entries are sorted bytewise by
 * path; mtime, uid, gid and owner names are zeroed; permission bits are
 * kept except setuid/setgid/sticky; symlinks are stored, never followed;
 * anything but files, directories and symlinks is skipped and counted.
 * Hard links stay links, sparse files stay sparse (see pack.c).  The tree
 * is read once and hashed as it is written.  limits NULL: the defaults. */
int storage_pack_dir(const char *dir, int out_fd, const struct storage_pack_limits *limits,
                     struct storage_pack_result *ret, struct bc_error *err);

/* ---- Transfers ---------------------------------------------------------- */

/* Uploads the .tar.gz in fd (size bytes from offset 0, read with pread so
 * the fd's position is untouched) under its content-addressed key: HEAD
 * first, nothing sent when the object exists, else PUT with
 * `If-None-Match: *` (412 means someone else stored it meanwhile).
 * *ret_uploaded tells whether bytes were sent.  Retries 5xx and
 * connection errors; gives up with BC_UPLOAD_FAILED. */
int storage_upload(const struct storage_config *cfg, int fd, const char *sha256, uint64_t size,
                   bool *ret_uploaded, struct bc_error *err);

struct storage_push_result {
        struct storage_pack_result pack;
        char *key; /* object key; freed by storage_push_result_done */
        bool uploaded;
};

/* storage_pack_dir into an unnamed temporary file under tmp_dir, then
 * storage_upload.  on_packed (or NULL) is called with the packed version's
 * sha256 between the two, for work that can overlap the upload.  Call
 * storage_push_result_done(ret) afterwards. */
int storage_push_dir(const struct storage_config *cfg, const char *dir, const char *tmp_dir,
                     const struct storage_pack_limits *limits,
                     void (*on_packed)(void *ctx, const char *sha256), void *ctx,
                     struct storage_push_result *ret, struct bc_error *err);
void storage_push_result_done(struct storage_push_result *r);

struct storage_fetch_result {
        char sha256[STORAGE_SHA256_HEX_LEN + 1]; /* of the downloaded bytes */
        uint64_t size;                           /* compressed bytes downloaded */
        uint64_t bytes;                          /* file bytes extracted */
        uint64_t entries;                        /* entries extracted */
};

/* Downloads url (any http(s) URL, typically presigned) and extracts it
 * while it streams, without a temporary tarball, into dest_dir, which must
 * not exist or be an empty directory.  The SHA-256 of the downloaded bytes
 * is checked against expected_sha256 when it is not NULL
 * (BC_CHECKSUM_MISMATCH).  On any failure dest_dir is removed (or emptied
 * when it existed).  Errors: BC_FETCH_FAILED (after retries; the message
 * names the URL without its query string), BC_BAD_ARCHIVE (hostile or
 * corrupt archive; names the entry), BC_CHECKSUM_MISMATCH.  cfg only
 * supplies the retry and timeout policy and may be NULL (defaults); limits
 * may be NULL (storage_limits_default).  A corrupt or hostile archive is
 * BC_BAD_ARCHIVE even when an expected hash was given: the hash is known
 * only once the whole stream has been read.
 *
 * guard NULL: url is trusted (presigned by the worker itself for the
 * operator's S3 endpoint).  Otherwise every address connected to (each
 * one resolved, each redirect hop) must pass it; a refusal is BC_BAD_SPEC
 * naming the address and the worker options that allow it, and is not
 * retried. */
int storage_fetch_extract(const struct storage_config *cfg, const char *url,
                          const char *expected_sha256, const char *dest_dir,
                          const struct storage_limits *limits, const struct netguard *guard,
                          struct storage_fetch_result *ret, struct bc_error *err);

/* Same as storage_fetch_extract, from a local .tar.gz (or .tar) file. */
int storage_extract_file(const char *path, const char *expected_sha256, const char *dest_dir,
                         const struct storage_limits *limits, struct storage_fetch_result *ret,
                         struct bc_error *err);

/* ---- Trees: what a version is (layered versions, DESIGN §11) ----------- */

/* A tree's manifest: every entry of the tree (files, directories,
 * symlinks, hard links), sorted bytewise by path, each file with the
 * SHA-256 of its data and where its holes are.  Its bytes are canonical:
 * the same tree gives the same manifest whatever history produced it, and
 * the SHA-256 of those bytes is the tree's id, the name of every version
 * made since layered versions (a version made before is named by its
 * tarball's SHA-256 and has no manifest).  Format: storage/tree.c. */
struct storage_tree;

/* Parses a manifest (untrusted: it may come from S3).  Anything
 * malformed, unsorted, duplicated, or naming an unsafe path (absolute,
 * "..", a parent that is not a directory of the tree) is BC_BAD_ARCHIVE
 * naming the fault; so is a manifest whose SHA-256 is not expected_id
 * (when not NULL).  *ret is the caller's (storage_tree_free). */
int storage_tree_parse(const void *buf, size_t len, const char *expected_id,
                       struct storage_tree **ret, struct bc_error *err);
void storage_tree_free(struct storage_tree *t);
/* The tree's id: 64 lowercase hex digits, valid while t is. */
const char *storage_tree_id(const struct storage_tree *t);
/* The manifest's canonical bytes, valid while t is. */
void storage_tree_bytes(const struct storage_tree *t, const void **ret_buf, size_t *ret_len);
/* Entries (of any kind), regular files and symlinks (as file_count
 * counts them), and bytes of file data (holes and extra links excluded). */
void storage_tree_stats(const struct storage_tree *t, uint64_t *ret_entries,
                        uint64_t *ret_file_count, uint64_t *ret_data_bytes);

/* The manifest as a file (written to a temporary name, then renamed), and
 * back (checked against expected_id: a corrupt file is BC_BAD_ARCHIVE,
 * a missing one BC_NOT_FOUND). */
int storage_tree_save(const struct storage_tree *t, const char *path, struct bc_error *err);
int storage_tree_load(const char *path, const char *expected_id, struct storage_tree **ret,
                      struct bc_error *err);

/* "<prefix>/trees/<2 hex>/<id>.tree.gz": where a tree's manifest lives
 * in S3, gzip-compressed.  BC_USAGE for a malformed id. */
int storage_tree_key(const struct storage_config *cfg, const char *id, char **ret,
                     struct bc_error *err);
/* Uploads t's manifest under storage_tree_key (HEAD first, then PUT with
 * If-None-Match: *, as storage_upload).  *ret_size: compressed bytes of
 * the object. */
int storage_tree_upload(const struct storage_config *cfg, const struct storage_tree *t,
                        uint64_t *ret_size, bool *ret_uploaded, struct bc_error *err);
/* Downloads and parses the manifest of tree id (checked against id).  An
 * object that does not exist is BC_NOT_FOUND; a corrupt one
 * BC_BAD_ARCHIVE; transfer failures BC_FETCH_FAILED. */
int storage_tree_download(const struct storage_config *cfg, const char *id,
                          struct storage_tree **ret, struct bc_error *err);

/* ---- Layers: a version as what changed -------------------------------- */

/* A version is a stack of layers, bottom first: .tar.gz objects stored
 * like any tarball (storage_object_key, named by their own SHA-256).  The
 * bottom layer holds a whole tree and is extracted as any tarball; each
 * layer above holds only what differs from the tree below it: entries
 * that are new or changed (they replace what is there, never written
 * through), and for each name that is gone an empty file
 * "<dir>/.wh.<name>" (the OCI image whiteout).  A stack never holds more
 * than STORAGE_MAX_LAYERS layers: a version made on a base that already
 * has as many is stored as the bottom layer plus one layer of everything
 * that differs from it (compaction). */
#define STORAGE_MAX_LAYERS 16
#define STORAGE_WHITEOUT_PREFIX ".wh."

/* What storage_layer_build versions, and against what. */
struct storage_layer_args {
        const char *dir; /* the tree to version (a job's merged workspace) */
        /* The tree dir started from, or NULL: a file's hash is taken from it
         * instead of reading the file when the file cannot have changed
         * (see upper). */
        const struct storage_tree *base;
        /* dir's overlay upper directory, or NULL.  When given, a regular
         * file of dir absent from upper is base's file (the overlay is
         * mounted without redirect_dir and metacopy) and is not read;
         * without it every file is read and hashed. */
        const char *upper;
        /* The tree the layer will be applied onto: base, or the stack's
         * bottom tree (compaction), or NULL: the layer is a whole tree. */
        const struct storage_tree *below;
        const struct storage_pack_limits *limits; /* NULL: the defaults */
};

struct storage_layer_result {
        struct storage_tree *tree;       /* dir's tree; the caller frees it */
        struct storage_pack_result pack; /* the layer's .tar.gz; file_count
                                          * and skipped are of the tree */
        bool whole;                      /* the layer holds the whole tree (below was
                                * NULL, or the difference was most of the
                                * tree, or could not be said as a layer) */
        uint64_t changed_bytes;          /* file data in the layer */
        uint64_t changed_entries;        /* entries in the layer, whiteouts included */
        uint64_t whiteouts;
};

/* Computes dir's tree and writes, to out_fd, the layer that turns `below`
 * into it: a deterministic .tar.gz of the entries that differ plus
 * whiteouts, or the whole tree (result.whole) when below is NULL, when
 * the differing file data exceeds half the tree's, or when a differing
 * entry's name begins with STORAGE_WHITEOUT_PREFIX.  Limits, errors and
 * the handling of what cannot be packed are storage_pack_dir's.
 * Changed files are read twice (hashed, then packed), the others not at
 * all when upper is given. */
int storage_layer_build(const struct storage_layer_args *a, int out_fd,
                        struct storage_layer_result *ret, struct bc_error *err);
void storage_layer_result_done(struct storage_layer_result *r);

/* The name of a layer stack, under which a cache keeps its extracted tree:
 * the layer's own SHA-256 for a single layer (so a tarball version's
 * entry keeps its name), else the SHA-256 of "boxcar-stack 1\n" followed
 * by each layer's hex and "\n". */
void storage_stack_id(const char *const *layer_sha256, size_t n,
                      char ret[STORAGE_SHA256_HEX_LEN + 1]);

/* Downloads url and applies it as a layer (not the bottom one) onto
 * dest_dir, an existing tree: its entries replace what is there (a file
 * is unlinked and created anew, never written through; a directory keeps
 * its contents and takes the entry's mode), "<dir>/.wh.<name>" removes
 * <name> (a directory with everything in it), and a hard link may name a
 * regular file already in dest_dir.  Refused as BC_BAD_ARCHIVE, besides
 * what storage_fetch_extract refuses: an opaque-directory marker
 * (".wh..wh..opq": boxcar's layers never hold one), a whiteout naming
 * nothing or "." or "..", a whiteout of a name this layer also creates,
 * and anything reached through a symlink.  On failure dest_dir is left
 * part-applied (the caller discards it); nothing outside it changes.
 * Other arguments and errors as storage_fetch_extract. */
int storage_fetch_apply(const struct storage_config *cfg, const char *url,
                        const char *expected_sha256, const char *dest_dir,
                        const struct storage_limits *limits, struct storage_fetch_result *ret,
                        struct bc_error *err);
/* Same, from a local .tar.gz file. */
int storage_apply_file(const char *path, const char *expected_sha256, const char *dest_dir,
                       const struct storage_limits *limits, struct storage_fetch_result *ret,
                       struct bc_error *err);

/* ---- Object lifecycle ------------------------------------------------- */

/* Deletes key from the bucket (a key that is not there is success).
 * Retries as storage_upload; BC_UPLOAD_FAILED when it gives up. */
int storage_delete(const struct storage_config *cfg, const char *key, struct bc_error *err);

/* ---- Volume cache ------------------------------------------------------- */

struct storage_cache;
struct storage_cache_entry;

/* Opens (creating it if needed) a cache under dir holding at most
 * max_bytes of extracted volumes, evicting the least recently used entries
 * that no one holds.  Several processes may share dir (file locks).  cfg
 * (may be NULL when every URL is presigned) and limits (NULL = defaults)
 * are copied by reference: they must outlive the cache.  Free with
 * storage_cache_free(), after releasing every entry. */
int storage_cache_new(const char *dir, uint64_t max_bytes, const struct storage_config *cfg,
                      const struct storage_limits *limits, struct storage_cache **ret,
                      struct bc_error *err);
void storage_cache_free(struct storage_cache *c);
/* For trees that must stay as they were packed (an artifact's versions,
 * under a job's overlay): entries keep their modes exactly, instead of
 * losing their write bits, and belong to uid:gid (the job's identity, so
 * that the job finds its files its own); the cache directory becomes
 * 0700, so nobody but the worker reaches them.  Call before any acquire. */
int storage_cache_set_owner(struct storage_cache *c, uid_t uid, gid_t gid, struct bc_error *err);

/* Returns a read-only extracted volume.  With sha256 given, a cached entry
 * is returned without touching the network, and a miss downloads url,
 * verifies it and moves it in atomically.  With sha256 NULL the URL is
 * always downloaded (into a temporary directory) and its computed hash
 * either finds an existing entry or becomes a new one.  The entry cannot
 * be evicted until storage_cache_release(); its path is valid until then.
 * url may be NULL only with sha256 given: a miss is then BC_NOT_FOUND.
 * guard: as for storage_fetch_extract (NULL when url is trusted). */
int storage_cache_acquire(struct storage_cache *c, const char *url, const char *sha256,
                          const struct netguard *guard, struct storage_cache_entry **ret,
                          struct bc_error *err);
/* A url volume (a job spec's URL, not a storage the database entitled the
 * job to): as storage_cache_acquire, but a cached sha256 is served only
 * with proof that this URL may be fetched now and serves that content
 * (cache_origin.c); otherwise the URL is downloaded for real, and a URL
 * the origin refuses fails however the content is cached. */
int storage_cache_acquire_url(struct storage_cache *c, const char *url, const char *sha256,
                              const struct netguard *guard, struct storage_cache_entry **ret,
                              struct bc_error *err);
/* A version given as its layers (bottom first, 1 to STORAGE_MAX_LAYERS):
 * its extracted tree, cached under storage_stack_id(shas).  A miss starts
 * from the longest prefix of the stack already cached (a tree of hard
 * links to that entry: entries are never modified), or from nothing, and
 * downloads and applies only the layers that are missing
 * (storage_fetch_apply), so a worker holding version N of a chain fetches
 * one layer for version N+1.  urls[i] is a presigned GET of layer i.  A
 * stack naming a layer twice is BC_BAD_ARCHIVE.  Otherwise as
 * storage_cache_acquire with a sha256 given; downloaded bytes are the
 * sum over the layers fetched. */
int storage_cache_acquire_layers(struct storage_cache *c, const char *const *urls,
                                 const char *const *layer_sha256, size_t n,
                                 struct storage_cache_entry **ret, struct bc_error *err);
const char *storage_cache_entry_path(const struct storage_cache_entry *e);
const char *storage_cache_entry_sha256(const struct storage_cache_entry *e);
/* The entry's extracted file bytes and entries (0 when unknown: an entry
 * cached by an older version). */
void storage_cache_entry_stats(const struct storage_cache_entry *e, uint64_t *ret_bytes,
                               uint64_t *ret_entries);
/* Whether this acquire had to download (false on a hit). */
bool storage_cache_entry_downloaded(const struct storage_cache_entry *e);
/* The compressed bytes this acquire downloaded (0 on a hit). */
uint64_t storage_cache_entry_downloaded_bytes(const struct storage_cache_entry *e);
/* For an owned cache (storage_cache_set_owner): publishes as the entry
 * sha256 the tree seen at merged, an overlay whose lower is base (held by
 * the caller) and whose upper is upper (see fs_overlay_flatten): built in
 * the cache's tmp/ and renamed in, its cost following the names and the
 * changed bytes, not the tree's bytes.  The next job on that version then
 * finds it cached.  The caller vouches that sha256 is the packed digest
 * of that very tree.  0 (also when it is there already) or -errno;
 * nothing is published on failure, nor (-ENOSPC) when copying what
 * upper's filesystem holds could leave less than min_free free, or less
 * is free once done. */
int storage_cache_promote(struct storage_cache *c, const struct storage_cache_entry *base,
                          const char *merged, const char *upper, const char *sha256);
/* Drops one reference; e is invalid afterwards.  NULL-safe. */
void storage_cache_release(struct storage_cache *c, struct storage_cache_entry *e);

/* Gives disk back to the jobs: evicts least recently used entries that
 * nobody holds until at least `bytes` are gone (as the budget charges
 * them) or none is left, deleting them before it returns; the bytes
 * evicted.  NULL-safe. */
uint64_t storage_cache_reclaim(struct storage_cache *c, uint64_t bytes);
/* Downloads stop (BC_IO, -ENOSPC) rather than leave less than `bytes`
 * free on the cache's filesystem (storage_limits.min_free); before they
 * fail, the entries nobody holds are evicted and the download tried once
 * more.  Call before the cache is shared between threads.  NULL-safe. */
void storage_cache_set_min_free(struct storage_cache *c, uint64_t bytes);
/* Bytes of extracted volumes currently on disk in the cache. */
uint64_t storage_cache_size(struct storage_cache *c);
/* Entries and their bytes on disk (either pointer may be NULL). */
void storage_cache_stats(struct storage_cache *c, uint64_t *ret_entries, uint64_t *ret_bytes);

#endif
