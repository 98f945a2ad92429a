/* The interface of the cgroup backends (crun's layout): the table of
 * functions cgroup-v1.c and cgroup-v2.c each fill, and the sandbox
 * cgroup they work on.  cgroup.c picks one and calls it; the backends
 * call only the primitives of cgroup-fs-internal.h, never back up. */
#ifndef BC_SANDBOX_CGROUP_BACKEND_INTERNAL_H
#define BC_SANDBOX_CGROUP_BACKEND_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "sandbox/sandbox.h"

struct cg_limits {
        uint64_t memory_mb; /* 0: unlimited */
        uint32_t pids;      /* 0: unlimited; counts the sandbox's init too */
        double cpus;        /* 0: unlimited */
};

struct cg_stats {
        uint64_t oom_kills;
        uint64_t cpu_us;
        bool have_cpu;
};

/* Controller directories of one sandbox (v1: one per hierarchy). */
#define CG_MAX_DIRS 4

struct sbx_cgroup {
        const struct cg_backend *ops; /* NULL: no cgroup */
        char *dirs[CG_MAX_DIRS];
        size_t n_dirs;
        int memory_dir, pids_dir, cpu_dir, cpuacct_dir; /* index into dirs or -1 */
};

struct cg_backend {
        const char *name;
        enum sandbox_cgroup_version version;
        /* Creates the sandbox cgroup (under parent when not NULL, v2 only)
         * and applies the limits. */
        int (*create)(struct sbx_cgroup *cg, const struct cg_limits *l, const char *parent,
                      struct bc_error *err);
        /* Applies limits to a cgroup create made (a warm sandbox's is
         * made without any, its job's are known at handoff). */
        int (*limit)(struct sbx_cgroup *cg, const struct cg_limits *l, struct bc_error *err);
        int (*attach)(struct sbx_cgroup *cg, pid_t pid, struct bc_error *err);
        /* Opens the files through which a process moves itself in (v1:
         * each hierarchy's "tasks"); returns how many, 0 if unsupported. */
        int (*self_attach_fds)(struct sbx_cgroup *cg, int *fds, size_t max);
        /* Best-effort SIGKILL of everything left in the cgroup. */
        void (*kill_all)(struct sbx_cgroup *cg);
        void (*stats)(struct sbx_cgroup *cg, struct cg_stats *ret);
};

extern const struct cg_backend cg_backend_v1;
extern const struct cg_backend cg_backend_v2;

#endif
