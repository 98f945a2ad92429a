/* The sandbox's /etc (see etc.c): a part of rootfs_build_base. */
#ifndef BC_SANDBOX_ETC_INTERNAL_H
#define BC_SANDBOX_ETC_INTERNAL_H

#include "sandbox/setup-internal.h"

/* Makes NEWROOT/etc: the host's listed entries (or an image's /etc,
 * while rootfs_image_root() is open) and the generated files. */
int rootfs_etc(struct setup_ctx *x);

#endif
