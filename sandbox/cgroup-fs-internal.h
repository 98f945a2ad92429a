/* The cgroup filesystem's primitives (cgroup-fs.c), which the v1 and v2
 * backends, the backend choice (cgroup.c), the worker's v2 delegation and
 * the probes share: which hierarchy is mounted where, reading and writing
 * a cgroup's files, the helper's own cgroup, the sandbox's directory. */
#ifndef BC_SANDBOX_CGROUP_FS_INTERNAL_H
#define BC_SANDBOX_CGROUP_FS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sandbox/sandbox.h"

/* The hierarchy the sandbox cgroups go in: the v2 mount when controllers
 * live there (*ret_v2_root gets its path, a static string), else v1, else
 * SANDBOX_CGROUP_NONE.  *ret_v2_root is left alone but for v2. */
enum sandbox_cgroup_version cg_hierarchy(const char **ret_v2_root);

int cg_write(const char *dir, const char *file, const char *value, struct bc_error *err);
/* Reads "key N" from a flat-keyed file; 0 when absent. */
int cg_read_key(const char *dir, const char *file, const char *key, uint64_t *ret);
int cg_read_u64(const char *dir, const char *file, uint64_t *ret);
/* The helper's own cgroup path in the hierarchy holding `controller`
 * (NULL: the v2 "0::" line).  Caller frees. */
char *cg_own_path(const char *controller);
/* The same, from /proc/self/cgroup's content (read it once for many). */
char *cg_own_path_in(const char *proc_cgroup, const char *controller);
/* Creates dir/boxcar-sandbox-<pid>; returns the new path (caller frees). */
int cg_make_dir(const char *parent, char **ret_path, struct bc_error *err);
void cg_kill_procs(const char *dir);
/* Reads dir/file (at most size-1 bytes) into buf, NUL-terminated. */
int cg_read_file(const char *dir, const char *file, char *buf, size_t size);

/* cgroup v2 controller lists (cgroup.controllers, cgroup.subtree_control),
 * for the v2 backend and the worker's delegation. */
enum {
        CG_CTRL_MEMORY = 1u << 0,
        CG_CTRL_PIDS = 1u << 1,
        CG_CTRL_CPU = 1u << 2,
        CG_CTRL_ALL = CG_CTRL_MEMORY | CG_CTRL_PIDS | CG_CTRL_CPU,
};
/* The CG_CTRL_* bits named in a space-separated controller list (the
 * format of cgroup.controllers and cgroup.subtree_control). */
unsigned cg_v2_parse_controllers(const char *list);
/* "+memory +pids +cpu" for bits, in that order; -ENOBUFS if it won't fit. */
int cg_v2_format_enable(unsigned bits, char *buf, size_t size);

#endif
