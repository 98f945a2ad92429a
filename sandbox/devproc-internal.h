/* The sandbox's /dev and /proc (see devproc.c): parts of
 * rootfs_build_base. */
#ifndef BC_SANDBOX_DEVPROC_INTERNAL_H
#define BC_SANDBOX_DEVPROC_INTERNAL_H

#include "sandbox/setup-internal.h"

/* NEWROOT/dev: a read-only tmpfs with the harmless nodes and a private
 * devpts. */
int rootfs_dev(struct setup_ctx *x);
/* NEWROOT/proc: a new instance, its kernel-wide knobs read-only and its
 * leaks masked. */
int rootfs_proc(struct setup_ctx *x);

#endif
