/* The sandbox's file system: a fresh tmpfs root assembled at /tmp of the
 * child's private mount namespace, then made the root with pivot_root. */
#ifndef BC_SANDBOX_ROOTFS_INTERNAL_H
#define BC_SANDBOX_ROOTFS_INTERNAL_H

#include <stdbool.h>

#include "common/error.h"
#include "sandbox/helper-internal.h"

/* Where a failing setup step was, for the status object. */
struct setup_ctx {
        const struct helper_config *c;
        enum sbx_step step;
        char path[512];
        struct bc_error err;
};

/* Fails the current step on `path` with errno e: fills ctx, returns -e. */
int setup_fail(struct setup_ctx *x, int e, const char *path, const char *what);

/* The staging directory the new root is assembled in (inside the child's
 * mount namespace only). */
#define SBX_NEWROOT "/tmp"

/* Builds the whole tree: system binds, /etc, /workspace, /tmp and
 * /dev/shm (the --workspace and --scratch directories bound in place,
 * idmapped with idmap_fd when >= 0, or a tmpfs), /dev, /proc. */
int rootfs_build(struct setup_ctx *x, int idmap_fd);
/* Read-only root, pivot_root, old root detached, cwd /workspace. */
int rootfs_enter(struct setup_ctx *x);

/* Parts of rootfs_build living in their own files. */
int rootfs_etc(struct setup_ctx *x);
int rootfs_dev(struct setup_ctx *x);
int rootfs_proc(struct setup_ctx *x);
/* Binds host path src at NEWROOT/dest: recursive, read-only, nosuid,
 * nodev on every submount (mount_setattr AT_RECURSIVE, atomic). */
int rootfs_bind(struct setup_ctx *x, const char *src, const char *dest, unsigned long attrs);
/* mkdir -p of NEWROOT/rel (mode 0755). */
int rootfs_mkdirs(struct setup_ctx *x, const char *rel);
/* Writes a small file NEWROOT/rel with the given contents. */
int rootfs_write(struct setup_ctx *x, const char *rel, const char *data, mode_t mode);

#endif
