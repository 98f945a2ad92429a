/* The backends behind struct backend (backend.h), one table of operations
 * each, as sandbox/cgroup-internal.h has cgroup v1 and v2: backend_none.c
 * (plain processes) and backend_sandbox.c (boxcar-sandbox).  Shared by
 * backend.c and them only. */
#ifndef BC_WORKER_EXEC_BACKEND_INTERNAL_H
#define BC_WORKER_EXEC_BACKEND_INTERNAL_H

#include "worker/exec/backend.h"

struct backend_ops {
        const char *name; /* backend_name(), the result's "sandbox" */
        /* Runs j (ret zeroed, its backend named); as backend_run. */
        int (*run)(const struct backend *b, const struct backend_job *j,
                   struct backend_result *ret, struct bc_error *err);
        /* Where the job sees its workspace and j->meta_dir. */
        void (*inner_paths)(const struct backend_job *j, const char **ret_workspace,
                            const char **ret_meta);
};

/* One per worker, made at start-up (backend_new) and read-only after:
 * the slots share it. */
struct backend {
        const struct backend_ops *ops;
        const struct worker_config *cfg;
        /* The namespace backend's (backend_options); NULL elsewhere. */
        const char *cgroup_parent;
        struct sandbox_pool *pool;
        struct metrics *metrics;
};

extern const struct backend_ops backend_none_ops;
extern const struct backend_ops backend_sandbox_ops;

/* The job path's one wait for its claim (the job's services, services.h):
 * every way a backend starts a job's process passes here, right before it
 * spawns one, or right after it handed the job to a warm sandbox (which
 * starts it on claim_fd by itself: the wait then only keeps the worker
 * from noting the start of a job whose claim did not commit, which the
 * slot's cancel stops unstarted).  0 once the claim committed; else
 * ECANCELED with err set: the job must not start (the worker drops it). */
int backend_wait_claim(const struct backend_job *j, struct bc_error *err);

#endif
