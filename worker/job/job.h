/* One claimed job, run from start to finish on a slot thread: parse the
 * spec, prepare its directory, run it, and decide what to tell the
 * database (complete, retry, release or nothing). */
#ifndef BC_WORKER_JOB_JOB_H
#define BC_WORKER_JOB_JOB_H

#include <stdatomic.h>

#include <libpq-fe.h>

#include "worker/config/config.h"

struct job_services;

struct claimed_job {
        char id[40];
        char *queue;
        int attempt; /* attempts after this claim */
        int max_attempts;
        double pickup_s; /* from due (run_at) to claim */
        char *spec_json;
        /* The last live-output chunk already stored under this attempt: a
         * run handed back by a drain runs again under the same attempt,
         * and its output goes on after the first run's. */
        int log_seq;
        /* The bytes of live output stored under this attempt so far (by
         * such earlier runs): --max-log-bytes caps them all together. */
        uint64_t log_bytes;
        /* Whether the claim committed (claim_gate.h), shared with the other
         * jobs of the claim; NULL: it had when the rows came. */
        struct claim_gate *gate;
};

/* Frees job and drops its reference to its claim's gate. */
void claimed_job_free(struct claimed_job *job);

/* Why a running job is being stopped from outside. */
enum job_stop {
        JOB_STOP_NONE = 0,
        JOB_STOP_CANCEL, /* boxcar.cancel(): finish as cancelled */
        JOB_STOP_DRAIN,  /* worker shutting down: hand the job back */
        JOB_STOP_LOST,   /* lease lost: someone else owns it now */
};

enum job_action {
        JOB_COMPLETE, /* complete(status, result, error) */
        JOB_RETRY,    /* retry_or_fail(error, result) */
        JOB_RELEASE,  /* release(): not the job's fault, not counted */
        JOB_DROP,     /* nothing: the worker no longer holds it */
};

struct job_outcome {
        enum job_action action;
        const char *status; /* for JOB_COMPLETE: "succeeded", "failed", "cancelled" */
        char *result_json;  /* or NULL */
        char *error_json;   /* {"code", "message"} or NULL */
        char *error_code;   /* copy of the code, for logs; or NULL */
        double duration_s;  /* the command's wall time; -1 when it did not run */
        /* Its result must be recorded in a call of its own: it has an
         * artifact storage, whose lock finishing takes (or its spec could
         * not be read to tell). */
        bool report_alone;
        /* For JOB_COMPLETE: the artifact version the job uploaded, to be
         * recorded with its completion (boxcar.record_job_artifact); or NULL. */
        char *artifact_json;
        /* The job's last output, not yet stored, to be written with its
         * result (livelog_take); or NULL. */
        char *logs_json;
};

void job_outcome_done(struct job_outcome *o);

/* At worker start: unmounts and removes what a killed worker left under
 * work_dir/jobs (job directories whose lock no live process holds). */
void job_dirs_cleanup(const char *work_dir);

/* Runs job, reaching the rest of the worker only through svc
 * (services.h).  cancel_fd becomes readable when *stop is set.  Always
 * fills *ret (infrastructure failures become JOB_RETRY). */
void job_execute(const struct job_services *svc, const struct claimed_job *job, int cancel_fd,
                 const _Atomic int *stop, struct job_outcome *ret);

#endif
