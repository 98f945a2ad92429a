/* How a prepared job is run: as a plain process (--sandbox none, for
 * development) or inside boxcar-sandbox (--sandbox namespace), each a
 * table of operations behind struct backend (backend-internal.h, as
 * sandbox/cgroup.c puts cgroup v1 and v2 behind one), chosen once at
 * start-up.  Both give the same result shape, so job.c decides the
 * outcome once. */
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

struct backend;
struct metrics;
struct sandbox_pool;

/* What the namespace backend runs with, set up at the worker's start
 * (worker/daemon/startup.c).  Not copied, not owned. */
struct backend_options {
        /* The cgroup v2 directory job cgroups go in
         * (sandbox_cgroup_prepare_worker), passed to every helper as
         * --cgroup-parent; NULL: none.  It must outlive every helper,
         * those reaped after their job too (proc_reaper_drain). */
        const char *cgroup_parent;
        /* The warm sandboxes the backend takes from (NULL: every sandbox
         * is cold); stopped only after the backend's last job. */
        struct sandbox_pool *pool;
        struct metrics *metrics; /* where sandbox starts are counted, or NULL */
};

/* The backend cfg->sandbox names (opts: NULL, none of them), chosen here
 * once: before the slots start, which then share it, read-only. */
int backend_new(const struct worker_config *cfg, const struct backend_options *opts,
                struct backend **ret, struct bc_error *err);
/* After its last job.  NULL-safe. */
void backend_free(struct backend *b);
/* "none" or "namespace": what the job's result and its "started" event
 * call the sandbox. */
const char *backend_name(const struct backend *b);

struct backend_job {
        const struct job_spec *spec; /* env, workdir, limits, volumes, network */
        const char *queue;           /* its queue: the network caps' (NULL: none) */
        char *const *argv;           /* what to run, with paths as seen inside */
        double timeout_s;
        const char *workspace;           /* host directory that is the job's /workspace */
        const char *scratch;             /* host directory for /tmp and /dev/shm, or NULL */
        const char *meta_dir;            /* host directory shown at BACKEND_META_DIR */
        const char *const *volume_paths; /* host directories of spec->volumes, in order */
        const char *image_path;          /* host directory of spec's image (the job's root), or
                                    * NULL: the host's system directories */
        const char *image_sha;           /* its sha256 (the warm pool's key), or NULL */
        int cancel_fd;
        /* The job's progress channel as the job sees it (BOXCAR_PROGRESS,
         * worker/job/progress_fifo.h), or NULL: none. */
        const char *progress_path;
        void (*on_output)(void *ctx, int stream, const char *data, size_t len);
        void *output_ctx;
        /* The job's claim (the job's services, services.h): nothing of the
         * job starts before claim_wait(claim_ctx) said it committed
         * (backend_wait_claim); a warm sandbox, handed the job before
         * that, starts it by itself once claim_fd is readable.  claim_wait
         * NULL, claim_fd -1: the claim had committed. */
        bool (*claim_wait)(void *ctx);
        void *claim_ctx;
        int claim_fd;
};

struct backend_result {
        struct proc_outcome proc; /* exit status, timings, output tails */
        bool oom_killed;
        const char *backend;  /* "none" or "namespace" */
        uint64_t overhead_ms; /* the sandbox's own setup + teardown time */
        uint64_t setup_us;    /* from having the job to its start (sandbox) */
        /* network.allow: what the egress proxy let through and refused;
         * net_refused_list (owned) names the first refused attempts. */
        bool has_network;
        uint64_t net_bytes_out, net_bytes_in, net_connections, net_refused;
        char **net_refused_list;
        size_t n_net_refused_list;
};

/* Runs the job to completion on b.  Returns 0 when it ran (whatever its
 * exit status), or a negative errno with err set (BC_SANDBOX_SETUP) when
 * the worker or the sandbox failed, not the job: such jobs are retried;
 * ECANCELED when its claim did not commit (it never started). */
int backend_run(const struct backend *b, const struct backend_job *j, struct backend_result *ret,
                struct bc_error *err);
void backend_result_done(struct backend_result *r);

/* Where the job sees its workspace and boxcar's files under b (the host
 * paths under --sandbox none). */
void backend_inner_paths(const struct backend *b, const struct backend_job *j,
                         const char **ret_workspace, const char **ret_meta);

/* argv, preceded by `sh -c 'cd -- "$0" && exec "$@"' DIR` when chdir_to is
 * not NULL; and the job's environment: PATH, HOME, LANG, BOXCAR_PROGRESS
 * (when progress, the channel's path as the job sees it, is not NULL),
 * then exactly the spec's variables.  NULL-terminated; free with
 * backend_strv_free. */
char **backend_command(char *const *argv, const char *chdir_to);
char **backend_env(const struct job_spec *spec, const char *home, const char *progress);
void backend_strv_free(char **v);

#endif
