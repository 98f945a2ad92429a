/* A cold sandbox helper's command line is world-readable
 * (/proc/PID/cmdline, `ps`), its environment is not (ptrace access
 * rules): the values of a job's secrets go to the helper in its
 * environment, its argv says only "--env NAME" (sandbox/options.c takes
 * NAME's value from its own environment).  A warm helper gets argv over
 * its socket and needs no such split. */
#ifndef BC_WORKER_EXEC_SECRET_ENV_H
#define BC_WORKER_EXEC_SECRET_ENV_H

#include "common/error.h"

struct job_spec;

/* Rewrites each "--env NAME=value" of argv whose NAME is a secret of spec
 * to "--env NAME" (the value wiped in place) and returns the NAME=value
 * entries in *ret_env (NULL-terminated; free with secret_env_free), or
 * NULL when spec has no secrets. */
int secret_env_split(char **argv, const struct job_spec *spec, char ***ret_env,
                     struct bc_error *err);

/* Wipes and frees; NULL-safe. */
void secret_env_free(char **env);

#endif
