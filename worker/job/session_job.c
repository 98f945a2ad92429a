/* A job of a session: the session's live sandbox taken (or started here,
 * from the session's last checkpoint, when no worker holds it), the job
 * run inside it by the session's agent (session_dialogue.c), and the
 * workspace saved as the session's new version, recorded with the job's
 * end: a checkpoint that costs what the job changed (the layer is the
 * difference from the previous checkpoint). */
#include "worker/job/job-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/sandbox.h"
#include "worker/job/session_dialogue.h"
#include "worker/session/session.h"
#include "worker/workdir/dir_bin.h"
#include "worker/workdir/disk_budget.h"
#include "worker/workdir/janitor.h"

/* The scope of a queue, as boxcar.queue_scope: "a" for "a/x". */
static char *queue_scope(const char *queue)
{
        const char *slash = strchr(queue, '/');
        return slash ? strndup(queue, (size_t)(slash - queue)) : strdup(queue);
}

/* A start's failure: nothing of the job ran; the infrastructure's are
 * retried (maybe on another worker), the job's own are final. */
static void start_failed(struct job_outcome *o, struct bc_error *err, enum bc_code infra)
{
        job_outcome_fail(o, err, infra);
        bc_error_clear(err);
}

/* A home that never became a session's. */
static void release_home(struct session_home *h)
{
        if (h->release)
                janitor_run_later(h->release, h->resources);
        free(h->dir);
        free(h->ws);
        free(h->meta);
        free(h->upper);
}

/* The session's home made as a job's directory is (disk, directory,
 * inputs, workdir), then the sandbox started in it. */
static int start_session(const struct job_services *svc, const struct claimed_job *job,
                         const struct job_spec *spec, const char *scope, int cancel_fd,
                         const _Atomic int *stop, struct session **ret, struct job_outcome *o)
{
        struct bc_error err = BC_ERROR_INIT;
        /* The session's lease is written at once: the claim first. */
        if (svc->claim_wait && !svc->claim_wait(svc->ctx)) {
                o->action = JOB_DROP;
                return -ECANCELED;
        }
        struct disk_grant *disk = NULL;
        int r = job_dir_take_disk(svc, job, spec, cancel_fd, stop, &disk, &err);
        if (r < 0) {
                job_disk_denied(r, *stop, &err, o);
                return r;
        }
        _cleanup_free_ char *dir = NULL, *ws = NULL, *scratch = NULL;
        _cleanup_fd_ int lock = -1;
        if (job_dir_make(svc, job, spec, &dir, &ws, &scratch, &lock, &err) < 0) {
                start_failed(o, &err, BC_SANDBOX_SETUP);
                if (dir)
                        sandbox_workspace_remove_dir(dir);
                disk_budget_give_back(svc->disk, disk);
                return -EIO;
        }
        struct job_run run = { .svc = svc,
                               .job = job,
                               .spec = spec,
                               .dir = dir,
                               .ws = steal_pointer(&ws),
                               .scratch = steal_pointer(&scratch),
                               .disk = disk };
        struct session_home home = { 0 };
        r = asprintf(&run.meta, "%s/" JOB_DIR_META, run.dir) < 0 ? -ENOMEM : 0;
        if (r < 0)
                run.meta = NULL;
        enum bc_code infra = BC_SANDBOX_SETUP;
        if (r >= 0)
                r = job_dir_prepare_meta(spec, run.meta, &err);
        /* A kept directory's progress FIFO, made ahead (dir_bin.h), is for
         * one job: each of a session's jobs gets a channel of its own. */
        char fifo[PATH_MAX];
        if (r >= 0 &&
            snprintf(fifo, sizeof(fifo), "%s/" JOB_DIR_PROGRESS, run.meta) < (int)sizeof(fifo))
                (void)unlink(fifo);
        if (r >= 0 && (r = job_stage_inputs(&run, &err)) < 0)
                infra = BC_FETCH_FAILED;
        if (r >= 0)
                r = job_dir_make_workdir(spec, run.ws, &err);
        if (r >= 0) {
                home.dir = strdup(run.dir);
                home.ws = strdup(run.ws);
                home.meta = strdup(run.meta);
                if (run.artifact_start.base &&
                    asprintf(&home.upper, "%s/fs/scratch/overlay/upper", run.dir) < 0)
                        home.upper = NULL;
                home.base_entry = run.artifact_start.base;
                home.checkpoint = run.artifact_start.base_sha[0] ? &run.artifact_start.base_version
                                                                 : NULL;
                home.pack_max_bytes = spec->limits.disk_mb << 20;
                home.pack_max_entries = spec->limits.files;
                if (run.artifact_start.base) {
                        uint64_t bytes = 0, entries = 0;
                        storage_cache_entry_stats(run.artifact_start.base, &bytes, &entries);
                        home.pack_max_bytes += bytes;
                        home.pack_max_entries += entries;
                }
                if (!home.dir || !home.ws || !home.meta)
                        r = bc_error_set(&err, BC_INTERNAL, ENOMEM, "out of memory");
        } else if (r == -ENOMEM && !err.message) {
                bc_error_set(&err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        const char *paths[33];
        struct backend_job bj;
        job_backend_job(&run, NULL, 0, -1, paths, &bj);
        /* From here the session owns the directory and what it holds. */
        struct store_version checkpoint = { 0 };
        if (home.checkpoint) {
                checkpoint = *home.checkpoint;
                checkpoint.s3_key = home.checkpoint->s3_key ? strdup(home.checkpoint->s3_key)
                                                            : NULL;
                home.checkpoint = &checkpoint;
        }
        home.resources = job_leftovers_take(&run, steal_pointer(&dir), steal_fd(&lock));
        home.release = home.resources ? job_leftovers_release : NULL;
        free(run.meta);
        if (r >= 0)
                r = session_start(svc->sessions, scope, spec->session.id,
                                  spec->session.idle_timeout_s, job->spec_json, &home, &bj, ret,
                                  &err);
        else
                release_home(&home);
        free(run.scratch); /* the session keeps its own copy */
        store_version_done(&checkpoint);
        if (r < 0)
                start_failed(o, &err, infra);
        return r;
}

/* The session's count of jobs run (boxcar.sessions.jobs, last_job_at):
 * for the operators' view only, best effort. */
static void count_job(const struct job_services *svc, const char *scope, const char *id)
{
        struct bc_error err = BC_ERROR_INIT;
        const char *p[] = { scope, id };
        PQclear(svc->lookup(svc->ctx, "select boxcar.session_job_done($1, $2)", 2, p, &err));
        bc_error_clear(&err);
}

void session_job_execute(const struct job_services *svc, const struct claimed_job *job,
                         const struct job_spec *spec, const struct job_secrets *secrets,
                         int cancel_fd, const _Atomic int *stop, struct job_outcome *ret)
{
        struct bc_error err = BC_ERROR_INIT;
        if (svc->cfg->sandbox != BACKEND_NAMESPACE || !svc->sessions) {
                bc_error_set(&err, BC_BAD_SPEC, EINVAL,
                             svc->sessions ? "session: needs the isolating backend (this worker "
                                             "runs --sandbox none)"
                                           : "session: this worker holds no sessions "
                                             "(--max-sessions 0)");
                start_failed(ret, &err, BC_BAD_SPEC);
                return;
        }
        _cleanup_free_ char *scope = queue_scope(job->queue);
        if (!scope) {
                bc_error_set(&err, BC_INTERNAL, ENOMEM, "out of memory");
                start_failed(ret, &err, BC_SANDBOX_SETUP);
                return;
        }
        struct session *sess = NULL;
        if (session_take(svc->sessions, scope, spec->session.id, &sess) == 0 &&
            start_session(svc, job, spec, scope, cancel_fd, stop, &sess, ret) < 0)
                return;
        session_set_idle_timeout(sess, spec->session.idle_timeout_s);
        bool broken = session_dialogue_run(svc, job, spec, secrets, sess, cancel_fd, stop, ret);
        session_put(sess, broken);
        if (ret->action == JOB_COMPLETE)
                count_job(svc, scope, spec->session.id);
}
