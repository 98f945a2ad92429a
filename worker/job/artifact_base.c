/* Where a job's artifact base comes from.  With the namespace backend on a
 * host that has overlays (sandbox_overlay_available), the base version is
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
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/rmtree.h"
#include "sandbox/sandbox.h"
#include "worker/metrics/wmetrics.h"
#include "worker/job/store.h"
#include "worker/log/log.h"

int artifact_base_restore(const struct job_services *svc, const struct job_spec *spec,
                          const char *dir, const char *ws, struct store_artifact_start *ret,
                          struct bc_error *err)
{
        bool cached = svc->store->artifacts && svc->cfg->sandbox == BACKEND_NAMESPACE;
        uint64_t downloaded = 0;
        int r = store_restore_artifact(svc->store, svc->db, spec, ws, cached, ret, &downloaded,
                                       err);
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
        return store_restore_artifact(svc->store, svc->db, spec, ws, false, ret, &downloaded, err);
}

static void *promote(void *arg)
{
        struct artifact_promote *p = arg;
        _cleanup_free_ char *upper = NULL;
        if (asprintf(&upper, "%s/fs/scratch/overlay/upper", p->dir) < 0)
                return NULL;
        int r = storage_cache_promote(p->svc->store->artifacts, p->a->base, p->ws, upper, p->sha256);
        if (r < 0)
                log_event(LOG_WARN, "artifact.cache", "sha256", p->sha256, "error", strerror(-r),
                          "effect", "the next job on this version downloads and extracts it", NULL);
        return NULL;
}

/* Caching a version that then fails to upload is harmless: entries are
 * named by their content, and one no job names is evicted in time. */
void artifact_base_on_packed(void *arg, const char *sha256)
{
        struct artifact_promote *p = arg;
        if (!p->a->base)
                return;
        snprintf(p->sha256, sizeof(p->sha256), "%s", sha256);
        p->running = pthread_create(&p->thread, NULL, promote, p) == 0;
        if (!p->running)
                promote(p);
}

void artifact_base_promote_wait(struct artifact_promote *p)
{
        if (p->running)
                pthread_join(p->thread, NULL);
        p->running = false;
}

void artifact_base_release(const struct job_services *svc, const char *ws,
                           struct store_artifact_start *a)
{
        if (!a->base)
                return;
        /* The overlay goes first: the cached tree below it may be evicted
         * once released, and the pool takes back only a bare filesystem. */
        struct bc_error err = BC_ERROR_INIT;
        (void)sandbox_workspace_unmount(ws, &err);
        bc_error_clear(&err);
        store_artifact_start_done(svc->store, a);
}
