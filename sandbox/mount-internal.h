/* The mount primitives the sandbox's root is assembled with (mount.c):
 * paths in the new root, directories and small files in it, binds
 * cloned detached and attached.  rootfs.c orders them into a root, and
 * devproc.c, etc.c and image.c use them for their parts; nothing here
 * calls back into those. */
#ifndef BC_SANDBOX_MOUNT_INTERNAL_H
#define BC_SANDBOX_MOUNT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/setup-internal.h"

/* The staging directory the new root is assembled in (inside the child's
 * mount namespace only). */
#define SBX_NEWROOT "/tmp"

/* NEWROOT/rel as this process sees it (see sbx_mount_set_entered) into
 * buf; -ENAMETOOLONG when it does not fit. */
int sbx_mount_path(char *buf, size_t n, const char *rel);
/* Whether this process is in the entered root (paths without the
 * SBX_NEWROOT prefix): rootfs_pivot sets it; a warm supervisor, which
 * attaches a job from inside the sandbox's mount namespace, sets it for
 * that and back. */
void sbx_mount_set_entered(bool entered);

/* mkdir -p of NEWROOT/rel (mode 0755). */
int sbx_mount_mkdirs(struct setup_ctx *x, const char *rel);
/* Writes a small file NEWROOT/rel with the given contents. */
int sbx_mount_write(struct setup_ctx *x, const char *rel, const char *data, mode_t mode);

/* Clones host path src (recursively, detached) with attrs applied to
 * every mount (mount_setattr AT_RECURSIVE, atomic): *ret_fd the clone,
 * *ret_is_dir whether src is a directory. */
int sbx_mount_capture(struct setup_ctx *x, const char *src, unsigned long attrs, int *ret_fd,
                      bool *ret_is_dir);
/* Attaches a clone at NEWROOT/dest, made as a directory or an empty file
 * (is_dir) first.  fd stays the caller's. */
int sbx_mount_attach(struct setup_ctx *x, int fd, const char *dest, bool is_dir);
/* Binds host path src at NEWROOT/dest: recursive, read-only, nosuid,
 * nodev on every submount (mount_setattr AT_RECURSIVE, atomic). */
int sbx_mount_bind(struct setup_ctx *x, const char *src, const char *dest, unsigned long attrs);

/* A host directory for a read-write bind: cloned without its submounts,
 * nosuid, nodev, idmapped with idmap_fd when >= 0 (*ret_fd the clone). */
int sbx_mount_capture_rw(struct setup_ctx *x, const char *src, int idmap_fd, int *ret_fd);
/* Sets attrs (and the idmap of idmap_fd when >= 0) on the clone fd of
 * src, not yet attached. */
int sbx_mount_set_rw_attrs(struct setup_ctx *x, int fd, const char *src, uint64_t attrs,
                           int idmap_fd);

#endif
