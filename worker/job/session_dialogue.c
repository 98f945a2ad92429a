/* One job inside a live session (session_dialogue.h).  Everything the
 * agent says is checked: it shares its sandbox and uid with the session's
 * own processes, which could kill it or speak in its place.  What such a
 * process can make a job's result say is only that session's own.
 * Size: one protocol, each step beside the checks of what the agent said. */
#include "worker/job/session_dialogue.h"

#include <errno.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/session_wire.h"
#include "common/utf8.h"
#include "worker/job/code.h"
#include "worker/job/job-internal.h"
#include "worker/job/job_secrets.h"
#include "worker/session/session.h"

/* After a KILL, the agent has this long to report the job's end before
 * the session is given up. */
#define KILL_GRACE_MS 5000
/* A job's timer ticks (the live log's batches, kept-back events). */
#define TICK_MS 200

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

struct dialogue {
        const struct job_services *svc;
        const struct claimed_job *job;
        const struct job_spec *spec;
        struct session *sess;
        struct job_run run;
        uint32_t seq;
        struct backend_result res;
        uint64_t start_ms;
        bool started, done, killed, broken;
        /* files */
        cJSON *files;
        char first_failure[600];
        /* code */
        int code_status;
        char *return_value;
};

static void output(struct dialogue *d, int stream, const char *data, size_t len)
{
        livelog_write(&d->run.log, stream, data, len);
        tailbuf_write(stream == 1 ? &d->res.proc.out : &d->res.proc.err, data, len);
}

static void note_started(struct dialogue *d)
{
        if (d->started)
                return;
        d->started = true;
        const struct job_services *svc = d->svc;
        bool first = session_first_job(d->sess), resumed = session_resumed(d->sess);
        char details[400];
        if (first) {
                const struct store_version *c = session_checkpoint(d->sess);
                snprintf(details, sizeof(details), "{\"session\": \"%s\", \"checkpoint\": %s%s%s}",
                         d->spec->session.id, c ? "\"" : "", c ? c->sha256 : "null",
                         c ? "\"" : "");
                svc->event(svc->ctx, d->job, resumed ? "session_resumed" : "session_started",
                           details);
        }
        snprintf(details, sizeof(details),
                 "{\"sandbox\": \"namespace\", \"session\": \"%s\", \"seq\": %u, "
                 "\"resumed\": %s}",
                 d->spec->session.id, d->seq, first && resumed ? "true" : "false");
        svc->event(svc->ctx, d->job, "started", details);
}

/* The job's environment: the spec's, and what tells it about its session. */
static char **session_env(struct dialogue *d)
{
        char **base = backend_env(d->spec, "/workspace",
                                  d->run.progress ? d->run.progress->inner_path : NULL);
        if (!base)
                return NULL;
        size_t n = 0;
        while (base[n])
                n++;
        char **env = realloc(base, (n + 4) * sizeof(char *));
        if (!env) {
                backend_strv_free(base);
                return NULL;
        }
        bool ok = asprintf(&env[n++], "BOXCAR_SESSION_ID=%s", d->spec->session.id) >= 0;
        ok &= asprintf(&env[n++], "BOXCAR_SESSION_JOB=%u", d->seq) >= 0;
        ok &= asprintf(&env[n++], "BOXCAR_SESSION_RESUMED=%d",
                       session_first_job(d->sess) && session_resumed(d->sess)) >= 0;
        env[n] = NULL;
        if (!ok) {
                backend_strv_free(env);
                return NULL;
        }
        return env;
}

static int encode_files(struct dialogue *d, struct dynbuf *out)
{
        const struct job_spec *spec = d->spec;
        struct sw_file_req *ops = calloc(spec->n_files, sizeof(*ops));
        if (!ops)
                return -ENOMEM;
        for (size_t i = 0; i < spec->n_files; i++) {
                const struct spec_file_op *f = &spec->files[i];
                ops[i] = (struct sw_file_req){
                        .op = (uint8_t)f->op,
                        .flags = (uint8_t)((f->parents ? SW_FILE_PARENTS : 0) |
                                           (f->recursive ? SW_FILE_RECURSIVE : 0)),
                        .path = f->path,
                        .to = f->to ? f->to : "",
                        .data = f->data ? f->data : "",
                        .data_len = (uint32_t)f->data_len,
                };
        }
        uint64_t max_read = spec->limits.output_bytes;
        if (max_read > d->svc->cfg->max_output_bytes)
                max_read = d->svc->cfg->max_output_bytes;
        if (max_read > SW_PAYLOAD_MAX - 4096)
                max_read = SW_PAYLOAD_MAX - 4096;
        struct sw_files req = { .max_read = (uint32_t)max_read,
                                .n = (uint32_t)spec->n_files,
                                .ops = ops };
        int r = sw_encode_files(out, d->seq, &req);
        free(ops);
        return r;
}

/* The request for the job's mode. */
static int build_request(struct dialogue *d, struct dynbuf *out, struct bc_error *err)
{
        const struct job_spec *spec = d->spec;
        char **env = session_env(d);
        char **argv = NULL;
        char *script_argv[] = { "/bin/sh", BACKEND_META_DIR "/script.sh", NULL };
        int r = env ? 0 : -ENOMEM;
        if (r >= 0 && spec->mode == SPEC_FILES) {
                r = encode_files(d, out);
        } else if (r >= 0 && spec->mode == SPEC_CODE &&
                   (strcmp(spec->code_language, "python") == 0 ||
                    strcmp(spec->code_language, "node") == 0)) {
                struct sw_code c = { .language = spec->code_language,
                                     .source = spec->code_source,
                                     .arguments = spec->code_arguments,
                                     .env = env,
                                     .cwd = spec->workdir };
                r = sw_encode_code(out, d->seq, &c);
        } else if (r >= 0) {
                /* script.sh and the code wrappers in the session's meta
                 * directory, which the sandbox shows at BACKEND_META_DIR. */
                r = job_dir_prepare_meta(spec, session_meta(d->sess), err);
                if (r >= 0 && spec->mode == SPEC_CODE)
                        r = code_prepare(spec, session_meta(d->sess), BACKEND_META_DIR,
                                         "/workspace", &argv, err);
                if (r < 0) {
                        backend_strv_free(env);
                        return r;
                }
                struct sw_run run = { .argv = argv                        ? argv
                                              : spec->mode == SPEC_SCRIPT ? script_argv
                                                                          : spec->argv,
                                      .env = env,
                                      .cwd = spec->workdir,
                                      .stdin_data = spec->stdin_data ? spec->stdin_data : "",
                                      .stdin_len = (uint32_t)spec->stdin_len };
                r = sw_encode_run(out, d->seq, &run);
        }
        backend_strv_free(argv);
        backend_strv_free(env);
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "the job's request: %s",
                                    strerror(-r));
        return 0;
}

static void on_exit_frame(struct dialogue *d, const struct sw_exit *x)
{
        struct proc_outcome *p = &d->res.proc;
        p->spawned = x->exec_errno == 0;
        if (WIFEXITED(x->wstatus)) {
                p->exit_code = WEXITSTATUS(x->wstatus);
        } else if (WIFSIGNALED(x->wstatus)) {
                p->signal = WTERMSIG(x->wstatus);
                p->exit_code = 128 + p->signal;
        } else {
                p->exit_code = 255;
        }
        p->cpu_ms = x->cpu_us / 1000;
        p->max_rss_kb = x->max_rss_kb;
        d->done = true;
}

static char *base64(const char *data, size_t len)
{
        char *out = malloc(4 * ((len + 2) / 3) + 1);
        if (out)
                EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)data, (int)len);
        return out;
}

static const char *op_name(uint8_t op)
{
        static const char *const names[] = { "?",    "write", "read",   "list",
                                             "stat", "mkdir", "remove", "move" };
        return op < 8 ? names[op] : "?";
}

static cJSON *entry_json(const struct sw_entry *e)
{
        cJSON *o = cJSON_CreateObject();
        _cleanup_free_ char *name = utf8_sanitize(e->name, strlen(e->name));
        cJSON_AddStringToObject(o, "name", name ? name : "");
        const char *type = e->type == 'f'   ? "file"
                           : e->type == 'd' ? "directory"
                           : e->type == 'l' ? "symlink"
                                            : "other";
        cJSON_AddStringToObject(o, "type", type);
        cJSON_AddNumberToObject(o, "size", (double)e->size);
        char mode[8];
        snprintf(mode, sizeof(mode), "%04o", e->mode & 07777);
        cJSON_AddStringToObject(o, "mode", mode);
        cJSON_AddNumberToObject(o, "mtime", (double)e->mtime_ns / 1e9);
        return o;
}

/* One operation's result into result.files (checked against the spec:
 * the agent answers for the operations it was given, in order). */
static int on_file_frame(struct dialogue *d, const char *payload, size_t len, struct bc_error *err)
{
        struct sw_file_result fr;
        if (sw_decode_file_result(payload, len, &fr) < 0 || fr.index >= d->spec->n_files ||
            (size_t)cJSON_GetArraySize(d->files) != fr.index)
                return bc_error_set(err, BC_SANDBOX_SETUP, EPROTO,
                                    "the session's agent answered out of turn");
        const struct spec_file_op *op = &d->spec->files[fr.index];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "op", op_name((uint8_t)op->op));
        _cleanup_free_ char *path = utf8_sanitize(op->path, strlen(op->path));
        cJSON_AddStringToObject(o, "path", path ? path : "");
        if (fr.err) {
                cJSON_AddBoolToObject(o, "ok", false);
                cJSON_AddStringToObject(o, "error", strerror(fr.err));
                if (!d->first_failure[0])
                        snprintf(d->first_failure, sizeof(d->first_failure),
                                 "files[%u] (%s %s): %s", fr.index, op_name((uint8_t)op->op),
                                 path ? path : "?", strerror(fr.err));
        } else {
                cJSON_AddBoolToObject(o, "ok", true);
        }
        if (!fr.err && op->op == SPEC_FILE_READ) {
                bool text = utf8_valid(fr.data, fr.data_len);
                _cleanup_free_ char *content = text ? strndup(fr.data, fr.data_len)
                                                    : base64(fr.data, fr.data_len);
                cJSON_AddStringToObject(o, "content", content ? content : "");
                cJSON_AddStringToObject(o, "encoding", text ? "utf-8" : "base64");
                cJSON_AddNumberToObject(o, "size", (double)fr.size);
                cJSON_AddBoolToObject(o, "truncated", fr.truncated);
        } else if (!fr.err && op->op == SPEC_FILE_LIST) {
                cJSON *a = cJSON_AddArrayToObject(o, "entries");
                for (uint32_t i = 0; i < fr.n_entries; i++)
                        cJSON_AddItemToArray(a, entry_json(&fr.entries[i]));
                cJSON_AddBoolToObject(o, "truncated", fr.truncated);
        } else if (!fr.err && fr.n_entries == 1) {
                cJSON *e = entry_json(&fr.entries[0]);
                cJSON_DeleteItemFromObjectCaseSensitive(e, "name");
                cJSON_AddItemToObject(o, "stat", e);
        }
        free(fr.entries);
        cJSON_AddItemToArray(d->files, o);
        return 0;
}

static int on_code_done(struct dialogue *d, const char *payload, size_t len, struct bc_error *err)
{
        struct sw_code_done c;
        if (sw_decode_code_done(payload, len, &c) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, EPROTO,
                                    "the session's agent sent a malformed code result");
        d->code_status = c.status;
        struct proc_outcome *p = &d->res.proc;
        char line[300];
        switch (c.status) {
        case SW_CODE_OK:
                free(d->return_value);
                d->return_value = strdup(c.return_value);
                p->exit_code = 0;
                break;
        case SW_CODE_ERROR:
                output(d, 2, c.error, strlen(c.error));
                p->exit_code = 1;
                break;
        default:
                snprintf(line, sizeof(line),
                         c.status == SW_CODE_CRASHED
                                 ? "boxcar: the %s interpreter died (%s); the session's next "
                                   "%s job starts a fresh one\n"
                                 : "boxcar: the %s interpreter could not start (%s)\n",
                         d->spec->code_language, c.error, d->spec->code_language);
                output(d, 2, line, strlen(line));
                p->exit_code = c.status == SW_CODE_CRASHED ? 1 : 127;
                if (c.status == SW_CODE_CRASHED && WIFSIGNALED(c.wstatus)) {
                        p->signal = WTERMSIG(c.wstatus);
                        p->exit_code = 128 + p->signal;
                }
                break;
        }
        d->done = true;
        return 0;
}

/* One frame of the job's (others are late ones of an earlier job). */
static int on_frame(struct dialogue *d, const struct sw_header *h, const char *payload,
                    struct bc_error *err)
{
        if (h->seq != d->seq)
                return 0;
        switch (h->type) {
        case SA_STARTED:
                note_started(d);
                return 0;
        case SA_OUTPUT:
                note_started(d);
                if (h->len < 1 || (payload[0] != 1 && payload[0] != 2))
                        return bc_error_set(err, BC_SANDBOX_SETUP, EPROTO,
                                            "the session's agent sent malformed output");
                output(d, payload[0], payload + 1, h->len - 1);
                return 0;
        case SA_EXIT: {
                struct sw_exit x;
                if (sw_decode_exit(payload, h->len, &x) < 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, EPROTO,
                                            "the session's agent sent a malformed exit");
                note_started(d);
                on_exit_frame(d, &x);
                return 0;
        }
        case SA_FILE:
                note_started(d);
                return on_file_frame(d, payload, h->len, err);
        case SA_FILES_DONE:
                if ((size_t)cJSON_GetArraySize(d->files) != d->spec->n_files)
                        return bc_error_set(err, BC_SANDBOX_SETUP, EPROTO,
                                            "the session's agent left operations unanswered");
                d->done = true;
                return 0;
        case SA_CODE_DONE:
                note_started(d);
                return on_code_done(d, payload, h->len, err);
        default:
                return bc_error_set(err, BC_SANDBOX_SETUP, EPROTO,
                                    "the session's agent sent an unknown frame");
        }
}

static int send_kill(struct dialogue *d, struct bc_error *err)
{
        struct dynbuf b;
        dynbuf_init(&b, 64);
        size_t start;
        int r = sw_frame_begin(&b, SW_KILL, d->seq, &start);
        if (r >= 0)
                r = sw_frame_end(&b, start);
        if (r >= 0)
                r = session_send(d->sess, &b, err);
        dynbuf_done(&b);
        d->killed = true;
        return r;
}

static bool fd_readable(int fd)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* The frames until the job's end, its timeout or its cancel. */
static int converse(struct dialogue *d, int cancel_fd, struct bc_error *err)
{
        uint64_t deadline = d->start_ms + (uint64_t)(d->spec->limits.timeout_s * 1000);
        uint64_t kill_deadline = 0;
        while (!d->done) {
                uint64_t now = bc_mono_ms();
                if (!d->killed && now >= deadline) {
                        d->res.proc.timed_out = true;
                        if (send_kill(d, err) < 0)
                                return -EPIPE;
                        kill_deadline = now + KILL_GRACE_MS;
                }
                if (d->killed && now >= kill_deadline)
                        return bc_error_set(err, BC_SANDBOX_SETUP, ETIMEDOUT,
                                            "the session's agent did not end the job");
                struct sw_header h;
                const char *payload;
                int r = session_recv(d->sess, d->killed ? -1 : cancel_fd, TICK_MS, &h, &payload,
                                     err);
                if (r < 0)
                        return r;
                if (r == 0 && !d->killed && cancel_fd >= 0 && fd_readable(cancel_fd)) {
                        d->res.proc.cancelled = true;
                        if (send_kill(d, err) < 0)
                                return -EPIPE;
                        kill_deadline = bc_mono_ms() + KILL_GRACE_MS;
                }
                if (r > 0 && on_frame(d, &h, payload, err) < 0)
                        return -EPROTO;
                if (d->svc->tick)
                        d->svc->tick(d->svc->ctx);
                livelog_write(&d->run.log, 0, NULL, 0);
                job_progress_poll(d->run.progress);
        }
        d->res.proc.wall_ms = bc_mono_ms() - d->start_ms;
        return 0;
}

/* Code: main's value as result.return_value (JSON, or null). */
static void code_result(struct dialogue *d, cJSON *res, struct job_outcome *o)
{
        bool ok = d->code_status == SW_CODE_OK && o->action == JOB_COMPLETE && o->status &&
                  strcmp(o->status, "succeeded") == 0;
        cJSON *value = ok && d->return_value ? cJSON_Parse(d->return_value) : NULL;
        if (ok && !value) {
                o->status = "failed";
                job_outcome_set_error(o, BC_NONZERO_EXIT,
                                      "main() returned a value that is not JSON");
        }
        cJSON_AddItemToObject(res, "return_value", value ? value : cJSON_CreateNull());
}

/* The workspace saved as the session's new version (parent: the last
 * checkpoint), recorded with the job's end. */
static void checkpoint(struct dialogue *d, struct job_outcome *o)
{
        struct job_run *run = &d->run;
        const struct store_version *last = session_checkpoint(d->sess);
        struct storage_pack_limits lim;
        storage_pack_limits_default(&lim);
        session_pack_limits(d->sess, &lim.max_bytes, &lim.max_entries);
        lim.max_seconds = d->spec->limits.timeout_s > 60 ? d->spec->limits.timeout_s : 60;
        if (last) {
                run->artifact_start.base_version = *last;
                run->artifact_start.base_version.s3_key = NULL;
                snprintf(run->artifact_start.base_sha, sizeof(run->artifact_start.base_sha), "%s",
                         last->sha256);
                snprintf(run->artifact_start.head_sha, sizeof(run->artifact_start.head_sha), "%s",
                         last->sha256);
        }
        struct store_version saved = { 0 };
        run->pack_limits = &lim;
        run->saved = &saved;
        /* The upper directory is the session's: what the session changed
         * since its start, of which the layer keeps what differs from the
         * last checkpoint. */
        run->upper_override = session_upper(d->sess);
        artifact_save(run, o);
        if (saved.sha256[0])
                session_set_checkpoint(d->sess, &saved);
        store_version_done(&saved);
        /* A command is never run twice for its checkpoint: a failed upload
         * fails the job (its changes stay in the live workspace, and the
         * next checkpoint holds them). */
        if (o->action == JOB_RETRY && d->res.proc.exit_code == 0 && o->error_code &&
            strcmp(o->error_code, "UPLOAD_FAILED") == 0)
                o->action = JOB_COMPLETE;
}

static void finish(struct dialogue *d, const _Atomic int *stop, struct job_outcome *o)
{
        const struct job_spec *spec = d->spec;
        job_secrets_mask_tail(d->run.secrets, &d->res.proc.out);
        job_secrets_mask_tail(d->run.secrets, &d->res.proc.err);
        cJSON *res = job_result_json(&d->res);
        job_outcome_decide(spec, &d->res, *stop, o);
        o->duration_s = (double)d->res.proc.wall_ms / 1000;
        if (res && spec->mode == SPEC_CODE && d->code_status >= 0)
                code_result(d, res, o);
        else if (res && spec->mode == SPEC_CODE)
                job_collect_return_value(&d->run, res, o); /* bash: a process of its own */
        if (res && spec->mode == SPEC_FILES) {
                cJSON_AddItemToObject(res, "files", d->files);
                d->files = NULL;
                if (d->first_failure[0] && o->action == JOB_COMPLETE) {
                        o->status = "failed";
                        job_outcome_set_error(o, BC_FILE_OP_FAILED, d->first_failure);
                }
        }
        cJSON *s = cJSON_AddObjectToObject(res, "session");
        cJSON_AddStringToObject(s, "id", spec->session.id);
        cJSON_AddNumberToObject(s, "seq", d->seq);
        cJSON_AddBoolToObject(s, "resumed",
                              session_first_job(d->sess) && session_resumed(d->sess));
        cJSON_Delete(d->run.result);
        d->run.result = res;
        char details[128];
        snprintf(details, sizeof(details),
                 "{\"exit_code\": %d, \"signal\": %d, \"timed_out\": %s, \"oom_killed\": false}",
                 d->res.proc.exit_code, d->res.proc.signal,
                 d->res.proc.timed_out ? "true" : "false");
        d->svc->event(d->svc->ctx, d->job, "exited", details);
        livelog_flush(&d->run.log);
        checkpoint(d, o);
}

bool session_dialogue_run(const struct job_services *svc, const struct claimed_job *job,
                          const struct job_spec *spec, const struct job_secrets *secrets,
                          struct session *sess, int cancel_fd, const _Atomic int *stop,
                          struct job_outcome *ret)
{
        struct dialogue d = { .svc = svc, .job = job, .spec = spec, .sess = sess };
        struct bc_error err = BC_ERROR_INIT;
        d.seq = session_next_seq(sess);
        d.run = (struct job_run){ .svc = svc,
                                  .job = job,
                                  .spec = spec,
                                  .dir = session_dir(sess),
                                  .ws = (char *)session_ws(sess),
                                  .secrets = secrets };
        d.res.backend = "namespace";
        size_t cap = spec->limits.output_bytes < svc->cfg->max_output_bytes
                             ? spec->limits.output_bytes
                             : svc->cfg->max_output_bytes;
        tailbuf_init(&d.res.proc.out, cap);
        tailbuf_init(&d.res.proc.err, cap);
        clock_gettime(CLOCK_REALTIME, &d.res.proc.started_at);
        d.files = cJSON_CreateArray();
        d.code_status = -1; /* no kept interpreter's answer (yet) */
        livelog_init(&d.run.log, job->id, job->attempt, job->log_seq + 1, job->log_bytes,
                     svc->cfg->max_log_bytes, svc->append_logs, svc->ctx);
        if (secrets)
                livelog_set_masks(&d.run.log, secrets->live[0], secrets->live[1]);
        struct dynbuf req;
        dynbuf_init(&req, SW_PAYLOAD_MAX + 64);
        /* Nothing of the job runs before its claim committed. */
        int r = svc->claim_wait && !svc->claim_wait(svc->ctx) ? -ECANCELED : 0;
        if (r < 0)
                ret->action = JOB_DROP;
        /* The job's workdir, made as for any job (never through a link
         * the session left: job_dir_make_workdir). */
        if (r >= 0)
                r = job_dir_make_workdir(spec, session_ws(sess), &err);
        /* The job's own progress channel, named after its seq: what an
         * earlier job of the session left running cannot open it. */
        char progress_name[32];
        snprintf(progress_name, sizeof(progress_name), "progress-%u", d.seq);
        struct job_progress progress;
        if (r >= 0)
                r = job_progress_open(&progress, svc, job, secrets, session_meta(sess),
                                      BACKEND_META_DIR, progress_name, &err);
        if (r >= 0)
                d.run.progress = &progress;
        if (r >= 0)
                r = build_request(&d, &req, &err);
        d.start_ms = bc_mono_ms();
        bool asked = r >= 0; /* the agent may have (part of) the request */
        if (r >= 0)
                r = session_send(sess, &req, &err);
        dynbuf_done(&req);
        if (r >= 0)
                r = converse(&d, cancel_fd, &err);
        /* The last report before the job's result. */
        job_progress_close(d.run.progress);
        if (r >= 0) {
                finish(&d, stop, ret);
        } else if (r != -ECANCELED && !asked) {
                /* Before anything was asked of the agent: the job's own
                 * error (its workdir), or the worker's (retried). */
                job_outcome_fail(ret, &err, BC_SANDBOX_SETUP);
        } else if (r != -ECANCELED) {
                /* The agent is gone or broke the protocol: the job may or
                 * may not have run.  Not retried (it may have had effects
                 * the session's next start, from the last checkpoint, no
                 * longer shows); the session stops without a checkpoint. */
                d.broken = true;
                job_outcome_fail(ret, &err, BC_SANDBOX_SETUP);
                ret->action = JOB_COMPLETE;
                ret->status = "failed";
        }
        bc_error_clear(&err);
        if (ret->action == JOB_RELEASE || ret->action == JOB_DROP)
                d.broken = true; /* half run: not a workspace the queue knows */
        if (d.run.result) {
                free(ret->result_json);
                ret->result_json = cJSON_PrintUnformatted(d.run.result);
        }
        if (ret->action == JOB_COMPLETE || ret->action == JOB_RETRY)
                ret->logs_json = livelog_take(&d.run.log);
        livelog_done(&d.run.log);
        cJSON_Delete(d.run.result);
        cJSON_Delete(d.files);
        free(d.return_value);
        backend_result_done(&d.res);
        return d.broken;
}
