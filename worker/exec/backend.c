/* The backend chosen at start-up, and what the backends share. */
#include "worker/exec/backend-internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"

/* By --sandbox: the one choice of a backend. */
static const struct backend_ops *const by_kind[] = {
        [BACKEND_NONE] = &backend_none_ops,
        [BACKEND_NAMESPACE] = &backend_sandbox_ops,
};

int backend_new(const struct worker_config *cfg, const struct backend_options *opts,
                struct backend **ret, struct bc_error *err)
{
        if ((size_t)cfg->sandbox >= ELEMENTSOF(by_kind) || !by_kind[cfg->sandbox])
                return bc_error_set(err, BC_CONFIG, EINVAL, "unknown sandbox backend %d",
                                    (int)cfg->sandbox);
        struct backend *b = calloc(1, sizeof(*b));
        if (!b)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        b->ops = by_kind[cfg->sandbox];
        b->cfg = cfg;
        if (opts) {
                b->cgroup_parent = opts->cgroup_parent;
                b->pool = opts->pool;
                b->metrics = opts->metrics;
        }
        *ret = b;
        return 0;
}

void backend_free(struct backend *b)
{
        free(b);
}

const char *backend_name(const struct backend *b)
{
        return b->ops->name;
}

void backend_strv_free(char **v)
{
        if (!v)
                return;
        for (char **p = v; *p; p++)
                free(*p);
        free(v);
}

static bool env_has(char *const *env, const char *name)
{
        size_t n = strlen(name);
        for (; *env; env++)
                if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
                        return true;
        return false;
}

char **backend_env(const struct job_spec *spec, const char *home, const char *progress)
{
        size_t n = 0;
        while (spec->env[n])
                n++;
        char **env = calloc(n + 5, sizeof(char *));
        if (!env)
                return NULL;
        size_t i = 0;
        bool ok = true;
        if (!env_has(spec->env, "PATH"))
                ok &= (env[i++] = strdup("PATH=/usr/local/bin:/usr/bin:/bin")) != NULL;
        if (!env_has(spec->env, "HOME"))
                ok &= asprintf(&env[i++], "HOME=%s", home) >= 0;
        if (!env_has(spec->env, "LANG"))
                ok &= (env[i++] = strdup("LANG=C.UTF-8")) != NULL;
        if (progress)
                ok &= asprintf(&env[i++], "BOXCAR_PROGRESS=%s", progress) >= 0;
        for (size_t k = 0; k < n; k++) {
                /* The channel is the worker's to name: a spec's own value
                 * would only send the job's reports nowhere. */
                if (progress && strncmp(spec->env[k], "BOXCAR_PROGRESS=", 16) == 0)
                        continue;
                ok &= (env[i++] = strdup(spec->env[k])) != NULL;
        }
        if (!ok) {
                backend_strv_free(env);
                return NULL;
        }
        return env;
}

char **backend_command(char *const *argv, const char *chdir_to)
{
        /* The directory and the command travel as arguments, never spliced
         * into shell text. */
        static const char *const enter[] = { "/bin/sh", "-c", "cd -- \"$0\" && exec \"$@\"" };
        size_t argc = 0;
        while (argv[argc])
                argc++;
        char **out = calloc(argc + 5, sizeof(char *));
        if (!out)
                return NULL;
        size_t i = 0;
        bool ok = true;
        if (chdir_to) {
                for (size_t k = 0; k < 3; k++)
                        ok &= (out[i++] = strdup(enter[k])) != NULL;
                ok &= (out[i++] = strdup(chdir_to)) != NULL;
        }
        for (size_t k = 0; k < argc; k++)
                ok &= (out[i++] = strdup(argv[k])) != NULL;
        if (!ok) {
                backend_strv_free(out);
                return NULL;
        }
        return out;
}

void backend_inner_paths(const struct backend *b, const struct backend_job *j,
                         const char **ret_workspace, const char **ret_meta)
{
        b->ops->inner_paths(j, ret_workspace, ret_meta);
}

int backend_wait_claim(const struct backend_job *j, struct bc_error *err)
{
        if (!j->claim_wait || j->claim_wait(j->claim_ctx))
                return 0;
        return bc_error_set(err, BC_INTERNAL, ECANCELED,
                            "not started: the claim of the job did not commit");
}

int backend_run(const struct backend *b, const struct backend_job *j, struct backend_result *ret,
                struct bc_error *err)
{
        memset(ret, 0, sizeof(*ret));
        ret->backend = b->ops->name;
        return b->ops->run(b, j, ret, err);
}

void backend_result_done(struct backend_result *r)
{
        if (!r)
                return;
        proc_outcome_done(&r->proc);
        for (size_t i = 0; i < r->n_net_refused_list; i++)
                free(r->net_refused_list[i]);
        free(r->net_refused_list);
        r->net_refused_list = NULL;
        r->n_net_refused_list = 0;
}
