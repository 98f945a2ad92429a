/* --sandbox none: the job's command as a plain child process in its own
 * process group.  No isolation and no memory/cpu/pids/disk limits: for
 * development only, as `boxcar worker --help` says. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "worker/exec/backend-internal.h"

/* /workspace/x maps to the job's host directory; other paths are used as
 * they are on the host. */
static char *host_workdir(const struct job_spec *spec, const char *ws)
{
        char *p = NULL;
        const char *rest = spec->workdir + strlen("/workspace");
        if (strncmp(spec->workdir, "/workspace", 10) == 0 && (*rest == '\0' || *rest == '/')) {
                if (asprintf(&p, "%s%s", ws, rest) < 0)
                        return NULL;
                return p;
        }
        return strdup(spec->workdir);
}

static int none_run(const struct backend *b, const struct backend_job *j,
                    struct backend_result *ret, struct bc_error *err)
{
        const struct job_spec *spec = j->spec;
        _cleanup_free_ char *cwd = host_workdir(spec, j->workspace);
        if (!cwd)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        if (mkdir(cwd, 0755) < 0 && errno != EEXIST)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "workdir %s: %m", spec->workdir);
        char **argv = backend_command(j->argv, NULL);
        char **env = backend_env(spec, j->workspace, j->progress_path);
        int r = 0;
        if (!argv || !env) {
                r = bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        } else {
                uint64_t cap = spec->limits.output_bytes < b->cfg->max_output_bytes
                                       ? spec->limits.output_bytes
                                       : b->cfg->max_output_bytes;
                struct proc_request req = {
                        .argv = argv,
                        .envp = env,
                        .cwd = cwd,
                        .timeout_s = j->timeout_s,
                        .output_cap = (size_t)cap,
                        .cancel_fd = j->cancel_fd,
                        .on_output = j->on_output,
                        .ctx = j->output_ctx,
                        .kill_signal = SIGKILL,
                        .kill_grace_s = 1,
                        .pass_fd = -1,
                        .guard = true,
                };
                r = backend_wait_claim(j, err);
                if (r >= 0)
                        r = proc_run(&req, &ret->proc, err);
        }
        backend_strv_free(argv);
        backend_strv_free(env);
        return r;
}

/* The job sees the host's paths. */
static void none_inner_paths(const struct backend_job *j, const char **ret_workspace,
                             const char **ret_meta)
{
        *ret_workspace = j->workspace;
        *ret_meta = j->meta_dir;
}

const struct backend_ops backend_none_ops = {
        .name = "none",
        .run = none_run,
        .inner_paths = none_inner_paths,
};
