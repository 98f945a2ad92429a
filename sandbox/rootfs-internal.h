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

/* The trees of one job, cloned detached (open_tree) before they are
 * attached: --workspace, --scratch/tmp, --scratch/shm (-1 when not
 * given) and the --ro-bind sources in their order. */
struct rootfs_bind_tree {
        int fd;
        bool is_dir;
};
struct rootfs_trees {
        int ws, tmp, shm;
        struct rootfs_bind_tree binds[64];
        size_t n_binds;
};
void rootfs_trees_init(struct rootfs_trees *t);
void rootfs_trees_close(struct rootfs_trees *t);
/* Clones x->c's trees (the rw ones idmapped with idmap_fd when >= 0).
 * Runs where the host paths are visible: the cold child before it mounts
 * anything, a warm sandbox's supervisor at handoff. */
int rootfs_capture_job(struct setup_ctx *x, int idmap_fd, struct rootfs_trees *t);
/* Idmaps the read-write trees captured without (idmap_fd -1) afterwards:
 * they must not be attached yet. */
int rootfs_idmap_trees(struct setup_ctx *x, const struct rootfs_trees *t, int idmap_fd);

/* The sandbox's root, in the order a sandbox is made:
 *   rootfs_build_base  tmpfs root at SBX_NEWROOT with the system binds,
 *                      /etc, /dev, /proc, /var/tmp: nothing of the job's
 *   rootfs_pivot       makes it the root (the old root detached)
 *   rootfs_attach_job  /workspace, /tmp, /dev/shm (the trees, or a tmpfs
 *                      of --disk-mb for what is not given) and the
 *                      read-only binds
 *   rootfs_seal        read-only root, cwd /workspace
 * A cold sandbox attaches before it pivots; a warm one pivots, waits for
 * its job, then its supervisor attaches the trees it captured. */
int rootfs_build_base(struct setup_ctx *x);
int rootfs_pivot(struct setup_ctx *x);
int rootfs_attach_job(struct setup_ctx *x, const struct rootfs_trees *t);
int rootfs_seal(struct setup_ctx *x);
/* Whether this process is in the entered root (paths without the
 * SBX_NEWROOT prefix): rootfs_pivot sets it; a warm supervisor, which
 * attaches a job from inside the sandbox's mount namespace, sets it for
 * that and back. */
void rootfs_set_entered(bool entered);

/* Parts of rootfs_build living in their own files. */
/* The image (--image): opened before the root tmpfs is mounted, then its
 * entries in place of the host's system dirs; rootfs_image_root() is the
 * path it is read through ("" before rootfs_image_open). */
int rootfs_image_open(struct setup_ctx *x);
int rootfs_image_dirs(struct setup_ctx *x);
const char *rootfs_image_root(void);
/* Closes what rootfs_image_open opened (nothing when it did not). */
void rootfs_image_close(void);
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
