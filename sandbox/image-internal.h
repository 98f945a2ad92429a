/* The root from an image (--image, see image.c): a part of
 * rootfs_build_base, and the path etc.c reads the image's /etc through. */
#ifndef BC_SANDBOX_IMAGE_INTERNAL_H
#define BC_SANDBOX_IMAGE_INTERNAL_H

#include "sandbox/setup-internal.h"

/* The image (--image): opened before the root tmpfs is mounted, then its
 * entries in place of the host's system dirs; rootfs_image_root() is the
 * path it is read through ("" before rootfs_image_open). */
int rootfs_image_open(struct setup_ctx *x);
int rootfs_image_dirs(struct setup_ctx *x);
const char *rootfs_image_root(void);
/* Closes what rootfs_image_open opened (nothing when it did not). */
void rootfs_image_close(void);

#endif
