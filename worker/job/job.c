#include "worker/job/job.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/io.h"
#include "common/utf8.h"
#include "sandbox/sandbox.h"
#include "worker/job/backend.h"
#include "worker/job/code.h"
#include "worker/job/livelog.h"
#include "worker/warm/ws_pool.h"
#include "worker/job/wsfile.h"
#include "worker/http/wmetrics.h"
#include "worker/job/spec.h"
#include "worker/job/store.h"

BC_DEFINE_CLEANUP(struct job_spec *, spec_free)
BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

void claimed_job_free(struct claimed_job *job)
{
        if (!job)
                return;
        free(job->queue);
        free(job->spec_json);
        free(job);
}

void job_outcome_done(struct job_outcome *o)
{
        if (!o)
                return;
        free(o->result_json);
        free(o->error_json);
        free(o->error_code);
        memset(o, 0, sizeof(*o));
}

static void set_error(struct job_outcome *o, enum bc_code code, const char *message)
{
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "code", bc_code_name(code));
        cJSON_AddStringToObject(e, "message", message);
        free(o->error_json);
        free(o->error_code);
        o->error_json = cJSON_PrintUnformatted(e);
        o->error_code = strdup(bc_code_name(code));
        cJSON_Delete(e);
}

/* At the job's end: its workspace filesystem goes back to the pool (to be
 * wiped or discarded there, off this slot's path), the rest is removed.
 * The mount table is read only when a filesystem may still be mounted
 * there (the namespace backend, not taken back by the pool). */
static void release_job_dir(const struct job_services *svc, const char *dir)
{
        _cleanup_free_ char *img = NULL, *fs = NULL;
        bool mounted = svc->cfg->sandbox == BACKEND_NAMESPACE;
        if (mounted && svc->ws_pool && asprintf(&img, "%s/ws.img", dir) >= 0 &&
            asprintf(&fs, "%s/fs", dir) >= 0)
                mounted = !ws_pool_release(svc->ws_pool, img, fs);
        if (mounted)
                sandbox_workspace_remove_dir(dir);
        else
                sandbox_workspace_remove_tree(dir);
}

void job_dirs_cleanup(const char *work_dir)
{
        _cleanup_free_ char *jobs = NULL;
        if (asprintf(&jobs, "%s/jobs", work_dir) >= 0)
                bc_remove_unlocked_dirs(jobs, sandbox_workspace_remove_dir);
}

/* The job's directory: meta/, and its workspace.  Under the namespace
 * backend the workspace is a filesystem of its own (ws.img mounted at fs/,
 * see sandbox_workspace_make): fs/ws is /workspace, fs/scratch holds /tmp
 * and /dev/shm, all within limits.disk_mb and limits.files; a ready one
 * from the pool when it has one of that size (see ws_pool.h).  Under
 * --sandbox none it is a plain, unbounded directory.  lock is held while
 * the job runs, so a worker starting on the same --work-dir leaves it be. */
static int make_job_dir(const struct job_services *svc, const struct claimed_job *job,
                        const struct job_spec *spec, char **ret_dir, char **ret_ws,
                        char **ret_scratch, int *ret_lock, struct bc_error *err)
{
        const struct worker_config *cfg = svc->cfg;
        _cleanup_free_ char *dir = NULL, *ws = NULL, *img = NULL, *fs = NULL, *sc = NULL,
                           *lock = NULL;
        bool bounded = cfg->sandbox == BACKEND_NAMESPACE;
        if (asprintf(&dir, "%s/jobs/%s.%d", cfg->work_dir, job->id, job->attempt) < 0 ||
            asprintf(&lock, "%s/lock", dir) < 0 || asprintf(&img, "%s/ws.img", dir) < 0 ||
            asprintf(&fs, "%s/fs", dir) < 0 ||
            asprintf(&ws, bounded ? "%s/fs/ws" : "%s/workspace", dir) < 0 ||
            (bounded && asprintf(&sc, "%s/fs/scratch", dir) < 0))
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        /* A leftover from a crashed run of this attempt (rare: the mount
         * table is only read when there is one). */
        if (access(dir, F_OK) == 0)
                sandbox_workspace_remove_dir(dir);
        if (mkdir(dir, 0700) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "create %s: %m", dir);
        int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || flock(fd, LOCK_EX) < 0) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                return bc_error_set(err, BC_SANDBOX_SETUP, e, "lock %s: %s", lock, strerror(e));
        }
        *ret_lock = fd;
        *ret_dir = steal_pointer(&dir);
        if (bounded) {
                char why[128];
                if (!sandbox_workspace_available(why, sizeof(why)))
                        return bc_error_set(err, BC_SANDBOX_SETUP, ENOTSUP,
                                            "this worker cannot make bounded workspaces: %s "
                                            "(see boxcar sandbox detect)", why);
                int r = ws_pool_acquire(svc->ws_pool, img, fs, spec->limits.disk_mb,
                                        spec->limits.files, err);
                if (r < 0)
                        return r;
        } else if (mkdir(ws, 0755) < 0) {
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "create %s: %m", ws);
        }
        *ret_ws = steal_pointer(&ws);
        *ret_scratch = steal_pointer(&sc);
        return 0;
}

/* PATH, HOME and LANG, then exactly the spec's variables: nothing of the
 * worker's own environment (database URL, S3 keys) reaches the job. */
static int write_file(const char *path, const char *text, struct bc_error *err)
{
        _cleanup_fd_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "create %s: %m", path);
        int r = bc_write_all(fd, text, strlen(text));
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "write %s: %s", path, strerror(-r));
        return 0;
}

/* The features the plain-process backend does not provide yet are refused
 * rather than silently ignored. */
static const char *unsupported_feature(const struct worker_config *cfg,
                                       const struct job_spec *spec, const char *queue)
{
        if (spec->n_volumes && cfg->sandbox == BACKEND_NONE)
                return "volumes: need the isolating backend (this worker runs --sandbox none)";
        if (spec->image_storage && cfg->sandbox == BACKEND_NONE)
                return "image: needs the isolating backend (this worker runs --sandbox none)";
        if (spec->network_host && cfg->sandbox == BACKEND_NAMESPACE &&
            !config_queue_allows_host_network(cfg, queue))
                return "network: \"host\" is not allowed for this queue on this worker "
                       "(see boxcar worker --allow-host-network)";
        return NULL;
}

static void add_stream(cJSON *res, const char *name, const struct tailbuf *t)
{
        size_t len = 0;
        _cleanup_free_ char *raw = tailbuf_copy(t, &len);
        _cleanup_free_ char *text = raw ? utf8_sanitize(raw, len) : NULL;
        char key[32];
        cJSON_AddStringToObject(res, name, text ? text : "");
        snprintf(key, sizeof(key), "%s_truncated", name);
        cJSON_AddBoolToObject(res, key, tailbuf_truncated(t));
        snprintf(key, sizeof(key), "%s_bytes", name);
        cJSON_AddNumberToObject(res, key, (double)t->total);
}

static cJSON *result_json(const struct backend_result *r)
{
        const struct proc_outcome *p = &r->proc;
        cJSON *res = cJSON_CreateObject();
        if (!res)
                return NULL;
        cJSON_AddNumberToObject(res, "exit_code", p->exit_code);
        if (p->signal)
                cJSON_AddNumberToObject(res, "signal", p->signal);
        else
                cJSON_AddNullToObject(res, "signal");
        cJSON_AddBoolToObject(res, "timed_out", p->timed_out);
        cJSON_AddBoolToObject(res, "oom_killed", r->oom_killed);
        cJSON_AddNumberToObject(res, "wall_ms", (double)p->wall_ms);
        cJSON_AddNumberToObject(res, "cpu_ms", (double)p->cpu_ms);
        cJSON_AddNumberToObject(res, "max_rss_kb", (double)p->max_rss_kb);
        char when[64];
        struct tm tm;
        gmtime_r(&p->started_at.tv_sec, &tm);
        snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 p->started_at.tv_nsec / 1000);
        cJSON_AddStringToObject(res, "started_at", when);
        cJSON_AddStringToObject(res, "sandbox", r->backend);
        add_stream(res, "stdout", &p->out);
        add_stream(res, "stderr", &p->err);
        return res;
}

static void decide(const struct job_spec *spec, const struct backend_result *r, int stop,
                   struct job_outcome *o)
{
        const struct proc_outcome *p = &r->proc;
        char msg[128];
        o->action = JOB_COMPLETE;
        if (stop == JOB_STOP_DRAIN || stop == JOB_STOP_LOST) {
                o->action = stop == JOB_STOP_DRAIN ? JOB_RELEASE : JOB_DROP;
        } else if (p->cancelled) {
                o->status = "cancelled";
                set_error(o, BC_CANCELLED, "cancelled while running");
        } else if (r->oom_killed) {
                o->status = "failed";
                snprintf(msg, sizeof(msg), "killed for exceeding its %llu MiB memory limit",
                         (unsigned long long)spec->limits.memory_mb);
                set_error(o, BC_OOM, msg);
                if (spec->retry_on & SPEC_RETRY_OOM)
                        o->action = JOB_RETRY;
        } else if (p->timed_out) {
                o->status = "failed";
                snprintf(msg, sizeof(msg), "killed after the %gs timeout", spec->limits.timeout_s);
                set_error(o, BC_TIMEOUT, msg);
                if (spec->retry_on & SPEC_RETRY_TIMEOUT)
                        o->action = JOB_RETRY;
        } else if (p->exit_code != 0) {
                o->status = "failed";
                if (p->signal)
                        snprintf(msg, sizeof(msg), "killed by signal %d (%s)", p->signal,
                                 strsignal(p->signal));
                else
                        snprintf(msg, sizeof(msg), "exited with status %d", p->exit_code);
                set_error(o, BC_NONZERO_EXIT, msg);
                if (spec->retry_on & SPEC_RETRY_NONZERO_EXIT)
                        o->action = JOB_RETRY;
        } else {
                o->status = "succeeded";
        }
}

/* Scripts are written to files and run by path: their text is never
 * spliced into a command line. */
static int prepare_meta(const struct job_spec *spec, const char *meta, struct bc_error *err)
{
        if (mkdir(meta, 0755) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "create %s: %m", meta);
        _cleanup_free_ char *script = NULL, *startup = NULL;
        if (asprintf(&script, "%s/script.sh", meta) < 0 ||
            asprintf(&startup, "%s/startup.sh", meta) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        int r = spec->mode == SPEC_SCRIPT ? write_file(script, spec->script, err) : 0;
        if (r >= 0 && spec->startup_script)
                r = write_file(startup, spec->startup_script, err);
        return r;
}

/* The workdir must exist before the job enters it. */
static int make_workdir(const struct job_spec *spec, const char *ws, struct bc_error *err)
{
        const char *rest = spec->workdir + strlen("/workspace");
        if (strncmp(spec->workdir, "/workspace", 10) != 0 || *rest != '/')
                return 0;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s%s", ws, rest) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        for (char *p = path + strlen(ws) + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                int r = mkdir(path, 0755);
                *p = '/';
                if (r < 0 && errno != EEXIST)
                        return bc_error_set(err, BC_SANDBOX_SETUP, errno, "workdir %s: %m",
                                            spec->workdir);
        }
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "workdir %s: %m", spec->workdir);
        return 0;
}

/* Failures before or after the command: the infrastructure's are retried,
 * the job's own (bad archive, checksum, spec) are final. */
static void fail_with(struct job_outcome *o, const struct bc_error *err, enum bc_code infra)
{
        enum bc_code code = err->code;
        if (code == BC_DATABASE || code == BC_INTERNAL || code == BC_IO || code == BC_CONFIG ||
            code == BC_OK || code == BC_NOT_FOUND || code == BC_USAGE)
                code = infra;
        bool final = code == BC_BAD_SPEC || code == BC_CHECKSUM_MISMATCH || code == BC_BAD_ARCHIVE ||
                     code == BC_WORKSPACE_LIMIT;
        o->action = final ? JOB_COMPLETE : JOB_RETRY;
        o->status = "failed";
        set_error(o, code, bc_error_message(err));
}

struct job_run {
        const struct job_services *svc;
        const struct claimed_job *job;
        const struct job_spec *spec;
        const char *dir;
        char *ws, *scratch, *meta;
        struct store_mounts mounts;
        struct storage_cache_entry *image;   /* NULL: the host's system root */
        struct livelog log;
        bool started_noted;        /* the "started" event is written */
        struct store_artifact_start artifact_start;
        cJSON *result;
};

static PGconn *run_conn(struct job_run *run, struct bc_error *err)
{
        return run->svc->conn(run->svc->conn_ctx, err);
}

/* The job's image from the image cache, timed on a miss. */
static int stage_image(struct job_run *run, PGconn *conn, struct bc_error *err)
{
        struct store *st = run->svc->store;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int r = store_acquire_image(st, conn, run->spec, &run->image, err);
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
static int stage_inputs(struct job_run *run, struct bc_error *err)
{
        const struct job_spec *spec = run->spec;
        bool needs_db = spec->artifact_storage || spec->image_storage;
        for (size_t i = 0; i < spec->n_volumes; i++)
                needs_db |= spec->volumes[i].storage != NULL;
        PGconn *conn = needs_db ? run_conn(run, err) : NULL;
        if (needs_db && !conn)
                return bc_error_prefix(err, "resolve storages");
        int r = stage_image(run, conn, err);
        if (r >= 0)
                r = store_acquire_volumes(run->svc->store, conn, spec, &run->mounts, err);
        for (size_t i = 0; r >= 0 && i < run->mounts.n; i++) {
                const struct storage_cache_entry *e = run->mounts.entries[i];
                wmetrics_cache(run->svc->metrics, !storage_cache_entry_downloaded(e));
                if (storage_cache_entry_downloaded(e))
                        wmetrics_transfer(run->svc->metrics, "download", "volume",
                                          storage_cache_entry_downloaded_bytes(e));
        }
        uint64_t downloaded = 0;
        if (r >= 0)
                r = store_restore_artifact(run->svc->store, conn, spec, run->ws,
                                           &run->artifact_start, &downloaded, err);
        if (downloaded)
                wmetrics_transfer(run->svc->metrics, "download", "artifact", downloaded);
        return r;
}

static void on_output(void *ctx, int stream, const char *data, size_t len)
{
        struct job_run *run = ctx;
        if (!run->started_noted) {
                run->started_noted = true;
                run->svc->event(run->svc->conn_ctx, run->job, "started",
                                run->svc->cfg->sandbox == BACKEND_NAMESPACE
                                        ? "{\"sandbox\": \"namespace\"}"
                                        : "{\"sandbox\": \"none\"}");
        }
        livelog_write(&run->log, stream, data, len);
        if (run->svc->tick)
                run->svc->tick(run->svc->conn_ctx);
}

static int run_inner(struct job_run *run, char *const *argv, double timeout_s, int cancel_fd,
                     struct backend_result *res, struct bc_error *err)
{
        const char *paths[33] = { NULL };
        for (size_t i = 0; i < run->mounts.n && i < 32; i++)
                paths[i] = store_mount_path(&run->mounts, i);
        struct backend_job bj = { .cfg = run->svc->cfg, .spec = run->spec, .argv = argv,
                                  .timeout_s = timeout_s, .workspace = run->ws,
                                  .scratch = run->scratch,
                                  .meta_dir = run->meta, .volume_paths = paths,
                                  .image_path = run->image ? storage_cache_entry_path(run->image)
                                                           : NULL,
                                  .image_sha = run->image ? storage_cache_entry_sha256(run->image)
                                                          : NULL,
                                  .cancel_fd = cancel_fd, .on_output = on_output,
                                  .output_ctx = run };
        int r = backend_run(&bj, res, err);
        livelog_flush(&run->log);
        if (r >= 0 && strcmp(res->backend, "namespace") == 0)
                wmetrics_sandbox_overhead(run->svc->metrics, (double)res->overhead_ms / 1000);
        return r;
}

static void inner_paths(const struct job_run *run, const char **ret_ws, const char **ret_meta)
{
        struct backend_job bj = { .cfg = run->svc->cfg, .workspace = run->ws,
                                  .meta_dir = run->meta };
        backend_inner_paths(&bj, ret_ws, ret_meta);
}

#define STATE_FILE ".boxcar/state.json"
#define PACK_MIN_BUDGET_S 60.0

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
                run->svc->event(run->svc->conn_ctx, run->job, "startup_done", "{\"skipped\": true}");
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
        if (r >= 0) {
                cJSON *out = result_json(&res);
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
                run->svc->event(run->svc->conn_ctx, run->job, "startup_done", details);
                if (res.proc.cancelled || *stop != JOB_STOP_NONE) {
                        decide(spec, &res, *stop, o);
                        r = 1;
                }
        }
        backend_result_done(&res);
        return r;
}

/* Code mode: main's JSON return value becomes result.return_value; a file
 * that is not JSON fails the job as the wrappers do for Python and Node. */
static void collect_return_value(struct job_run *run, cJSON *res, struct job_outcome *o)
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
                set_error(o, BC_NONZERO_EXIT, "main() returned a value that is not JSON");
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
        r = run_inner(run, argv ? argv : spec->mode == SPEC_SCRIPT ? script_argv : spec->argv,
                      spec->limits.timeout_s, cancel_fd, &res, err);
        backend_strv_free(argv);
        if (r >= 0) {
                cJSON *main_res = result_json(&res);
                decide(spec, &res, *stop, o);
                o->duration_s = (double)res.proc.wall_ms / 1000;
                if (spec->mode == SPEC_CODE)
                        collect_return_value(run, main_res, o);
                /* The main run's fields at the top level, the startup's beside them. */
                cJSON *startup = cJSON_DetachItemFromObjectCaseSensitive(run->result, "startup");
                cJSON_Delete(run->result);
                run->result = main_res;
                if (startup)
                        cJSON_AddItemToObject(run->result, "startup", startup);
                char details[128];
                snprintf(details, sizeof(details), "{\"exit_code\": %d, \"signal\": %d, "
                         "\"timed_out\": %s, \"oom_killed\": %s}", res.proc.exit_code,
                         res.proc.signal, res.proc.timed_out ? "true" : "false",
                         res.oom_killed ? "true" : "false");
                run->svc->event(run->svc->conn_ctx, run->job, "exited", details);
        }
        backend_result_done(&res);
        return r;
}

/* The workspace becomes the artifact's new version, whatever the exit
 * status (a failed run's state is often what one wants to look at). */
static void save_outputs(struct job_run *run, struct job_outcome *o)
{
        if (!run->spec->artifact_storage || o->action == JOB_DROP || o->action == JOB_RELEASE)
                return;
        struct bc_error err = BC_ERROR_INIT;
        struct store_artifact a;
        /* What the job left is bounded like the job: its disk and file
         * limits; packing gets the job's timeout again as its budget, at
         * least PACK_MIN_BUDGET_S (a short job may leave a large tree). */
        struct storage_pack_limits lim;
        storage_pack_limits_default(&lim);
        lim.max_bytes = run->spec->limits.disk_mb << 20;
        lim.max_entries = run->spec->limits.files;
        lim.max_seconds = run->spec->limits.timeout_s > PACK_MIN_BUDGET_S
                                  ? run->spec->limits.timeout_s : PACK_MIN_BUDGET_S;
        PGconn *conn = run_conn(run, &err);
        int r = conn ? store_save_artifact(run->svc->store, conn, run->spec, run->ws, run->dir,
                                           &run->artifact_start, run->job->id, &lim, &a, &err)
                     : -EIO;
        if (r < 0) {
                /* The job's own tree over a limit is final (and the head
                 * stays where it was); anything else is the upload's. */
                bool own = err.code == BC_WORKSPACE_LIMIT;
                fail_with(o, &err, BC_UPLOAD_FAILED);
                if (!own)
                        o->action = JOB_RETRY;
                bc_error_clear(&err);
                return;
        }
        cJSON *art = cJSON_AddObjectToObject(run->result, "artifact");
        cJSON_AddStringToObject(art, "storage", run->spec->artifact_storage);
        cJSON_AddStringToObject(art, "sha256", a.sha256);
        cJSON_AddNumberToObject(art, "size", (double)a.size);
        cJSON_AddNumberToObject(art, "file_count", (double)a.file_count);
        if (run->artifact_start.base_sha[0])
                cJSON_AddStringToObject(art, "parent_sha256", run->artifact_start.base_sha);
        else
                cJSON_AddNullToObject(art, "parent_sha256");
        cJSON_AddBoolToObject(art, "uploaded", a.uploaded);
        /* The head moved under the job (a push, or a writer outside the
         * queue's one-at-a-time order): its version is kept, as a branch. */
        cJSON_AddBoolToObject(art, "conflict", !a.is_head);
        if (a.uploaded)
                wmetrics_transfer(run->svc->metrics, "upload", "artifact", a.size);
        cJSON_AddStringToObject(art, "url", a.url);
        char details[256];
        snprintf(details, sizeof(details),
                 "{\"storage\": \"%s\", \"sha256\": \"%s\", \"size\": %llu, \"uploaded\": %s, "
                 "\"conflict\": %s}",
                 run->spec->artifact_storage, a.sha256, (unsigned long long)a.size,
                 a.uploaded ? "true" : "false", a.is_head ? "false" : "true");
        run->svc->event(run->svc->conn_ctx, run->job, "artifact_uploaded", details);
        store_artifact_done(&a);
}

static void run_job(struct job_run *run, int cancel_fd, const _Atomic int *stop,
                    struct job_outcome *o)
{
        struct bc_error err = BC_ERROR_INIT;
        if (asprintf(&run->meta, "%s/meta", run->dir) < 0) {
                bc_error_set(&err, BC_INTERNAL, ENOMEM, "out of memory");
                fail_with(o, &err, BC_SANDBOX_SETUP);
        } else if (prepare_meta(run->spec, run->meta, &err) < 0 ||
                   make_workdir(run->spec, run->ws, &err) < 0) {
                fail_with(o, &err, BC_SANDBOX_SETUP);
        } else if (stage_inputs(run, &err) < 0) {
                fail_with(o, &err, BC_FETCH_FAILED);
        } else if (run_command(run, cancel_fd, stop, o, &err) < 0) {
                fail_with(o, &err, BC_SANDBOX_SETUP);
        } else {
                save_outputs(run, o);
        }
        if (*stop == JOB_STOP_LOST)
                o->action = JOB_DROP;
        if (run->result) {
                free(o->result_json);
                o->result_json = cJSON_PrintUnformatted(run->result);
        }
        bc_error_clear(&err);
}

void job_execute(const struct job_services *svc, const struct claimed_job *job, int cancel_fd,
                 const _Atomic int *stop, struct job_outcome *ret)
{
        memset(ret, 0, sizeof(*ret));
        ret->duration_s = -1;
        ret->report_alone = true;
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(spec_freep) struct job_spec *spec = NULL;
        if (spec_parse(job->spec_json, strlen(job->spec_json), &spec, &err) < 0) {
                /* A bad spec never reaches a process and is never retried. */
                fail_with(ret, &err, BC_BAD_SPEC);
                bc_error_clear(&err);
                return;
        }
        ret->report_alone = spec->artifact_storage != NULL;
        const char *unsupported = unsupported_feature(svc->cfg, spec, job->queue);
        if (unsupported) {
                bc_error_set(&err, BC_BAD_SPEC, EINVAL, "%s", unsupported);
                fail_with(ret, &err, BC_BAD_SPEC);
                bc_error_clear(&err);
                return;
        }
        _cleanup_free_ char *dir = NULL, *ws = NULL, *scratch = NULL;
        _cleanup_fd_ int lock = -1;
        if (make_job_dir(svc, job, spec, &dir, &ws, &scratch, &lock, &err) < 0) {
                fail_with(ret, &err, BC_SANDBOX_SETUP);
                bc_error_clear(&err);
                if (dir)
                        sandbox_workspace_remove_dir(dir);
                return;
        }
        struct job_run run = { .svc = svc, .job = job, .spec = spec, .dir = dir,
                               .ws = steal_pointer(&ws), .scratch = steal_pointer(&scratch) };
        livelog_init(&run.log, job->id, job->attempt, svc->cfg->max_log_bytes, svc->conn,
                     svc->conn_ctx);
        run_job(&run, cancel_fd, stop, ret);
        livelog_done(&run.log);
        store_release_volumes(svc->store, &run.mounts);
        storage_cache_release(svc->store->images, run.image);
        cJSON_Delete(run.result);
        free(run.ws);
        free(run.scratch);
        free(run.meta);
        release_job_dir(svc, dir);
}
