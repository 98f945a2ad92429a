/* Copying the workspace between the host directory and the sandbox's
 * size-limited tmpfs, safely against what the job leaves behind: no
 * symlink is ever followed (on either side), only directories, regular
 * files and symlinks are copied, set-id bits are dropped. */
#ifndef BC_SANDBOX_WSYNC_INTERNAL_H
#define BC_SANDBOX_WSYNC_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

struct ws_copy_opts {
        bool chown;        /* give every copied entry to uid:gid */
        uid_t uid;
        gid_t gid;
        bool owner_rw;     /* make sure the owner can read/write (dirs: rwx) */
};

/* Copies the contents of src_dir into dst_dir (which should be empty).
 * Both are directory fds and stay open. */
int ws_copy_tree(int src_dir, int dst_dir, const struct ws_copy_opts *o, struct bc_error *err);

/* Removes everything inside dir (not dir itself), never following a
 * symlink out of it. */
int ws_clear(int dir, struct bc_error *err);

#endif
