/* A warm sandbox's supervisor (see warm.c). */
#ifndef BC_SANDBOX_WARM_INTERNAL_H
#define BC_SANDBOX_WARM_INTERNAL_H

#include "sandbox/helper-internal.h"
#include "sandbox/supervisor-internal.h"

struct warm {
        struct supervisor s;
        const struct helper_config *wc; /* the warm options */
        int ctl;
        struct helper_config job; /* the job's options, once received */
        char *blob;
        char **job_argv;
        bool have_job;
        int status_fd;
        int go_fd; /* -1: start at once */
        /* The supervisor's own mount and network namespaces and working
         * directory, to come back to from the sandbox's: opened while the
         * sandbox is made, since on the job's path (an idle host's cold
         * caches) opening /proc/self/ns/mnt alone took about 45 µs. */
        int home_mnt, home_net, home_cwd;
        /* Why there is no cgroup (e.g. an unprivileged helper on v1): not
         * fatal until a job asks for limits, as in the cold path. */
        char cg_error[256];
        /* The limits the warm options ask for (--memory-mb, --pids,
         * --cpus), written while the sandbox was made; have_preset if
         * that went well: a job asking the same has nothing to write. */
        struct cg_limits preset;
        bool have_preset;
};

/* The cgroup limits a config asks for (its pids count init too). */
static inline struct cg_limits sbx_warm_limits_of(const struct helper_config *c)
{
        return (struct cg_limits){ .memory_mb = c->memory_mb,
                                   .cpus = c->cpus,
                                   .pids = c->pids ? c->pids + 1 : 0 };
}

/* ---- warm-build.c: before the job ---- */
/* The cgroup, its preset limits, the job's user namespace, the signals:
 * before the sandbox's child is cloned.  -1 when the sandbox cannot be. */
int sbx_warm_prepare(struct warm *w);
void sbx_warm_make_idmap_ahead(struct warm *w);
int sbx_warm_wait_built(struct warm *w);
/* Built: back at the worker's priority, and the build's CPU time noted. */
int sbx_warm_restore_priority(struct warm *w);
void sbx_warm_note_cpu_base(struct warm *w);

/* --warm: makes the sandbox, reports it ready on c->control_fd, runs the
 * one job that comes over it; writes the status to the fd the job brought.
 * Returns the exit code. */
int sbx_supervise_warm(const struct helper_config *c);

#endif
