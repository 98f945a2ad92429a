/* The job's --workspace and --scratch directories, checked, and the
 * idmap namespace that gives a root-owned one to the job's ids
 * (supervise-dirs.c). */
#ifndef BC_SANDBOX_SUPERVISE_DIRS_INTERNAL_H
#define BC_SANDBOX_SUPERVISE_DIRS_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>

#include "sandbox/supervisor-internal.h"

/* Checks --workspace and --scratch of s->c and makes the idmap namespace
 * they need into s->idmap_fd, unless s->idmap_fd already maps their owner
 * (idmap_owner/idmap_group: whose ids it maps; -1 when none).  With
 * later, it only notes that one is needed (s->idmap_later, s->idmap_owner
 * and _group) for sbx_sup_make_idmap after the clone. */
int sbx_sup_prepare_dirs(struct supervisor *s, uid_t idmap_owner, gid_t idmap_group, bool later);
/* A user namespace mapping owner:group to the job's ids (s->c), for an
 * idmapped bind: its fd, or a negative errno. */
int sbx_sup_make_idmap(struct supervisor *s, uid_t owner, gid_t group);
/* The same for the workspace's owner, or -1 with the failure recorded. */
int sbx_sup_make_workspace_idmap(struct supervisor *s, uid_t owner, gid_t group);

#endif
