/* The mount primitives of the sandbox's root (see mount-internal.h).
 * They run in the child, in its new mount namespace, as root of it (real
 * root, or root-equivalent in a new user namespace); a warm sandbox's
 * supervisor clones and attaches its job's trees with them too.  Every
 * bind is made with the new mount API: open_tree() clones the source tree
 * detached, mount_setattr(AT_RECURSIVE) makes the whole clone
 * read-only/nosuid/nodev in one atomic step (no window, no submount
 * missed, unlike remounting each entry of mountinfo), and move_mount()
 * attaches it.  Needs Linux 5.12. */
#include "sandbox/mount-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

/* Where the new root is, as seen by this process: SBX_NEWROOT while it
 * is assembled, "" once pivot_root made it "/" (a warm sandbox attaches
 * its job's trees after that). */
static const char *root_prefix = SBX_NEWROOT;

int sbx_mount_path(char *buf, size_t n, const char *rel)
{
        while (*rel == '/')
                rel++;
        return snprintf(buf, n, "%s/%s", root_prefix, rel) >= (int)n ? -ENAMETOOLONG : 0;
}

void sbx_mount_set_entered(bool entered)
{
        root_prefix = entered ? "" : SBX_NEWROOT;
}

int sbx_mount_mkdirs(struct setup_ctx *x, const char *rel)
{
        char p[PATH_MAX];
        if (sbx_mount_path(p, sizeof(p), rel) < 0)
                return setup_fail(x, ENAMETOOLONG, rel, "mkdir");
        for (char *s = p + strlen(root_prefix) + 1;; s++) {
                bool end = *s == '\0';
                if (*s == '/' || end) {
                        *s = '\0';
                        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                                return setup_fail(x, errno, rel, "mkdir");
                        if (end)
                                return 0;
                        *s = '/';
                }
        }
}

int sbx_mount_write(struct setup_ctx *x, const char *rel, const char *data, mode_t mode)
{
        char p[PATH_MAX];
        if (sbx_mount_path(p, sizeof(p), rel) < 0)
                return setup_fail(x, ENAMETOOLONG, rel, "write");
        _cleanup_fd_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return setup_fail(x, errno, rel, "create");
        size_t len = strlen(data);
        if (write(fd, data, len) != (ssize_t)len)
                return setup_fail(x, errno ? errno : EIO, rel, "write");
        return 0;
}

/* Makes the mount point for a tree: a directory, or an empty file when
 * the source is a file (a bind must land on the same kind of inode). */
static int make_mountpoint(struct setup_ctx *x, const char *dest, bool is_dir)
{
        if (is_dir)
                return sbx_mount_mkdirs(x, dest);
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%s", dest);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
                *slash = '\0';
                int r = sbx_mount_mkdirs(x, parent);
                if (r < 0)
                        return r;
        }
        char p[PATH_MAX];
        if (sbx_mount_path(p, sizeof(p), dest) < 0)
                return setup_fail(x, ENAMETOOLONG, dest, "create");
        /* An existing file (a /proc entry) is a mount point as it is:
         * opening it for writing, as O_CREAT needs, can be refused (Linux
         * 6.1 refuses /proc/sysrq-trigger to a user namespace's root). */
        struct stat st;
        if (lstat(p, &st) == 0 && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
                return 0;
        int fd = open(p, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0444);
        if (fd < 0)
                return setup_fail(x, errno, dest, "create");
        close(fd);
        return 0;
}

/* Clones src (recursively, detached) with attrs applied to every mount. */
int sbx_mount_capture(struct setup_ctx *x, const char *src, unsigned long attrs, int *ret_fd,
                      bool *ret_is_dir)
{
        struct stat st;
        if (stat(src, &st) < 0)
                return setup_fail(x, errno, src, "stat");
        int fd = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (fd < 0)
                return setup_fail(x, errno, src, "open_tree");
        struct mount_attr a = { .attr_set = attrs };
        if (attrs && mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0) {
                int e = errno;
                close(fd);
                return setup_fail(x, e, src, "mount_setattr");
        }
        *ret_fd = fd;
        *ret_is_dir = S_ISDIR(st.st_mode);
        return 0;
}

int sbx_mount_attach(struct setup_ctx *x, int fd, const char *dest, bool is_dir)
{
        int r = make_mountpoint(x, dest, is_dir);
        if (r < 0)
                return r;
        char p[PATH_MAX];
        if (sbx_mount_path(p, sizeof(p), dest) < 0)
                return setup_fail(x, ENAMETOOLONG, dest, "move_mount");
        if (move_mount(fd, "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return setup_fail(x, errno, dest, "move_mount");
        return 0;
}

int sbx_mount_bind(struct setup_ctx *x, const char *src, const char *dest, unsigned long attrs)
{
        int fd = -1;
        bool is_dir = false;
        int r = sbx_mount_capture(x, src, attrs, &fd, &is_dir);
        if (r < 0)
                return r;
        r = sbx_mount_attach(x, fd, dest, is_dir);
        close(fd);
        return r;
}

/* A host directory to bind read-write, cloned (never recursively: what is
 * mounted below it on the host stays outside).  With idmap_fd, the mount
 * maps the directory's owner to the job's uid/gid, so the job owns what
 * it finds, and what it creates stays the owner's on the host. */
int sbx_mount_set_rw_attrs(struct setup_ctx *x, int fd, const char *src, uint64_t attrs,
                           int idmap_fd)
{
        struct mount_attr a = { .attr_set = attrs };
        if (idmap_fd >= 0) {
                a.attr_set |= MOUNT_ATTR_IDMAP;
                a.userns_fd = (uint64_t)idmap_fd;
        }
        if (mount_setattr(fd, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
                return setup_fail(x, errno, src,
                                  idmap_fd >= 0 ? "idmapped mount (the filesystem "
                                                  "must support idmapped mounts)"
                                                : "mount_setattr");
        return 0;
}

int sbx_mount_capture_rw(struct setup_ctx *x, const char *src, int idmap_fd, int *ret_fd)
{
        int fd = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (fd < 0)
                return setup_fail(x, errno, src, "open_tree");
        int r = sbx_mount_set_rw_attrs(x, fd, src, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, idmap_fd);
        if (r < 0) {
                close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}
