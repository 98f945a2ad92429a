/* --sandbox namespace: the job runs inside boxcar-sandbox, a single-
 * threaded helper that sets up namespaces, seccomp and cgroups (this
 * multi-threaded worker never does), and reports a JSON status on fd 3. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/netallow.h"
#include "sandbox/sandbox.h"
#include "worker/exec/backend-internal.h"
#include "worker/log/log.h"
#include "worker/exec/sandbox_pool.h"
#include "worker/exec/secret_env.h"

#define STATUS_MAX (64 * 1024)
/* The helper enforces the job's timeout itself; the worker only steps in
 * when the helper is stuck, this long after it. */
#define HELPER_EXTRA_TIMEOUT_S 15.0

/* Folds the helper's status into the result, or turns a setup failure,
 * or a sandbox killed from outside under its job, into the SANDBOX_SETUP
 * error that gets the job retried. */
static int apply_status(struct sandbox_status *st, struct backend_result *ret,
                        struct bc_error *err)
{
        if (st->setup_failed)
                return bc_error_set(err, BC_SANDBOX_SETUP, st->setup_errno ? st->setup_errno : EIO,
                                    "sandbox setup failed at %s%s%s: %s",
                                    st->setup_step ? st->setup_step : "?",
                                    st->setup_path ? " " : "",
                                    st->setup_path ? st->setup_path : "",
                                    st->message ? st->message : "unknown error");
        if (st->sandbox_killed)
                return bc_error_set(err, BC_SANDBOX_SETUP, EINTR,
                                    "the sandbox was killed from outside while the job ran (its "
                                    "init died of signal %d, %s); the job may have run in part",
                                    st->signal, strsignal(st->signal));
        struct proc_outcome *p = &ret->proc;
        p->exit_code = st->exit_code;
        p->signal = st->signal;
        p->timed_out = st->timed_out;
        p->cancelled = p->cancelled || st->cancelled;
        p->wall_ms = st->wall_ms;
        p->cpu_ms = st->cpu_ms;
        p->max_rss_kb = st->max_rss_kb;
        ret->oom_killed = st->oom_killed;
        ret->has_network = st->has_network;
        ret->net_bytes_out = st->net_bytes_out;
        ret->net_bytes_in = st->net_bytes_in;
        ret->net_connections = st->net_connections;
        ret->net_refused = st->net_refused;
        ret->net_refused_list = st->net_refused_list; /* taken */
        ret->n_net_refused_list = st->n_net_refused_list;
        st->net_refused_list = NULL;
        st->n_net_refused_list = 0;
        /* exec failures (126/127) are already on the job's stderr, written
         * by the helper itself. */
        return 0;
}

static int build_argv(const struct backend *b, const struct backend_job *j, int status_fd,
                      char ***ret_argv, struct bc_error *err)
{
        const struct job_spec *spec = j->spec;
        bool chdir_first = strcmp(spec->workdir, "/workspace") != 0;
        char **cmd = backend_command(j->argv, chdir_first ? spec->workdir : NULL);
        char **env = backend_env(spec, "/workspace", j->progress_path);
        struct sandbox_bind binds[1 + 32];
        char rules[NETALLOW_MAX_RULES][NETALLOW_NAME_MAX + 32];
        char *rule_ptrs[NETALLOW_MAX_RULES];
        bool rule_private[NETALLOW_MAX_RULES];
        size_t n_rules = 0;
        for (; n_rules < spec->n_net_allow && n_rules < NETALLOW_MAX_RULES; n_rules++) {
                const struct netallow_rule *r = &spec->net_allow[n_rules];
                netallow_format(r, rules[n_rules], sizeof(rules[0]));
                rule_ptrs[n_rules] = rules[n_rules];
                rule_private[n_rules] = j->queue && config_network_private(b->cfg, j->queue, r);
        }
        size_t n = 0;
        binds[n++] = (struct sandbox_bind){ .src = j->meta_dir, .dest = BACKEND_META_DIR };
        for (size_t i = 0; i < spec->n_volumes && i < 32; i++)
                binds[n++] = (struct sandbox_bind){ .src = j->volume_paths[i],
                                                    .dest = spec->volumes[i].mount };
        struct sandbox_opts o = {
                .workspace = j->workspace,
                .scratch = j->scratch,
                .ro_binds = binds,
                .n_ro_binds = n,
                .env = env,
                .argv = cmd,
                .timeout_s = j->timeout_s,
                .memory_mb = spec->limits.memory_mb,
                .pids = spec->limits.pids,
                .cpus = spec->limits.cpus,
                .disk_mb = spec->limits.disk_mb,
                .network = spec->network_host ? SANDBOX_NET_HOST
                           : n_rules          ? SANDBOX_NET_ALLOW
                                              : SANDBOX_NET_NONE,
                .cgroup_parent = b->cgroup_parent,
                .image = j->image_path,
                .net_allow = rule_ptrs,
                /* Private targets are the queue's --allow-private-egress
                 * rules, never --allow-private-urls (the specs' URLs). */
                .net_allow_private = rule_private,
                .n_net_allow = n_rules,
        };
        int r = cmd && env
                        ? sandbox_argv_build(&o, b->cfg->sandbox_helper, status_fd, ret_argv, err)
                        : bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        backend_strv_free(cmd);
        backend_strv_free(env);
        return r;
}

/* A helper killed before its teardown left its cgroup: ours to remove.
 * ctx: the backend's cgroup parent (it outlives the reaper's drain; the
 * backend itself may be gone by then). */
static void helper_reaped(void *ctx, pid_t pid, int wstatus)
{
        if (WIFSIGNALED(wstatus))
                sandbox_cgroup_remove_dead(pid, ctx);
}

/* A warm sandbox's start, for proc_run: the handoff. */
struct warm_start {
        const struct backend_job *j;
        struct sandbox_warm *w;
        char **argv;
        int status_w;
        uint64_t send_us;
};

static int start_warm(void *ctx, int out_w, int err_w, pid_t *ret_pid, struct bc_error *err)
{
        struct warm_start *ws = ctx;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int r = sandbox_warm_handoff(ws->w, ws->argv, out_w, err_w, ws->status_w, ws->j->claim_fd,
                                     err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ws->send_us = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000 +
                                 (t1.tv_nsec - t0.tv_nsec) / 1000);
        if (r < 0)
                return r;
        *ret_pid = ws->w->pid;
        /* Handed over: the sandbox is ours to supervise whatever the
         * claim's answer (one that did not commit has the slot cancelled,
         * and the sandbox stops unstarted). */
        struct bc_error not_committed = BC_ERROR_INIT;
        (void)backend_wait_claim(ws->j, &not_committed);
        bc_error_clear(&not_committed);
        return 0;
}

/* One run of the helper: cold (spawned with argv, the status on fd 3) or
 * warm (w: handed the job).  Fills ret from the status.  On failure,
 * *ret_sandbox_fault says whether the sandbox itself failed before the
 * job could run (a warm one may be replaced by a cold one) rather than
 * the job's own options or workspace (which fail the same anywhere), or
 * after it may have run. */
static int run_helper(const struct backend *b, const struct backend_job *j, char **argv,
                      char **helper_env, struct sandbox_warm *w, struct backend_result *ret,
                      bool *ret_sandbox_fault, struct bc_error *err)
{
        *ret_sandbox_fault = true;
        int status_pipe[2];
        if (pipe2(status_pipe, O_CLOEXEC) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "status pipe: %m");
        uint64_t cap = j->spec->limits.output_bytes < b->cfg->max_output_bytes
                               ? j->spec->limits.output_bytes
                               : b->cfg->max_output_bytes;
        /* The helper gets an empty environment but for the job's secrets
         * (secret_env.h): it sets the job's from argv. */
        char *empty_env[] = { NULL };
        _cleanup_(dynbuf_donep) struct dynbuf status;
        dynbuf_init(&status, STATUS_MAX);
        struct warm_start ws = { .j = j, .w = w, .argv = argv, .status_w = status_pipe[1] };
        struct proc_request req = {
                .argv = argv,
                .envp = helper_env ? helper_env : empty_env,
                .cwd = NULL,
                .timeout_s = j->timeout_s + HELPER_EXTRA_TIMEOUT_S,
                .output_cap = (size_t)cap,
                .cancel_fd = j->cancel_fd,
                .on_output = j->on_output,
                .ctx = j->output_ctx,
                /* SIGTERM: the helper kills the sandbox and still reports. */
                .kill_signal = SIGTERM,
                .kill_grace_s = 5,
                .pass_fd = w ? -1 : status_pipe[1],
                .start = w ? start_warm : NULL,
                .start_ctx = &ws,
                /* The job's end is the status's EOF, not the helper's exit
                 * (its teardown): the slot is free as soon as it is read. */
                .report = &status,
                .report_fd = status_pipe[0],
                .child_end = status_pipe[1],
                .on_reaped = helper_reaped,
                .reaped_ctx = (void *)b->cgroup_parent,
        };
        proc_outcome_done(&ret->proc);
        int r = proc_run(&req, &ret->proc, err);
        close(status_pipe[0]);
        /* A warm sandbox that had its job may have run it (in part): from
         * here on, only a status saying its setup failed lets the job try
         * a cold one in this attempt, never over what it left. */
        bool handed = w && w->ctl < 0;
        if (handed)
                *ret_sandbox_fault = false;
        if (r < 0)
                return r;
        const char *buf = status.data;
        size_t len = status.len;
        if (!ret->proc.spawned)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOENT,
                                    "cannot start the sandbox helper %s", b->cfg->sandbox_helper);
        if (len == 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, EIO,
                                    "the sandbox helper ended without a status (exit %d%s)%s",
                                    ret->proc.exit_code,
                                    ret->proc.signal ? ", killed by a signal" : "",
                                    handed ? " after the job was handed to it; the job may "
                                             "have run in part"
                                           : "");
        struct sandbox_status st;
        uint64_t helper_wall_ms = ret->proc.wall_ms;
        r = sandbox_status_parse(buf, len, &st, err);
        if (r < 0)
                return bc_error_prefix(err, "sandbox status");
        /* Only the sandbox's own setup failing, before the job ran, may be
         * tried again in a cold one: the job's options and workspace fail
         * the same anywhere, and a sandbox killed under its job may have
         * run part of it. */
        *ret_sandbox_fault = st.setup_failed &&
                             (!st.setup_step || (strcmp(st.setup_step, "options") != 0 &&
                                                 strcmp(st.setup_step, "workspace") != 0));
        r = apply_status(&st, ret, err);
        ret->overhead_ms = helper_wall_ms > ret->proc.wall_ms ? helper_wall_ms - ret->proc.wall_ms
                                                              : 0;
        /* Warm: the handoff as the worker saw it, plus the helper's part. */
        ret->setup_us = st.setup_us + ws.send_us;
        sandbox_status_done(&st);
        return r;
}

static int run_warm_or_cold(const struct backend *b, const struct backend_job *j, bool have_warm,
                            struct sandbox_warm *w, struct backend_result *ret,
                            struct bc_error *err)
{
        if (have_warm) {
                char **argv = NULL;
                bool sandbox_fault = false;
                int r = build_argv(b, j, -1, &argv, err);
                if (r >= 0)
                        r = run_helper(b, j, argv, NULL, w, ret, &sandbox_fault, err);
                sandbox_argv_free(argv);
                if (r >= 0) {
                        sandbox_pool_count_start(b->metrics, true);
                        sandbox_pool_observe_handoff(b->metrics, (double)ret->setup_us / 1e6);
                        return r;
                }
                /* The handoff itself failed: the sandbox never ran (proc_run
                 * waited for any that did). */
                if (w->ctl >= 0)
                        sandbox_pool_discard(b->pool, w);
                /* A warm sandbox that failed before the job could start: the
                 * job gets a cold one, in the same attempt. */
                if (!sandbox_fault || ret->proc.cancelled)
                        return r;
                /* Said, not only counted as a cold start: a host where no
                 * handoff can work (a capability missing) runs every job
                 * cold, and the operator must learn why. */
                log_event(LOG_WARN, "sandbox.warm_handoff_failed", "error", bc_error_message(err),
                          "effect", "the job runs on a cold sandbox in the same attempt", NULL);
                bc_error_clear(err);
        }
        /* A warm sandbox waits for the claim itself (start_warm); a cold
         * one is spawned only once it committed. */
        int r = backend_wait_claim(j, err);
        if (r < 0)
                return r;
        sandbox_pool_count_start(b->metrics, false);
        char **argv = NULL;
        bool sandbox_fault;
        char **helper_env = NULL;
        r = build_argv(b, j, 3, &argv, err);
        if (r >= 0)
                r = secret_env_split(argv, j->spec, &helper_env, err);
        if (r >= 0)
                r = run_helper(b, j, argv, helper_env, NULL, ret, &sandbox_fault, err);
        secret_env_free(helper_env);
        sandbox_argv_free(argv);
        return r;
}

static int sandbox_run(const struct backend *b, const struct backend_job *j,
                       struct backend_result *ret, struct bc_error *err)
{
        /* An allow-list job runs in a warm sandbox of network "none" (its
         * own namespace with loopback): the routes and proxy sockets of its
         * rules are added at handoff, before the job runs. */
        enum sandbox_network net = j->spec->network_host ? SANDBOX_NET_HOST : SANDBOX_NET_NONE;
        struct sandbox_warm w;
        /* The job counts as in flight for the pool's sizing, warm or not. */
        bool have_warm = sandbox_pool_take(b->pool, net, j->image_sha, &w);
        int r = run_warm_or_cold(b, j, have_warm, &w, ret, err);
        sandbox_pool_release(b->pool, net, j->image_sha);
        return r;
}

/* Inside, the workspace and boxcar's files are at fixed places. */
static void sandbox_inner_paths(const struct backend_job *j, const char **ret_workspace,
                                const char **ret_meta)
{
        (void)j;
        *ret_workspace = "/workspace";
        *ret_meta = BACKEND_META_DIR;
}

const struct backend_ops backend_sandbox_ops = {
        .name = "namespace",
        .run = sandbox_run,
        .inner_paths = sandbox_inner_paths,
};
