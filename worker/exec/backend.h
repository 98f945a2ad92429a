/* How a prepared job is run: as a plain process (--sandbox none, for
 * development) or inside boxcar-sandbox (--sandbox namespace).  Both give
 * the same result shape, so job.c decides the outcome once. */
#ifndef BC_WORKER_EXEC_BACKEND_H
#define BC_WORKER_EXEC_BACKEND_H

#include <stdbool.h>

#include "common/error.h"
#include "worker/config/config.h"
#include "worker/exec/proc.h"
#include "worker/spec/spec.h"

/* Where boxcar's own files for a job (the script of a script job) appear
 * inside the sandbox, read-only. */
#define BACKEND_META_DIR "/run/boxcar"

struct claim_gate;

struct backend_job {
        const struct worker_config *cfg;
        const struct job_spec *spec;      /* env, workdir, limits, volumes, network */
        char *const *argv;                /* what to run, with paths as seen inside */
        double timeout_s;
        const char *workspace;     /* host directory that is the job's /workspace */
        const char *scratch;       /* host directory for /tmp and /dev/shm, or NULL */
        const char *meta_dir;      /* host directory shown at BACKEND_META_DIR */
        const char *const *volume_paths; /* host directories of spec->volumes, in order */
        const char *image_path;    /* host directory of spec's image (the job's root), or
                                    * NULL: the host's system directories */
        const char *image_sha;     /* its sha256 (the warm pool's key), or NULL */
        int cancel_fd;
        void (*on_output)(void *ctx, int stream, const char *data, size_t len);
        void *output_ctx;
        /* Whether the job's claim committed (claim_gate.h): nothing of the
         * job starts before it says so.  NULL: it had. */
        struct claim_gate *gate;
};

struct backend_result {
        struct proc_outcome proc;  /* exit status, timings, output tails */
        bool oom_killed;
        const char *backend;       /* "none" or "namespace" */
        uint64_t overhead_ms;      /* the sandbox's own setup + teardown time */
        uint64_t setup_us;         /* from having the job to its start (sandbox) */
        /* network.allow: what the egress proxy let through and refused;
         * net_refused_list (owned) names the first refused attempts. */
        bool has_network;
        uint64_t net_bytes_out, net_bytes_in, net_connections, net_refused;
        char **net_refused_list;
        size_t n_net_refused_list;
};

/* Waits for j's claim to commit: 0, or negative with err set when it did
 * not (the job must not start; the worker drops it). */
int backend_wait_claim(const struct backend_job *j, struct bc_error *err);

/* Runs the job to completion.  Returns 0 when it ran (whatever its exit
 * status), or a negative errno with err set (BC_SANDBOX_SETUP) when the
 * worker or the sandbox failed, not the job: such jobs are retried. */
int backend_run(const struct backend_job *j, struct backend_result *ret, struct bc_error *err);
void backend_result_done(struct backend_result *r);

/* Where the job sees its workspace and boxcar's files under this backend
 * (the host paths under --sandbox none). */
void backend_inner_paths(const struct backend_job *j, const char **ret_workspace,
                         const char **ret_meta);

/* argv, preceded by `sh -c 'cd -- "$0" && exec "$@"' DIR` when chdir_to is
 * not NULL; and the job's environment: PATH, HOME, LANG, then exactly the
 * spec's variables.  NULL-terminated; free with backend_strv_free. */
char **backend_command(char *const *argv, const char *chdir_to);
char **backend_env(const struct job_spec *spec, const char *home);
void backend_strv_free(char **v);

int backend_none_run(const struct backend_job *j, struct backend_result *ret,
                     struct bc_error *err);
int backend_sandbox_run(const struct backend_job *j, struct backend_result *ret,
                        struct bc_error *err);
/* The cgroup v2 directory job cgroups go in (sandbox_cgroup_prepare_worker),
 * passed to every helper as --cgroup-parent; NULL: none.  Set once by the
 * worker loop before any slot thread starts (thread creation orders it
 * before their reads), reset after they are joined.  Not copied: the
 * string must outlive the slots. */
void backend_sandbox_set_cgroup_parent(const char *parent);
struct sandbox_pool;
struct metrics;
/* The warm sandbox pool the namespace backend takes from (NULL: every
 * sandbox is cold), and where it counts; set before the slots start. */
void backend_sandbox_set_pool(struct sandbox_pool *p, struct metrics *m);

#endif
