/* Shared by the parts of one job's run (job.c, job_dir.c, outcome.c); not
 * part of the worker's API (job.h is). */
#ifndef BC_WORKER_JOB_JOB_INTERNAL_H
#define BC_WORKER_JOB_JOB_INTERNAL_H

#include <pthread.h>
#include <cjson/cJSON.h>

#include "common/error.h"
#include "worker/exec/backend.h"
#include "worker/job/job.h"
#include "worker/spec/spec.h"

/* ---- job_dir.c ---- */
/* The job's directory: meta/, and its workspace.  Under the namespace
 * backend the workspace is a filesystem of its own (a ready one from the
 * pool when it has one of that size); under --sandbox none a plain,
 * unbounded directory; either in a directory a finished job left
 * (dir_bin.h) when there is one.  *ret_lock is held while the job runs, so a worker
 * starting on the same --work-dir leaves it be. */
int job_dir_make(const struct job_services *svc, const struct claimed_job *job,
                 const struct job_spec *spec, char **ret_dir, char **ret_ws, char **ret_scratch,
                 int *ret_lock, struct bc_error *err);
/* At the job's end: its workspace filesystem back to the pool, the rest
 * kept for a later job (dir_bin.h) or removed; takes lock (closed, or
 * kept with the directory). */
void job_dir_release(const struct job_services *svc, const char *dir, int lock);
/* Before job_dir_make: the disk the job's workspace (and an artifact's
 * packed tree) may take, from svc->disk (*ret stays NULL without one).
 * Waits up to --disk-wait for running jobs to give disk back, with a
 * "disk_wait" event; then -EAGAIN.  -ECANCELED when the slot is stopped,
 * -ESHUTDOWN when the worker drains meanwhile; -ENOSPC with err set when
 * the job is larger than the filesystem above its reserve, or still did
 * not fit with no job running when the wait was over. */
struct disk_grant;
int job_dir_take_disk(const struct job_services *svc, const struct claimed_job *job,
                      const struct job_spec *spec, int cancel_fd, const _Atomic int *stop,
                      struct disk_grant **ret, struct bc_error *err);

/* ---- artifact_base.c ---- */
struct store_artifact_start;
/* Restores spec's artifact base for the job in dir: an overlay over the
 * artifact cache mounted at ws when this worker can (ret->base then holds
 * the cache entry), else extracted into ws. */
int artifact_base_restore(const struct job_services *svc, const struct job_spec *spec,
                          const char *dir, const char *ws, struct store_artifact_start *ret,
                          struct bc_error *err);
/* Once the new version is packed from an overlay workspace, it is cached
 * too, built from the base's entry and the job's changes, so the session's
 * next job starts from the cache (best effort, logged).  That walks the
 * whole tree: it runs on a thread of its own while the version uploads,
 * not after it.  Zero-initialise, give it as on_packed's ctx
 * (artifact_base_on_packed), and wait for it after the upload. */
struct artifact_promote {
        const struct job_services *svc;
        const char *dir, *ws;
        const struct store_artifact_start *a;
        char sha256[65];
        pthread_t thread;
        bool running;
};
void artifact_base_on_packed(void *promote, const char *sha256);
void artifact_base_promote_wait(struct artifact_promote *p);
/* After the job: unmounts the overlay and releases the cache entry (a
 * no-op when the base was extracted or the artifact started empty). */
void artifact_base_release(const struct job_services *svc, const char *ws,
                           struct store_artifact_start *a);

/* ---- outcome.c ---- */
void job_outcome_set_error(struct job_outcome *o, enum bc_code code, const char *message);
/* A failure before or after the command: the infrastructure's (code
 * mapped to infra) are retried, the job's own are final. */
void job_outcome_fail(struct job_outcome *o, const struct bc_error *err, enum bc_code infra);
/* The result object of a run that happened; NULL on ENOMEM. */
cJSON *job_result_json(const struct backend_result *r);
/* The status, error and action of a run from its result and why it was
 * stopped (JOB_STOP_*). */
void job_outcome_decide(const struct job_spec *spec, const struct backend_result *r, int stop,
                        struct job_outcome *o);

#endif
