/* Becoming an unprivileged process: identity, capabilities, rlimits, fds. */
#ifndef BC_SANDBOX_PRIVS_INTERNAL_H
#define BC_SANDBOX_PRIVS_INTERNAL_H

#include <sys/types.h>

#include "common/error.h"
#include "sandbox/helper-internal.h"

/* Drops every capability from every set (bounding, ambient, inheritable,
 * permitted, effective), locks the securebits so none come back, and
 * switches to uid:gid with no supplementary groups. */
int sbx_drop_privileges(uid_t uid, gid_t gid, struct bc_error *err);

/* The bounding set alone, ahead of sbx_drop_privileges: it only limits
 * what an execve may grant, so the capabilities in use stay usable. */
int sbx_drop_bounding_set(struct bc_error *err);

/* The last line of limits, for when cgroups are missing or bypassed. */
int sbx_set_rlimits(const struct helper_config *c, bool have_cgroup, struct bc_error *err);

/* Marks every fd above 2 close-on-exec, so the command starts with 0-2. */
int sbx_cloexec_from(int first, struct bc_error *err);

#endif
