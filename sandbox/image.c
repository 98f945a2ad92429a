/* The sandbox's root from an image (--image DIR: an unpacked root
 * filesystem) instead of the host's system directories.
 *
 * The root stays the small tmpfs every sandbox has; the image's top-level
 * entries are bound into it read-only, nosuid, nodev (so its setuid
 * programs and device nodes are inert, whatever the unpacking left), its
 * symlinks recreated.  The image itself is never written: it is shared by
 * every sandbox that runs on it, from the worker's cache.
 *
 * A directory on the way to a mount point the sandbox makes (/dev, /proc,
 * /tmp, /workspace, /run/boxcar, a volume, /var/tmp...) cannot be bound
 * whole, since a read-only bind cannot take a new mount point: it is
 * made on the tmpfs instead and its entries bound one level down, as far
 * as needed.  An image is hostile input: a symlink where such a
 * directory must go is refused (mkdir and mount would follow it, before
 * pivot_root even to the host's tree). */
#include "sandbox/image-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/mount-internal.h"

#define IMAGE_RO_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

/* Where the sandbox mounts or makes something of its own.  /etc is
 * assembled by rootfs_etc, /var/tmp is a symlink to /tmp; /run and /mnt
 * are kept open for a warm sandbox, whose job's binds (/run/boxcar,
 * volumes) are only known later. */
static const char *const fixed[] = { "dev", "proc", "sys", "tmp",    "workspace",
                                     "etc", "run",  "mnt", "var/tmp" };

enum place { PLACE_IMAGE, PLACE_ON_THE_WAY, PLACE_OURS };

/* The image as opened before anything was mounted ("/proc/self/fd/N"):
 * the root tmpfs goes on SBX_NEWROOT (/tmp), which would hide an image
 * kept below it. */
static int image_fd = -1;
static char image_root[64];

int rootfs_image_open(struct setup_ctx *x)
{
        x->step = SBX_STEP_MOUNT;
        image_fd = open(x->c->image, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (image_fd < 0)
                return setup_fail(x, errno, x->c->image, "open image");
        snprintf(image_root, sizeof(image_root), "/proc/self/fd/%d", image_fd);
        return 0;
}

void rootfs_image_close(void)
{
        if (image_fd >= 0)
                close(image_fd);
        image_fd = -1;
        image_root[0] = '\0';
}

const char *rootfs_image_root(void)
{
        return image_root;
}

/* Whether rel (relative, normalised) is a mount point of ours, on the way
 * to one, or the image's alone. */
static enum place place_of(const struct helper_config *c, const char *rel)
{
        size_t n = strlen(rel);
        enum place p = PLACE_IMAGE;
        for (size_t i = 0; i < ELEMENTSOF(fixed) + c->n_ro_binds; i++) {
                const char *m = i < ELEMENTSOF(fixed)
                                        ? fixed[i]
                                        : c->ro_binds[i - ELEMENTSOF(fixed)].dest + 1;
                if (strcmp(m, rel) == 0)
                        return PLACE_OURS;
                if (strncmp(m, rel, n) == 0 && m[n] == '/')
                        p = PLACE_ON_THE_WAY;
        }
        return p;
}

static int recreate_symlink(struct setup_ctx *x, const char *src, const char *rel)
{
        char target[PATH_MAX], p[PATH_MAX];
        ssize_t n = readlink(src, target, sizeof(target) - 1);
        if (n < 0)
                return setup_fail(x, errno, src, "readlink");
        target[n] = '\0';
        if (snprintf(p, sizeof(p), "%s/%s", SBX_NEWROOT, rel) >= (int)sizeof(p))
                return setup_fail(x, ENAMETOOLONG, rel, "symlink");
        if (symlink(target, p) < 0)
                return setup_fail(x, errno, rel, "symlink");
        return 0;
}

static int image_level(struct setup_ctx *x, const char *rel, unsigned depth);

/* One entry of the image, rel being its path inside. */
static int image_entry(struct setup_ctx *x, const char *rel, unsigned depth)
{
        char src[PATH_MAX];
        if (snprintf(src, sizeof(src), "%s/%s", image_root, rel) >= (int)sizeof(src))
                return setup_fail(x, ENAMETOOLONG, rel, "image");
        struct stat st;
        if (lstat(src, &st) < 0)
                return setup_fail(x, errno, src, "lstat");
        switch (place_of(x->c, rel)) {
        case PLACE_OURS:
                /* Kept as an empty directory (what the sandbox puts there
                 * comes later), but for /var/tmp, a symlink to /tmp. */
                return S_ISDIR(st.st_mode) && strcmp(rel, "var/tmp") != 0
                               ? sbx_mount_mkdirs(x, rel)
                               : 0;
        case PLACE_ON_THE_WAY:
                if (!S_ISDIR(st.st_mode))
                        return setup_fail(x, ELOOP, rel,
                                          "image: not a directory where a "
                                          "mount point must go");
                return image_level(x, rel, depth + 1);
        case PLACE_IMAGE:
                break;
        }
        if (S_ISLNK(st.st_mode))
                return recreate_symlink(x, src, rel);
        if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))
                return sbx_mount_bind(x, src, rel, IMAGE_RO_ATTRS);
        return 0; /* devices, fifos, sockets: never shown */
}

/* Makes rel on the root tmpfs and shows the image's entries below it. */
static int image_level(struct setup_ctx *x, const char *rel, unsigned depth)
{
        if (depth > 32)
                return setup_fail(x, ELOOP, rel, "image: mount point too deep");
        if (*rel) {
                int r = sbx_mount_mkdirs(x, rel);
                if (r < 0)
                        return r;
        }
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof(dir), "%s/%s", image_root, rel) >= (int)sizeof(dir))
                return setup_fail(x, ENAMETOOLONG, rel, "image");
        /* O_NOFOLLOW: every level was lstat'ed as a directory, and stays one. */
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_(closedirp) DIR *d = fd < 0 ? NULL : fdopendir(fd);
        if (!d) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                return setup_fail(x, e, dir, "open image");
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                char child[PATH_MAX];
                if (snprintf(child, sizeof(child), "%s%s%s", rel, *rel ? "/" : "", de->d_name) >=
                    (int)sizeof(child))
                        return setup_fail(x, ENAMETOOLONG, de->d_name, "image");
                int r = image_entry(x, child, depth);
                if (r < 0)
                        return r;
        }
        return 0;
}

int rootfs_image_dirs(struct setup_ctx *x)
{
        x->step = SBX_STEP_MOUNT;
        return image_level(x, "", 0);
}
