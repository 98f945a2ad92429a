/* One job's run on its slot's thread, top-down (job_execute): its spec
 * read and checked, its disk and directory taken, then the steps of
 * run_job, each failing into fail_with(); what it leaves is released on
 * the janitor's thread.  The rest of the worker is reached only through
 * the job's services (services.h). */
#include "worker/job/job.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/io.h"
#include "common/utf8.h"
#include "sandbox/sandbox.h"
#include "worker/metrics/wmetrics.h"
#include "worker/job/code.h"
#include "worker/workdir/dir_bin.h"
#include "worker/workdir/disk_budget.h"
#include "worker/job/job-internal.h"
#include "worker/job/job_secrets.h"
#include "worker/workdir/janitor.h"
#include "worker/job/livelog.h"
#include "worker/job/services.h"
#include "worker/job/store.h"
#include "worker/workdir/wsfile.h"

BC_DEFINE_CLEANUP(struct job_spec *, spec_free)
BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

/* The features the plain-process backend does not provide yet are refused
 * rather than silently ignored; so is a network the queue may not have.
 * The message goes into buf. */
static const char *unsupported_feature(const struct worker_config *cfg,
                                       const struct job_spec *spec, const char *queue, char *buf,
                                       size_t size)
{
        if (spec->session.id && spec->startup_script)
                return "startup_script: not with a session (make it the session's first job)";
        if (spec->n_volumes && cfg->sandbox == BACKEND_NONE)
                return "volumes: need the isolating backend (this worker runs --sandbox none)";
        if (spec->image_storage && cfg->sandbox == BACKEND_NONE)
                return "image: needs the isolating backend (this worker runs --sandbox none)";
        if (spec->network_host && cfg->sandbox == BACKEND_NAMESPACE &&
            !config_queue_allows_host_network(cfg, queue))
                return "network: \"host\" is not allowed for this queue on this worker "
                       "(see boxcar worker --allow-host-network)";
        if (spec->n_net_allow) {
                ssize_t i = config_network_uncovered(cfg, queue, spec->net_allow,
                                                     spec->n_net_allow);
                if (i >= 0) {
                        char rule[NETALLOW_NAME_MAX + 32];
                        netallow_format(&spec->net_allow[i], rule, sizeof(rule));
                        snprintf(buf, size,
                                 "network.allow[%zd]: \"%s\" is not allowed for this queue on "
                                 "this worker (see boxcar worker --network-allow)",
                                 i, rule);
                        return buf;
                }
                /* Plain processes have the host's network: nothing to
                 * enforce the rules with. */
                if (cfg->sandbox == BACKEND_NONE)
                        return "network.allow: needs the isolating backend (this worker runs "
                               "--sandbox none)";
        }
        return NULL;
}

/* A spec asking for what this worker does not offer is the job's own
 * error, never retried. */
static int check_supported(const struct worker_config *cfg, const struct claimed_job *job,
                           const struct job_spec *spec, struct bc_error *err)
{
        char why[NETALLOW_NAME_MAX + 256];
        const char *unsupported = unsupported_feature(cfg, spec, job->queue, why, sizeof(why));
        if (unsupported)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "%s", unsupported);
        return 0;
}

/* A step's failure: the outcome says it (job_outcome_fail: the
 * infrastructure's, under infra, are retried, the job's own are final),
 * and err is cleared for the next. */
static void fail_with(struct job_outcome *o, struct bc_error *err, enum bc_code infra)
{
        job_outcome_fail(o, err, infra);
        bc_error_clear(err);
}

/* The job's image from the image cache, timed on a miss. */
static int stage_image(struct job_run *run, struct bc_error *err)
{
        struct store *st = run->svc->store;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int r = store_acquire_image(run->svc, run->spec, run->job->queue, &run->image, err);
        if (r < 0 || !run->image)
                return r;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        bool hit = !storage_cache_entry_downloaded(run->image);
        uint64_t n = 0, bytes = 0;
        storage_cache_stats(st->images, &n, &bytes);
        wmetrics_image(run->svc->metrics, hit,
                       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
                       n, bytes);
        if (!hit)
                wmetrics_transfer(run->svc->metrics, "download", "image",
                                  storage_cache_entry_downloaded_bytes(run->image));
        return 0;
}

/* Image and volumes in (caches), artifact base into the workspace. */
int job_stage_inputs(struct job_run *run, struct bc_error *err)
{
        const struct job_spec *spec = run->spec;
        int r = stage_image(run, err);
        if (r >= 0)
                r = store_acquire_volumes(run->svc, spec, run->job->queue, &run->mounts, err);
        for (size_t i = 0; r >= 0 && i < run->mounts.n; i++) {
                const struct storage_cache_entry *e = run->mounts.entries[i];
                wmetrics_cache(run->svc->metrics, !storage_cache_entry_downloaded(e));
                if (storage_cache_entry_downloaded(e))
                        wmetrics_transfer(run->svc->metrics, "download", "volume",
                                          storage_cache_entry_downloaded_bytes(e));
        }
        if (r >= 0)
                r = artifact_base_restore(run->svc, spec, run->job->queue, run->dir, run->ws,
                                          &run->artifact_start, err);
        /* Over an overlay, the packed tree holds the base besides the
         * job's changes (see artifact_save). */
        if (r >= 0 && run->artifact_start.base) {
                uint64_t bytes = 0, entries = 0;
                storage_cache_entry_stats(run->artifact_start.base, &bytes, &entries);
                disk_budget_add(run->svc->disk, run->disk, bytes);
        }
        return r;
}

/* The command's output and timer ticks (backend_job.on_output): its start
 * noted once, its output to the live log.  The backend calls this only
 * once the claim was answered (backend_wait_claim); what the job's
 * services write waits for a committed claim anyway. */
static void on_output(void *ctx, int stream, const char *data, size_t len)
{
        struct job_run *run = ctx;
        const struct job_services *svc = run->svc;
        if (!run->started_noted) {
                run->started_noted = true;
                char details[64];
                snprintf(details, sizeof(details), "{\"sandbox\": \"%s\"}",
                         backend_name(svc->backend));
                svc->event(svc->ctx, run->job, "started", details);
        }
        livelog_write(&run->log, stream, data, len);
        job_progress_poll(run->progress);
        if (svc->tick)
                svc->tick(svc->ctx);
}

void job_backend_job(struct job_run *run, char *const *argv, double timeout_s, int cancel_fd,
                     const char *paths[33], struct backend_job *ret)
{
        const struct job_services *svc = run->svc;
        for (size_t i = 0; i < 33; i++)
                paths[i] = i < run->mounts.n && i < 32 ? store_mount_path(&run->mounts, i) : NULL;
        *ret = (struct backend_job){
                .spec = run->spec,
                .queue = run->job->queue,
                .argv = argv,
                .timeout_s = timeout_s,
                .workspace = run->ws,
                .scratch = run->scratch,
                .meta_dir = run->meta,
                .volume_paths = paths,
                .image_path = run->image ? storage_cache_entry_path(run->image) : NULL,
                .image_sha = run->image ? storage_cache_entry_sha256(run->image) : NULL,
                .cancel_fd = cancel_fd,
                .progress_path = run->progress ? run->progress->inner_path : NULL,
                .on_output = on_output,
                .output_ctx = run,
                .claim_wait = svc->claim_wait,
                .claim_ctx = svc->ctx,
                .claim_fd = svc->claim_fd
        };
}

static int run_inner(struct job_run *run, char *const *argv, double timeout_s, int cancel_fd,
                     struct backend_result *res, struct bc_error *err)
{
        const struct job_services *svc = run->svc;
        const char *paths[33];
        struct backend_job bj;
        job_backend_job(run, argv, timeout_s, cancel_fd, paths, &bj);
        int r = backend_run(svc->backend, &bj, res, err);
        job_secrets_mask_tail(run->secrets, &res->proc.out);
        job_secrets_mask_tail(run->secrets, &res->proc.err);
        if (r >= 0 && strcmp(res->backend, "namespace") == 0)
                wmetrics_sandbox_overhead(svc->metrics, (double)res->overhead_ms / 1000);
        return r;
}

/* network.allow: the proxy's counts to /metrics, and the refused attempts
 * to the job's events (the first few distinct ones by name, all counted). */
static void note_egress(struct job_run *run, const struct backend_result *res)
{
        wmetrics_egress(run->svc->metrics, res->net_bytes_out, res->net_bytes_in,
                        res->net_connections, res->net_refused);
        if (!res->net_refused)
                return;
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "count", (double)res->net_refused);
        cJSON *list = cJSON_AddArrayToObject(d, "targets");
        for (size_t i = 0; i < res->n_net_refused_list; i++) {
                _cleanup_free_ char *t = utf8_sanitize(res->net_refused_list[i],
                                                       strlen(res->net_refused_list[i]));
                cJSON_AddItemToArray(list, cJSON_CreateString(t ? t : "?"));
        }
        _cleanup_free_ char *json = cJSON_PrintUnformatted(d);
        cJSON_Delete(d);
        if (json)
                run->svc->event(run->svc->ctx, run->job, "network_refused", json);
}

static void inner_paths(const struct job_run *run, const char **ret_ws, const char **ret_meta)
{
        struct backend_job bj = { .workspace = run->ws, .meta_dir = run->meta };
        backend_inner_paths(run->svc->backend, &bj, ret_ws, ret_meta);
}

#define STATE_FILE ".boxcar/state.json"

/* The startup script already ran successfully on this workspace, in this
 * exact version (FastGPT's rule: skip it while unchanged). */
static bool startup_done_before(const char *ws, const char *sha)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct bc_error err = BC_ERROR_INIT;
        int r = wsfile_read(ws, STATE_FILE, 65536, &text, &len, &err);
        bc_error_clear(&err);
        if (r <= 0)
                return false;
        _cleanup_(cJSON_Deletep) cJSON *state = cJSON_ParseWithLength(text, len);
        const cJSON *done = cJSON_GetObjectItemCaseSensitive(state, "startup_sha256");
        return cJSON_IsString(done) && strcmp(done->valuestring, sha) == 0;
}

static void record_startup(const char *ws, const char *sha)
{
        char text[128];
        snprintf(text, sizeof(text), "{\"startup_sha256\": \"%s\"}\n", sha);
        struct bc_error err = BC_ERROR_INIT;
        wsfile_write(ws, STATE_FILE, text, &err);
        bc_error_clear(&err);
}

/* Runs spec.startup_script (own timeout; its failure does not stop the
 * job).  Returns 1 when the job must not go on (cancelled, worker stopping),
 * 0 to go on, negative when the sandbox failed. */
static int run_startup(struct job_run *run, int cancel_fd, const _Atomic int *stop,
                       struct job_outcome *o, struct bc_error *err)
{
        const struct job_spec *spec = run->spec;
        if (!spec->startup_script)
                return 0;
        char sha[65];
        bc_sha256_hex(spec->startup_script, strlen(spec->startup_script), sha);
        cJSON *startup = cJSON_AddObjectToObject(run->result, "startup");
        cJSON_AddStringToObject(startup, "sha256", sha);
        if (startup_done_before(run->ws, sha)) {
                cJSON_AddBoolToObject(startup, "skipped", true);
                run->svc->event(run->svc->ctx, run->job, "startup_done", "{\"skipped\": true}");
                return 0;
        }
        const char *ws, *meta;
        inner_paths(run, &ws, &meta);
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/startup.sh", meta) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        char *argv[] = { "/bin/sh", path, NULL };
        struct backend_result res;
        int r = run_inner(run, argv, spec->startup_timeout_s, cancel_fd, &res, err);
        livelog_flush(&run->log);
        if (r >= 0) {
                cJSON *out = job_result_json(&res);
                cJSON_AddBoolToObject(out, "skipped", false);
                cJSON_AddStringToObject(out, "sha256", sha);
                cJSON_ReplaceItemInObjectCaseSensitive(run->result, "startup", out);
                bool ok = res.proc.exit_code == 0 && !res.proc.timed_out;
                if (ok)
                        record_startup(run->ws, sha);
                char details[96];
                snprintf(details, sizeof(details),
                         "{\"skipped\": false, \"exit_code\": %d, \"timed_out\": %s}",
                         res.proc.exit_code, res.proc.timed_out ? "true" : "false");
                run->svc->event(run->svc->ctx, run->job, "startup_done", details);
                if (res.proc.cancelled || *stop != JOB_STOP_NONE) {
                        job_outcome_decide(spec, &res, *stop, o);
                        r = 1;
                }
        }
        backend_result_done(&res);
        return r;
}

/* Code mode: main's JSON return value becomes result.return_value; a file
 * that is not JSON fails the job as the wrappers do for Python and Node. */
void job_collect_return_value(struct job_run *run, cJSON *res, struct job_outcome *o)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct bc_error err = BC_ERROR_INIT;
        int r = wsfile_read(run->ws, CODE_RETURN_FILE, CODE_RETURN_MAX, &text, &len, &err);
        wsfile_remove(run->ws, CODE_RETURN_FILE, &err);
        bc_error_clear(&err);
        if (r <= 0 || o->action != JOB_COMPLETE || strcmp(o->status, "succeeded") != 0) {
                cJSON_AddNullToObject(res, "return_value");
                return;
        }
        size_t start = strspn(text, " \t\r\n");
        cJSON *value = start == len ? cJSON_CreateNull() : cJSON_ParseWithLength(text, len);
        if (!value) {
                cJSON_AddNullToObject(res, "return_value");
                o->status = "failed";
                job_outcome_set_error(o, BC_NONZERO_EXIT,
                                      "main() returned a value that is not JSON");
                return;
        }
        cJSON_AddItemToObject(res, "return_value", value);
}

static int run_command(struct job_run *run, int cancel_fd, const _Atomic int *stop,
                       struct job_outcome *o, struct bc_error *err)
{
        const struct job_spec *spec = run->spec;
        run->result = cJSON_CreateObject();
        if (!run->result)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        int r = run_startup(run, cancel_fd, stop, o, err);
        if (r != 0)
                return r < 0 ? r : 0;
        const char *ws, *meta;
        inner_paths(run, &ws, &meta);
        char **argv = NULL;
        _cleanup_free_ char *script = NULL;
        char *script_argv[] = { "/bin/sh", NULL, NULL };
        if (spec->mode == SPEC_CODE) {
                r = code_prepare(spec, run->meta, meta, ws, &argv, err);
                if (r < 0)
                        return r;
        } else if (spec->mode == SPEC_SCRIPT) {
                if (asprintf(&script, "%s/script.sh", meta) < 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
                script_argv[1] = script;
        }
        struct backend_result res;
        r = run_inner(run,
                      argv                        ? argv
                      : spec->mode == SPEC_SCRIPT ? script_argv
                                                  : spec->argv,
                      spec->limits.timeout_s, cancel_fd, &res, err);
        backend_strv_free(argv);
        if (r >= 0) {
                cJSON *main_res = job_result_json(&res);
                job_outcome_decide(spec, &res, *stop, o);
                o->duration_s = (double)res.proc.wall_ms / 1000;
                if (spec->mode == SPEC_CODE)
                        job_collect_return_value(run, main_res, o);
                /* The main run's fields at the top level, the startup's beside them. */
                cJSON *startup = cJSON_DetachItemFromObjectCaseSensitive(run->result, "startup");
                cJSON_Delete(run->result);
                run->result = main_res;
                if (startup)
                        cJSON_AddItemToObject(run->result, "startup", startup);
                char details[128];
                snprintf(details, sizeof(details),
                         "{\"exit_code\": %d, \"signal\": %d, "
                         "\"timed_out\": %s, \"oom_killed\": %s}",
                         res.proc.exit_code, res.proc.signal,
                         res.proc.timed_out ? "true" : "false", res.oom_killed ? "true" : "false");
                if (res.has_network)
                        note_egress(run, &res);
                run->svc->event(run->svc->ctx, run->job, "exited", details);
        }
        backend_result_done(&res);
        return r;
}

/* The progress channel, in the job's meta directory (progress_fifo.h). */
static int open_progress(struct job_run *run, struct bc_error *err)
{
        const char *ws, *meta;
        inner_paths(run, &ws, &meta);
        int r = job_progress_open(&run->progress_store, run->svc, run->job, run->secrets,
                                  run->meta, meta, JOB_DIR_PROGRESS, err);
        if (r >= 0)
                run->progress = &run->progress_store;
        return r;
}

/* The job's steps once its directory is there, in order. */
static void run_job(struct job_run *run, int cancel_fd, const _Atomic int *stop,
                    struct job_outcome *o)
{
        struct bc_error err = BC_ERROR_INIT;
        if (asprintf(&run->meta, "%s/" JOB_DIR_META, run->dir) < 0) {
                run->meta = NULL;
                bc_error_set(&err, BC_INTERNAL, ENOMEM, "out of memory");
                fail_with(o, &err, BC_SANDBOX_SETUP);
        } else if (job_dir_prepare_meta(run->spec, run->meta, &err) < 0) {
                fail_with(o, &err, BC_SANDBOX_SETUP);
        } else if (job_stage_inputs(run, &err) < 0) {
                fail_with(o, &err, BC_FETCH_FAILED);
        } else if (job_dir_make_workdir(run->spec, run->ws, &err) < 0) {
                /* After the base: an overlay would hide it. */
                fail_with(o, &err, BC_SANDBOX_SETUP);
        } else if (open_progress(run, &err) < 0) {
                fail_with(o, &err, BC_SANDBOX_SETUP);
        } else if (run_command(run, cancel_fd, stop, o, &err) < 0) {
                job_progress_close(run->progress);
                fail_with(o, &err, BC_SANDBOX_SETUP);
        } else {
                /* The last report before the job's result. */
                job_progress_close(run->progress);
                /* An upload may take a while: the output is stored first. */
                if (run->spec->artifact_storage)
                        livelog_flush(&run->log);
                artifact_save(run, o);
        }
        if (*stop == JOB_STOP_LOST)
                o->action = JOB_DROP;
        if (run->result) {
                free(o->result_json);
                o->result_json = cJSON_PrintUnformatted(run->result);
        }
}

/* What a job leaves once its result is known: its overlay and workspace
 * mounted, cache entries held, its directory locked.  Released on the
 * janitor's thread, so the slot's result is recorded without waiting for
 * unmounts whose cost grows with what the job touched. */
struct job_leftovers {
        /* A copy: the slot's goes with the slot's turn.  Only its
         * worker-wide parts (store, pools, disk) are used there, never
         * ctx's callbacks or the backend. */
        struct job_services svc;
        char *dir, *ws;
        int lock; /* held until the directory is gone */
        struct store_mounts mounts;
        struct storage_cache_entry *image;
        struct store_artifact_start artifact_start;
        struct disk_grant *disk; /* given back once the directory is gone */
        bool heap;
};

void job_leftovers_release(void *arg)
{
        struct job_leftovers *l = arg;
        const struct job_services *svc = &l->svc;
        artifact_base_release(svc, l->ws, &l->artifact_start);
        store_release_volumes(svc->store, &l->mounts);
        storage_cache_release(svc->store->images, l->image);
        job_dir_release(svc, l->dir, l->lock);
        disk_budget_give_back(svc->disk, l->disk);
        free(l->ws);
        free(l->dir);
        if (l->heap)
                free(l);
}

/* What the run holds (its directory dir, locked by lock, both taken), to
 * be released later with job_leftovers_release (NULL: released now, out
 * of memory). */
void *job_leftovers_take(struct job_run *run, char *dir, int lock)
{
        struct job_leftovers here = { .svc = *run->svc,
                                      .dir = dir,
                                      .ws = run->ws,
                                      .lock = lock,
                                      .mounts = run->mounts,
                                      .image = run->image,
                                      .artifact_start = run->artifact_start,
                                      .disk = run->disk };
        struct job_leftovers *l = malloc(sizeof(*l));
        if (!l) {
                job_leftovers_release(&here);
                return NULL;
        }
        *l = here;
        l->heap = true;
        return l;
}

static void leave(struct job_run *run, char *dir, int lock)
{
        void *l = job_leftovers_take(run, dir, lock);
        if (l)
                janitor_run_later(job_leftovers_release, l);
}

void job_disk_denied(int r, int stop, struct bc_error *err, struct job_outcome *o)
{
        if (r == -EAGAIN || r == -ESHUTDOWN) {
                o->action = JOB_RELEASE; /* another worker may have the room */
        } else if (r != -ECANCELED) {
                job_outcome_fail(o, err, BC_SANDBOX_SETUP);
        } else if (stop == JOB_STOP_CANCEL) {
                o->action = JOB_COMPLETE;
                o->status = "cancelled";
                job_outcome_set_error(o, BC_CANCELLED, "cancelled while it waited for disk");
        } else {
                o->action = stop == JOB_STOP_DRAIN ? JOB_RELEASE : JOB_DROP;
        }
        bc_error_clear(err);
}

void job_execute(const struct job_services *svc, const struct claimed_job *job, int cancel_fd,
                 const _Atomic int *stop, struct job_outcome *ret)
{
        memset(ret, 0, sizeof(*ret));
        ret->duration_s = -1;
        ret->report_alone = true;
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(spec_freep) struct job_spec *spec = NULL;
        /* A bad spec never reaches a process and is never retried. */
        if (spec_parse(job->spec_json, strlen(job->spec_json), &spec, &err) < 0) {
                fail_with(ret, &err, BC_BAD_SPEC);
                return;
        }
        ret->report_alone = spec->artifact_storage != NULL;
        if (check_supported(svc->cfg, job, spec, &err) < 0) {
                fail_with(ret, &err, BC_BAD_SPEC);
                return;
        }
        _cleanup_(job_secrets_done) struct job_secrets secrets = { 0 };
        if (job_secrets_open(svc->secret_keys, spec, job->queue, &secrets, &err) < 0) {
                fail_with(ret, &err, BC_SECRET_UNAVAILABLE);
                return;
        }
        if (spec->session.id) {
                session_job_execute(svc, job, spec, &secrets, cancel_fd, stop, ret);
                job_secrets_mask_outcome(&secrets, ret);
                return;
        }
        struct disk_grant *disk = NULL;
        int r = job_dir_take_disk(svc, job, spec, cancel_fd, stop, &disk, &err);
        if (r < 0) {
                job_disk_denied(r, *stop, &err, ret);
                return;
        }
        _cleanup_free_ char *dir = NULL, *ws = NULL, *scratch = NULL;
        _cleanup_fd_ int lock = -1;
        if (job_dir_make(svc, job, spec, &dir, &ws, &scratch, &lock, &err) < 0) {
                fail_with(ret, &err, BC_SANDBOX_SETUP);
                if (dir)
                        sandbox_workspace_remove_dir(dir);
                disk_budget_give_back(svc->disk, disk);
                return;
        }
        struct job_run run = { .svc = svc,
                               .job = job,
                               .spec = spec,
                               .dir = dir,
                               .ws = steal_pointer(&ws),
                               .scratch = steal_pointer(&scratch),
                               .disk = disk,
                               .secrets = &secrets };
        livelog_init(&run.log, job->id, job->attempt, job->log_seq + 1, job->log_bytes,
                     svc->cfg->max_log_bytes, svc->append_logs, svc->ctx);
        livelog_set_masks(&run.log, secrets.live[0], secrets.live[1]);
        run_job(&run, cancel_fd, stop, ret);
        /* The last output goes with a completion or a retry.  A lost job's
         * result is not recorded; a released run stores its own below
         * (livelog_done). */
        if (ret->action == JOB_COMPLETE || ret->action == JOB_RETRY)
                ret->logs_json = livelog_take(&run.log);
        livelog_done(&run.log);
        job_secrets_mask_outcome(&secrets, ret);
        cJSON_Delete(run.result);
        free(run.scratch);
        free(run.meta);
        leave(&run, steal_pointer(&dir), steal_fd(&lock));
}
