/* The worker's own files inside a job's workspace (.boxcar/state.json,
 * .boxcar/return.json).  The job controls that tree, so every component
 * is opened with O_NOFOLLOW from the workspace down: a symlink planted
 * there (to /etc/shadow, say) is refused, never followed. */
#ifndef BC_WORKER_WORKDIR_WSFILE_H
#define BC_WORKER_WORKDIR_WSFILE_H

#include <stddef.h>
#include <sys/stat.h>

#include "common/error.h"

/* Reads workspace/rel (rel = "dir/file", one directory level) into a new
 * NUL-terminated buffer of at most max bytes.  Returns 1 and sets *ret_data
 * and *ret_len, 0 when the file does not exist, negative on error (a
 * symlink, a non-regular file, or more than max bytes). */
int wsfile_read(const char *workspace, const char *rel, size_t max, char **ret_data,
                size_t *ret_len, struct bc_error *err);

/* Replaces workspace/rel with text, creating the directory if needed. */
int wsfile_write(const char *workspace, const char *rel, const char *text, struct bc_error *err);

/* Removes workspace/rel if it exists (a symlink itself is removed, never
 * followed). */
int wsfile_remove(const char *workspace, const char *rel, struct bc_error *err);

/* What the worker creates in a workspace belongs to the workspace's
 * owner (ws: its root's stat): nothing to do where that is the worker
 * (the sandbox then maps it to the job through an idmapped bind); where
 * it is the job's identity (an overlay workspace, bound without an idmap)
 * name under dirfd is given to it, so the job may change it as before.
 * Never follows a symlink.  0 or -errno. */
int wsfile_adopt(const struct stat *ws, int dirfd, const char *name);

#endif
