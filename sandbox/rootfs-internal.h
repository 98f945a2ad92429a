/* The sandbox's file system: a fresh tmpfs root assembled at /tmp of the
 * child's private mount namespace, then made the root with pivot_root.
 * rootfs.c orders the steps; the mounts are mount.c's primitives. */
#ifndef BC_SANDBOX_ROOTFS_INTERNAL_H
#define BC_SANDBOX_ROOTFS_INTERNAL_H

#include <stdbool.h>

#include "sandbox/setup-internal.h"

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

#endif
