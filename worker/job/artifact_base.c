/* A job's artifact: where its base comes from, and its workspace saved as
 * the new version after the run.
 *
 * With the namespace backend on a host that has overlays
 * (sandbox_overlay_available), the base version is
 * taken from the worker's artifact cache (extracted there once, on the
 * first job that needs it) and the job's workspace becomes an overlay:
 * that cached tree below, read-only and shared, the job's changes above,
 * on its own bounded filesystem.  Starting a job then costs a mount
 * whatever the artifact's size.  Elsewhere the base is extracted into the
 * workspace for every job, as before.
 *
 * The overlay's upper and work directories live in fs/scratch/overlay on
 * the job's filesystem: the sandbox binds only scratch/tmp and
 * scratch/shm, so the job never sees them, and the pool's wipe removes
 * scratch whole. */
#include "worker/job/job-internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/rmtree.h"
#include "sandbox/sandbox.h"
#include "worker/metrics/wmetrics.h"
#include "worker/job/store.h"
#include "worker/log/log.h"

/* Packing gets the job's timeout again as its budget, at least this (a
 * short job may leave a large tree). */
#define PACK_MIN_BUDGET_S 60.0

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

int artifact_base_restore(const struct job_services *svc, const struct job_spec *spec,
                          const char *queue, const char *dir, const char *ws,
                          struct store_artifact_start *ret, struct bc_error *err)
{
        bool cached = svc->store->artifacts && svc->cfg->sandbox == BACKEND_NAMESPACE;
        uint64_t downloaded = 0;
        int r = store_restore_artifact(svc, spec, queue, ws, cached, ret, &downloaded, err);
        if (downloaded)
                wmetrics_transfer(svc->metrics, "download", "artifact", downloaded);
        if (r < 0 || !ret->base)
                return r;
        wmetrics_artifact_cache(svc->metrics, !storage_cache_entry_downloaded(ret->base));
        _cleanup_free_ char *state = NULL;
        if (asprintf(&state, "%s/fs/scratch/overlay", dir) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        r = sandbox_overlay_mount(storage_cache_entry_path(ret->base), state, ws, SANDBOX_JOB_UID,
                                  SANDBOX_JOB_GID, err);
        if (r >= 0)
                return 0;
        /* Detected as possible, yet refused here (a kernel or filesystem
         * corner): fall back to extracting, and say so. */
        log_event(LOG_WARN, "artifact.overlay", "error", bc_error_message(err), "effect",
                  "the base is extracted into the job's workspace", NULL);
        bc_error_clear(err);
        store_artifact_start_done(svc->store, ret);
        (void)fs_rm_rf(state);
        return store_restore_artifact(svc, spec, queue, ws, false, ret, &downloaded, err);
}

/* Once the new version is packed from an overlay workspace, it is cached
 * too, built from the base's entry and the job's changes, so the session's
 * next job starts from the cache (best effort, logged).  That walks the
 * whole tree: it runs on a thread of its own while the version uploads,
 * not after it. */
struct artifact_promote {
        const struct job_services *svc;
        const char *dir, *ws;
        const struct store_artifact_start *a;
        char sha256[65];
        pthread_t thread;
        bool running;
};

static void *promote(void *arg)
{
        struct artifact_promote *p = arg;
        _cleanup_free_ char *upper = NULL;
        if (asprintf(&upper, "%s/fs/scratch/overlay/upper", p->dir) < 0)
                return NULL;
        int r = storage_cache_promote(p->svc->store->artifacts, p->a->base, p->ws, upper,
                                      p->sha256);
        if (r < 0)
                log_event(LOG_WARN, "artifact.cache", "sha256", p->sha256, "error", strerror(-r),
                          "effect", "the next job on this version downloads and extracts it",
                          NULL);
        return NULL;
}

/* store_save_version's on_packed, with the name the new version's tree
 * is cached under.  Caching a version that then fails to upload is
 * harmless: entries are named by their content, and one no job names is
 * evicted in time. */
static void on_packed(void *arg, const char *sha256)
{
        struct artifact_promote *p = arg;
        if (!p->a->base)
                return;
        snprintf(p->sha256, sizeof(p->sha256), "%s", sha256);
        p->running = pthread_create(&p->thread, NULL, promote, p) == 0;
        if (!p->running)
                promote(p);
}

static void promote_wait(struct artifact_promote *p)
{
        if (p->running)
                pthread_join(p->thread, NULL);
        p->running = false;
}

/* What the job left is bounded like the job: its disk and file limits,
 * and its timeout (at least PACK_MIN_BUDGET_S) as the packing's budget;
 * over a cached base (an overlay), the tree is that base plus at most what
 * the job's own filesystem holds. */
static void pack_limits(const struct job_run *run, struct storage_pack_limits *ret)
{
        storage_pack_limits_default(ret);
        ret->max_bytes = run->spec->limits.disk_mb << 20;
        ret->max_entries = run->spec->limits.files;
        if (run->artifact_start.base) {
                uint64_t bytes = 0, entries = 0;
                storage_cache_entry_stats(run->artifact_start.base, &bytes, &entries);
                ret->max_bytes += bytes;
                ret->max_entries += entries;
        }
        ret->max_seconds = run->spec->limits.timeout_s > PACK_MIN_BUDGET_S
                                   ? run->spec->limits.timeout_s
                                   : PACK_MIN_BUDGET_S;
}

static cJSON *layers_json(const struct store_version *v)
{
        cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; a && i < v->n_layers; i++)
                cJSON_AddItemToArray(a, cJSON_CreateString(v->layers[i]));
        return a;
}

/* The saved version in the result, and to be recorded with the job's
 * completion.  "conflict" is added when the version is recorded: whether
 * the head moved under the job (a push, or a writer outside the queue's
 * one-at-a-time order) is known then.  "url" is the whole tree's tarball
 * when the version is one layer; otherwise null, and `boxcar storage url`
 * or `pull` gets the tree (README: Layered versions). */
static void note_version(struct job_run *run, const struct store_saved *s, const char *url,
                         struct job_outcome *o)
{
        const struct store_version *v = &s->v;
        const char *parent = run->artifact_start.base_sha[0] ? run->artifact_start.base_sha : NULL;
        const char *head = run->artifact_start.head_sha[0] ? run->artifact_start.head_sha : NULL;
        cJSON *art = cJSON_AddObjectToObject(run->result, "artifact");
        cJSON_AddStringToObject(art, "storage", run->spec->artifact_storage);
        cJSON_AddStringToObject(art, "sha256", v->sha256);
        cJSON_AddNumberToObject(art, "size", (double)v->size);
        cJSON_AddNumberToObject(art, "file_count", (double)v->file_count);
        if (parent)
                cJSON_AddStringToObject(art, "parent_sha256", parent);
        else
                cJSON_AddNullToObject(art, "parent_sha256");
        cJSON_AddBoolToObject(art, "uploaded", s->uploaded);
        cJSON_AddNumberToObject(art, "layers", (double)v->n_layers);
        cJSON_AddNumberToObject(art, "changed_bytes", (double)s->changed_bytes);
        if (url)
                cJSON_AddStringToObject(art, "url", url);
        else
                cJSON_AddNullToObject(art, "url");
        _cleanup_(cJSON_Deletep) cJSON *rec = cJSON_CreateObject();
        cJSON_AddStringToObject(rec, "sha256", v->sha256);
        if (v->s3_key)
                cJSON_AddStringToObject(rec, "s3_key", v->s3_key);
        cJSON_AddNumberToObject(rec, "size", (double)v->size);
        cJSON_AddNumberToObject(rec, "file_count", (double)v->file_count);
        cJSON_AddItemToObject(rec, "parent_sha256",
                              parent ? cJSON_CreateString(parent) : cJSON_CreateNull());
        cJSON_AddItemToObject(rec, "expected_head",
                              head ? cJSON_CreateString(head) : cJSON_CreateNull());
        if (v->tree) {
                cJSON_AddItemToObject(rec, "layers", layers_json(v));
                cJSON_AddStringToObject(rec, "bottom_tree", v->bottom_tree);
        }
        free(o->artifact_json);
        o->artifact_json = cJSON_PrintUnformatted(rec);
}

static PGresult *job_db_exec(void *ctx, const char *sql, int n, const char *const *p,
                             struct bc_error *err)
{
        const struct job_services *svc = ctx;
        return svc->lookup(svc->ctx, sql, n, p, err);
}

/* The workspace becomes the artifact's new version, whatever the exit
 * status (a failed run's state is often what one wants to look at). */
void artifact_save(struct job_run *run, struct job_outcome *o)
{
        if (!run->spec->artifact_storage || o->action == JOB_DROP || o->action == JOB_RELEASE)
                return;
        const struct job_services *svc = run->svc;
        struct bc_error err = BC_ERROR_INIT;
        struct storage_pack_limits lim;
        if (run->pack_limits)
                lim = *run->pack_limits;
        else
                pack_limits(run, &lim);
        struct artifact_promote cache = { .svc = svc,
                                          .dir = run->dir,
                                          .ws = run->ws,
                                          .a = &run->artifact_start };
        _cleanup_free_ char *upper = NULL;
        if (run->upper_override)
                upper = strdup(run->upper_override);
        else if (run->artifact_start.base &&
                 asprintf(&upper, "%s/fs/scratch/overlay/upper", run->dir) < 0)
                upper = NULL;
        const struct store_version *base = run->artifact_start.base_sha[0]
                                                   ? &run->artifact_start.base_version
                                                   : NULL;
        struct store_save_args args = { .dir = run->ws,
                                        .upper = upper,
                                        .base = base,
                                        .tmp_dir = run->dir,
                                        .limits = &lim,
                                        .on_packed = on_packed,
                                        .ctx = &cache };
        struct store_db db = { job_db_exec, (void *)svc };
        struct store_saved s;
        int saved = store_save_version(svc->store, &db, &args, &s, &err);
        promote_wait(&cache);
        _cleanup_free_ char *url = NULL;
        if (saved >= 0 && s.v.s3_key)
                saved = store_presign_get(svc->store, &s.v, svc->store->url_ttl_s, &url, &err);
        if (saved < 0) {
                /* The job's own tree over a limit is final (and the head
                 * stays where it was); anything else is the upload's. */
                bool own = err.code == BC_WORKSPACE_LIMIT;
                job_outcome_fail(o, &err, BC_UPLOAD_FAILED);
                if (!own)
                        o->action = JOB_RETRY;
                bc_error_clear(&err);
                store_saved_done(&s);
                return;
        }
        note_version(run, &s, url, o);
        if (run->saved) {
                store_version_done(run->saved);
                *run->saved = s.v;
                run->saved->s3_key = s.v.s3_key ? strdup(s.v.s3_key) : NULL;
        }
        if (s.uploaded)
                wmetrics_transfer(svc->metrics, "upload", "artifact", s.v.size);
        char details[512];
        snprintf(details, sizeof(details),
                 "{\"storage\": \"%s\", \"sha256\": \"%s\", \"size\": %llu, \"uploaded\": %s, "
                 "\"layers\": %zu, \"changed_bytes\": %llu}",
                 run->spec->artifact_storage, s.v.sha256, (unsigned long long)s.v.size,
                 s.uploaded ? "true" : "false", s.v.n_layers, (unsigned long long)s.changed_bytes);
        svc->event(svc->ctx, run->job, "artifact_uploaded", details);
        store_saved_done(&s);
}

void artifact_base_release(const struct job_services *svc, const char *ws,
                           struct store_artifact_start *a)
{
        if (a->base) {
                /* The overlay goes first: the cached tree below it may be
                 * evicted once released, and the pool takes back only a
                 * bare filesystem. */
                struct bc_error err = BC_ERROR_INIT;
                (void)sandbox_workspace_unmount(ws, &err);
                bc_error_clear(&err);
        }
        /* An extracted base (no cache entry) still holds its version's
         * object key. */
        store_artifact_start_done(svc->store, a);
}
