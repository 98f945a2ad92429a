/* Per-sandbox cgroups behind a small table of backends (crun's layout):
 * cgroup v2 where it is the controllers' hierarchy, v1 where only v1
 * controllers are mounted.  The sandbox cgroup is named
 * boxcar-sandbox-<helper pid> and removed afterwards.  It is a child of
 * the helper's own cgroup (so limits set on the worker's cgroup still
 * bound every job), except on v2 with --cgroup-parent: then it is a child
 * of that directory, the worker's delegated cgroup whose only process-
 * holding child is the worker's leaf (see sandbox_cgroup_prepare_worker).
 *
 * This header: the backend choice and sbx_cgroup_* (cgroup.c) and the
 * worker's v2 delegation (cgroup-delegate.c), both above the backends
 * (cgroup-backend-internal.h) and the primitives (cgroup-fs-internal.h). */
#ifndef BC_SANDBOX_CGROUP_INTERNAL_H
#define BC_SANDBOX_CGROUP_INTERNAL_H

#include "sandbox/cgroup-backend-internal.h"
/* The callers of cg_detect (detect.c, cgroup-dead.c) and the unit tests
 * read the hierarchy with these too. */
#include "sandbox/cgroup-fs-internal.h"

/* Picks the backend for this host: the v2 mount when controllers live
 * there, else v1.  NULL when neither is usable. *ret_root gets the v2 root
 * (static string) for v2. */
const struct cg_backend *cg_detect(const char **ret_v2_root);

/* Creates the sandbox cgroup when l asks for a limit (else succeeds with
 * cg->ops == NULL: the pid namespace still bounds the job's lifetime);
 * fails when a limit is asked for and cannot be applied.  parent (NULL:
 * the helper's own cgroup) is the --cgroup-parent directory; v1 ignores it. */
int sbx_cgroup_create(struct sbx_cgroup *cg, const struct cg_limits *l, const char *parent,
                      struct bc_error *err);
/* A warm sandbox's cgroup: made whatever the host offers (none when it has
 * no controllers: then a job with limits fails at sbx_cgroup_limit). */
int sbx_cgroup_create_unlimited(struct sbx_cgroup *cg, const char *parent, struct bc_error *err);
int sbx_cgroup_limit(struct sbx_cgroup *cg, const struct cg_limits *l, struct bc_error *err);
int sbx_cgroup_attach(struct sbx_cgroup *cg, pid_t pid, struct bc_error *err);
/* Fills fds (O_WRONLY, close-on-exec) for the child to move itself in by
 * writing "0" to each: a single thread moving itself skips the global
 * threadgroup lock whose RCU sync makes a v1 migration by pid cost
 * milliseconds.  Returns the count; 0 means "use sbx_cgroup_attach". */
int sbx_cgroup_self_attach_fds(struct sbx_cgroup *cg, int *fds, size_t max);
/* The child's side: writes "0" to each fd and closes it. */
int sbx_cgroup_self_attach(const int *fds, size_t n);
void sbx_cgroup_kill_all(struct sbx_cgroup *cg);
void sbx_cgroup_stats(struct sbx_cgroup *cg, struct cg_stats *ret);
/* Removes the cgroup directories (retrying while the last tasks exit) and
 * frees cg.  NULL-safe, idempotent. */
void sbx_cgroup_destroy(struct sbx_cgroup *cg);

/* cgroup v2 delegation: the pure parts, unit-tested on their own (the
 * controller lists are in cgroup-fs-internal.h). */

/* The v2 path ("0::/a/b") in /proc/self/cgroup's content, validated:
 * absolute, no "." or ".." component (a process outside its cgroup
 * namespace's root sees "/../x": nothing we may manage).  -ENOENT when
 * there is no v2 line (a pure v1 host), -EINVAL when malformed.  Caller
 * frees *ret. */
int cg_v2_parse_own(const char *proc_cgroup, char **ret);
/* Name of the worker's leaf, a child of its original cgroup. */
#define CG_WORKER_LEAF "boxcar-worker"
/* The cgroup (relative to the v2 root, "/" for the root) that job cgroups
 * go under, for a worker whose cgroup is own: own itself, or own's parent
 * when own already is the worker's leaf (a restarted or re-prepared
 * worker must not nest leaf in leaf).  Caller frees *ret. */
int cg_v2_worker_parent(const char *own, char **ret);

/* Where sandbox_cgroup_prepare_worker looks, so tests can point it at a
 * tree of plain files. */
struct cg_worker_paths {
        const char *root;        /* the cgroup2 mount, e.g. /sys/fs/cgroup */
        const char *proc_cgroup; /* e.g. /proc/self/cgroup */
};
/* sandbox_cgroup_prepare_worker's procedure once the host is known to be
 * v2: no statfs, only reads, a mkdir and writes under paths->root. */
int cg_prepare_worker_at(const struct cg_worker_paths *paths, char **ret_parent,
                         struct bc_error *err);

#endif
