#include "worker/exec/secret_env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "worker/spec/spec.h"

static bool is_secret(const struct job_spec *spec, const char *kv)
{
        const char *eq = strchr(kv, '=');
        if (!eq)
                return false;
        size_t n = (size_t)(eq - kv);
        for (size_t i = 0; i < spec->n_secrets; i++)
                if (strlen(spec->secrets[i].name) == n &&
                    memcmp(spec->secrets[i].name, kv, n) == 0)
                        return true;
        return false;
}

int secret_env_split(char **argv, const struct job_spec *spec, char ***ret_env,
                     struct bc_error *err)
{
        *ret_env = NULL;
        if (spec->n_secrets == 0)
                return 0;
        char **env = calloc(spec->n_secrets + 1, sizeof(*env));
        if (!env)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        size_t n = 0;
        for (size_t i = 0; argv[i] && argv[i + 1]; i++) {
                if (strcmp(argv[i], "--env") != 0 || !is_secret(spec, argv[i + 1]) ||
                    n >= spec->n_secrets)
                        continue;
                char *kv = argv[++i];
                env[n] = strdup(kv);
                if (!env[n]) {
                        secret_env_free(env);
                        return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
                }
                n++;
                char *eq = strchr(kv, '=');
                explicit_bzero(eq, strlen(eq));
        }
        *ret_env = env;
        return 0;
}

void secret_env_free(char **env)
{
        if (!env)
                return;
        for (char **p = env; *p; p++) {
                explicit_bzero(*p, strlen(*p));
                free(*p);
        }
        free(env);
}
