/* A job's progress channel (progress_fifo.h) tied to its services: the
 * reports it keeps are masked (the job's secrets) and stored with
 * report_progress, its warnings are the job's events. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/json_strict.h"
#include "worker/job/job-internal.h"
#include "worker/job/job_secrets.h"
#include "worker/job/services.h"

static int store(void *ctx, const char *json, struct bc_error *err)
{
        struct job_progress *jp = ctx;
        if (!jp->svc->report_progress)
                return 0;
        _cleanup_free_ char *masked = job_secrets_masked(jp->secrets, json);
        if (!masked)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        /* A value masked across the JSON's own syntax: the report is
         * dropped rather than stored unmasked. */
        const char *problem = NULL;
        if (strcmp(masked, json) != 0 &&
            json_strict_check(masked, strlen(masked), PROGRESS_MAX_DEPTH, &problem) < 0) {
                jp->svc->event(jp->svc->ctx, jp->job, "progress_refused",
                               "{\"reason\": \"secret\", \"message\": \"a report with a secret's "
                               "value that could not be masked was dropped\"}");
                return 0;
        }
        return jp->svc->report_progress(jp->svc->ctx, jp->job, masked, err);
}

static void warn(void *ctx, const char *kind, const char *details_json)
{
        struct job_progress *jp = ctx;
        jp->svc->event(jp->svc->ctx, jp->job, kind, details_json);
}

int job_progress_open(struct job_progress *jp, const struct job_services *svc,
                      const struct claimed_job *job, const struct job_secrets *secrets,
                      const char *host_dir, const char *inner_dir, const char *name,
                      struct bc_error *err)
{
        memset(jp, 0, sizeof(*jp));
        jp->svc = svc;
        jp->job = job;
        jp->secrets = secrets;
        int r = progress_fifo_open(host_dir, name, &jp->fifo, err);
        progress_init(&jp->fifo.p, store, warn, jp);
        if (r >= 0 && asprintf(&jp->inner_path, "%s/%s", inner_dir, name) < 0) {
                jp->inner_path = NULL;
                r = bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        }
        if (r < 0)
                job_progress_close(jp);
        return r;
}

void job_progress_poll(struct job_progress *jp)
{
        if (jp)
                progress_fifo_poll(&jp->fifo, bc_mono_ms());
}

void job_progress_close(struct job_progress *jp)
{
        if (!jp)
                return;
        progress_fifo_close(&jp->fifo, bc_mono_ms());
        free(jp->inner_path);
        jp->inner_path = NULL;
}
