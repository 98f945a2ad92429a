/* Shared by the parts of one job's run (job.c, job_dir.c, artifact_base.c,
 * outcome.c); not part of the worker's API (job.h is). */
#ifndef BC_WORKER_JOB_JOB_INTERNAL_H
#define BC_WORKER_JOB_JOB_INTERNAL_H

#include <cjson/cJSON.h>

#include "common/error.h"
#include "worker/exec/backend.h"
#include "worker/job/job.h"
#include "worker/job/livelog.h"
#include "worker/job/progress_fifo.h"
#include "worker/job/services.h"
#include "worker/job/store.h"
#include "worker/spec/spec.h"

struct disk_grant;
struct job_secrets;

/* A job's progress channel (progress_fifo.h) and where its reports go
 * (job_progress.c). */
struct job_progress {
        struct progress_fifo fifo;
        char *inner_path; /* BOXCAR_PROGRESS: the FIFO as the job sees it */
        const struct job_services *svc;
        const struct claimed_job *job;
        const struct job_secrets *secrets; /* masked in every report, or NULL */
};

/* One run of a job, from its directory on: what its steps (job.c) fill
 * in and what the steps after them use. */
struct job_run {
        const struct job_services *svc;
        const struct claimed_job *job;
        const struct job_spec *spec;
        const char *dir;
        char *ws, *scratch, *meta;
        struct store_mounts mounts;
        struct storage_cache_entry *image; /* NULL: the host's system root */
        struct livelog log;
        bool started_noted; /* the "started" event is written */
        struct store_artifact_start artifact_start;
        struct disk_grant *disk; /* the work dir's disk it may take, or NULL */
        cJSON *result;
        /* A session's checkpoint: what the tree may hold (instead of the
         * spec's limits and the base's size), and where artifact_save puts
         * a copy of the version it saved (NULL: nowhere). */
        const struct storage_pack_limits *pack_limits;
        struct store_version *saved;
        const char *upper_override;         /* the session's overlay upper, or NULL */
        const struct job_secrets *secrets;  /* opened secrets to mask, or NULL */
        struct job_progress *progress;      /* the progress channel, or NULL: none */
        struct job_progress progress_store; /* where progress points, when it does */
};

/* ---- job_progress.c ---- */
/* A job's progress channel (progress_fifo.h) and where its reports go. */
/* Makes the FIFO host_dir/name, seen by the job as inner_dir/name.  On
 * failure (err set) nothing is left open. */
int job_progress_open(struct job_progress *jp, const struct job_services *svc,
                      const struct claimed_job *job, const struct job_secrets *secrets,
                      const char *host_dir, const char *inner_dir, const char *name,
                      struct bc_error *err);
/* On the job's timer ticks: what it wrote, read and maybe stored.
 * NULL-safe. */
void job_progress_poll(struct job_progress *jp);
/* After the job's command ended: the last report stored, the FIFO
 * removed.  NULL-safe, and safe twice. */
void job_progress_close(struct job_progress *jp);

/* ---- job.c ---- */
/* Image and volumes in (caches), artifact base into the workspace. */
int job_stage_inputs(struct job_run *run, struct bc_error *err);
/* The backend's job for argv in run (paths: room for its volumes' host
 * paths, which ret points to). */
void job_backend_job(struct job_run *run, char *const *argv, double timeout_s, int cancel_fd,
                     const char *paths[33], struct backend_job *ret);
/* Code mode run as a process: main's JSON return value (in the
 * workspace's CODE_RETURN_FILE) becomes res's return_value. */
void job_collect_return_value(struct job_run *run, cJSON *res, struct job_outcome *o);
/* What the run holds (its directory dir, locked by lock, both taken),
 * released later by job_leftovers_release (on the janitor's thread);
 * NULL when it could not be kept (out of memory): released already. */
void *job_leftovers_take(struct job_run *run, char *dir, int lock);
void job_leftovers_release(void *leftovers);
/* The job did not get its disk (job_dir_take_disk returned r): nothing
 * of it ran; o says what becomes of it. */
void job_disk_denied(int r, int stop, struct bc_error *err, struct job_outcome *o);

/* ---- session_job.c ---- */
/* A job of a session (spec->session.id): run inside the session's live
 * sandbox on this worker, started (or resumed from its last checkpoint)
 * when it is not live here; its end is the session's checkpoint. */
void session_job_execute(const struct job_services *svc, const struct claimed_job *job,
                         const struct job_spec *spec, const struct job_secrets *secrets,
                         int cancel_fd, const _Atomic int *stop, struct job_outcome *ret);

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
int job_dir_take_disk(const struct job_services *svc, const struct claimed_job *job,
                      const struct job_spec *spec, int cancel_fd, const _Atomic int *stop,
                      struct disk_grant **ret, struct bc_error *err);
/* boxcar's own files for the job in meta (the directory mounted at
 * BACKEND_META_DIR): its script and startup script, written to files and
 * run by path, never spliced into a command line. */
int job_dir_prepare_meta(const struct job_spec *spec, const char *meta, struct bc_error *err);
/* spec's workdir inside the workspace ws, made when missing (after the
 * artifact base is in place); a component that is not a directory is the
 * job's own error (BC_BAD_SPEC). */
int job_dir_make_workdir(const struct job_spec *spec, const char *ws, struct bc_error *err);

/* ---- artifact_base.c ---- */
/* Restores spec's artifact base for the job in dir: an overlay over the
 * artifact cache mounted at ws when this worker can (ret->base then holds
 * the cache entry), else extracted into ws. */
int artifact_base_restore(const struct job_services *svc, const struct job_spec *spec,
                          const char *queue, const char *dir, const char *ws,
                          struct store_artifact_start *ret, struct bc_error *err);
/* After the run: the workspace becomes the artifact's new version (packed
 * and uploaded), whatever the exit status; run->result gets "artifact",
 * o the version to record with the completion, or the upload's failure. */
void artifact_save(struct job_run *run, struct job_outcome *o);
/* After the job: unmounts the overlay and releases the cache entry, and
 * frees the base version's key (an extracted base has only that). */
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
