/* Assembling the sandbox's root.  Runs in the child, in its new mount
 * namespace, as root of it (real root, or root-equivalent in a new user
 * namespace).  Every bind is made with the new mount API: open_tree()
 * clones the source tree detached, mount_setattr(AT_RECURSIVE) makes the
 * whole clone read-only/nosuid/nodev in one atomic step (no window, no
 * submount missed, unlike remounting each entry of mountinfo), and
 * move_mount() attaches it.  Needs Linux 5.12. */
#include "sandbox/rootfs-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"

int setup_fail(struct setup_ctx *x, int e, const char *path, const char *what)
{
        snprintf(x->path, sizeof(x->path), "%s", path ? path : "");
        return bc_error_set(&x->err, BC_SANDBOX_SETUP, e, "%s %s: %s", what, path ? path : "",
                            strerror(e));
}

/* Where the new root is, as seen by this process: SBX_NEWROOT while it
 * is assembled, "" once pivot_root made it "/" (a warm sandbox attaches
 * its job's trees after that). */
static const char *root_prefix = SBX_NEWROOT;

static int newroot_path(char *buf, size_t n, const char *rel)
{
        while (*rel == '/')
                rel++;
        return snprintf(buf, n, "%s/%s", root_prefix, rel) >= (int)n ? -ENAMETOOLONG : 0;
}

int rootfs_mkdirs(struct setup_ctx *x, const char *rel)
{
        char p[PATH_MAX];
        if (newroot_path(p, sizeof(p), rel) < 0)
                return setup_fail(x, ENAMETOOLONG, rel, "mkdir");
        for (char *s = p + strlen(root_prefix) + 1; ; s++) {
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

int rootfs_write(struct setup_ctx *x, const char *rel, const char *data, mode_t mode)
{
        char p[PATH_MAX];
        if (newroot_path(p, sizeof(p), rel) < 0)
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
                return rootfs_mkdirs(x, dest);
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%s", dest);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
                *slash = '\0';
                int r = rootfs_mkdirs(x, parent);
                if (r < 0)
                        return r;
        }
        char p[PATH_MAX];
        if (newroot_path(p, sizeof(p), dest) < 0)
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
static int capture(struct setup_ctx *x, const char *src, unsigned long attrs, int *ret_fd,
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

static int attach(struct setup_ctx *x, int fd, const char *dest, bool is_dir)
{
        int r = make_mountpoint(x, dest, is_dir);
        if (r < 0)
                return r;
        char p[PATH_MAX];
        if (newroot_path(p, sizeof(p), dest) < 0)
                return setup_fail(x, ENAMETOOLONG, dest, "move_mount");
        if (move_mount(fd, "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return setup_fail(x, errno, dest, "move_mount");
        return 0;
}

int rootfs_bind(struct setup_ctx *x, const char *src, const char *dest, unsigned long attrs)
{
        int fd = -1;
        bool is_dir = false;
        int r = capture(x, src, attrs, &fd, &is_dir);
        if (r < 0)
                return r;
        r = attach(x, fd, dest, is_dir);
        close(fd);
        return r;
}

#define RO_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

/* The host's system directories.  On a merged-/usr system /bin, /lib...
 * are symlinks into /usr: recreate the symlink instead of binding. */
static int system_dirs(struct setup_ctx *x)
{
        static const char *const dirs[] = { "/usr", "/bin", "/sbin", "/lib", "/lib32",
                                            "/lib64", "/libx32" };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                struct stat st;
                if (lstat(dirs[i], &st) < 0)
                        continue;
                if (S_ISLNK(st.st_mode)) {
                        char target[PATH_MAX], p[PATH_MAX];
                        ssize_t n = readlink(dirs[i], target, sizeof(target) - 1);
                        if (n < 0)
                                return setup_fail(x, errno, dirs[i], "readlink");
                        target[n] = '\0';
                        newroot_path(p, sizeof(p), dirs[i]);
                        if (symlink(target, p) < 0)
                                return setup_fail(x, errno, dirs[i], "symlink");
                } else if (S_ISDIR(st.st_mode)) {
                        int r = rootfs_bind(x, dirs[i], dirs[i], RO_ATTRS);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* A host directory to bind read-write, cloned (never recursively: what is
 * mounted below it on the host stays outside).  With idmap_fd, the mount
 * maps the directory's owner to the job's uid/gid, so the job owns what
 * it finds, and what it creates stays the owner's on the host. */
static int set_rw_attrs(struct setup_ctx *x, int fd, const char *src, uint64_t attrs, int idmap_fd)
{
        struct mount_attr a = { .attr_set = attrs };
        if (idmap_fd >= 0) {
                a.attr_set |= MOUNT_ATTR_IDMAP;
                a.userns_fd = (uint64_t)idmap_fd;
        }
        if (mount_setattr(fd, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
                return setup_fail(x, errno, src, idmap_fd >= 0 ? "idmapped mount (the filesystem "
                                  "must support idmapped mounts)" : "mount_setattr");
        return 0;
}

static int capture_rw(struct setup_ctx *x, const char *src, int idmap_fd, int *ret_fd)
{
        int fd = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (fd < 0)
                return setup_fail(x, errno, src, "open_tree");
        int r = set_rw_attrs(x, fd, src, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, idmap_fd);
        if (r < 0) {
                close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

int rootfs_idmap_trees(struct setup_ctx *x, const struct rootfs_trees *t, int idmap_fd)
{
        x->step = SBX_STEP_WORKSPACE;
        const struct { int fd; const char *src; } rw[] = {
                { t->ws, x->c->workspace }, { t->tmp, x->c->scratch }, { t->shm, x->c->scratch },
        };
        for (size_t i = 0; i < ELEMENTSOF(rw); i++) {
                int r = rw[i].fd < 0 ? 0 : set_rw_attrs(x, rw[i].fd, rw[i].src, 0, idmap_fd);
                if (r < 0)
                        return r;
        }
        return 0;
}

int rootfs_capture_job(struct setup_ctx *x, int idmap_fd, struct rootfs_trees *t)
{
        const struct helper_config *c = x->c;
        /* The --ro-bind sources first: in the cold path this runs before
         * anything is mounted over SBX_NEWROOT, so a source below it (a
         * volume under /tmp) is still seen. */
        x->step = SBX_STEP_MOUNT;
        for (size_t i = 0; i < c->n_ro_binds; i++) {
                int r = capture(x, c->ro_binds[i].src, RO_ATTRS, &t->binds[i].fd,
                                &t->binds[i].is_dir);
                if (r < 0)
                        return r;
                t->n_binds = i + 1;
        }
        x->step = SBX_STEP_WORKSPACE;
        int r = 0;
        if (c->workspace)
                r = capture_rw(x, c->workspace, idmap_fd, &t->ws);
        if (r >= 0 && c->scratch) {
                char p[PATH_MAX];
                snprintf(p, sizeof(p), "%s/tmp", c->scratch);
                r = capture_rw(x, p, idmap_fd, &t->tmp);
                snprintf(p, sizeof(p), "%s/shm", c->scratch);
                if (r >= 0)
                        r = capture_rw(x, p, idmap_fd, &t->shm);
        }
        return r;
}

void rootfs_trees_init(struct rootfs_trees *t)
{
        t->ws = t->tmp = t->shm = -1;
        t->n_binds = 0;
        for (size_t i = 0; i < ELEMENTSOF(t->binds); i++)
                t->binds[i].fd = -1;
}

void rootfs_trees_close(struct rootfs_trees *t)
{
        int *fds[] = { &t->ws, &t->tmp, &t->shm };
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                if (*fds[i] >= 0) {
                        close(*fds[i]);
                        *fds[i] = -1;
                }
        for (size_t i = 0; i < ELEMENTSOF(t->binds); i++)
                if (t->binds[i].fd >= 0) {
                        close(t->binds[i].fd);
                        t->binds[i].fd = -1;
                }
        t->n_binds = 0;
}

/* /workspace, /tmp and /dev/shm share one bound wherever the job writes:
 * either the host's --workspace and --scratch directories (one bounded
 * filesystem, made by the worker; checked by the supervisor) bound in
 * place with no copy, or, for what is not given, one tmpfs of --disk-mb
 * mounted at a scratch point, its subdirectories bound into place, then
 * the scratch point detached. */
static int scratch(struct setup_ctx *x, const struct rootfs_trees *t)
{
        const struct helper_config *c = x->c;
        x->step = SBX_STEP_WORKSPACE;
        int r = 0;
        if (c->workspace)
                r = attach(x, t->ws, "/workspace", true);
        if (r >= 0 && c->scratch)
                r = attach(x, t->tmp, "/tmp", true);
        if (r >= 0 && c->scratch)
                r = attach(x, t->shm, "/dev/shm", true);
        if (r < 0 || (c->workspace && c->scratch))
                return r;
        x->step = SBX_STEP_MOUNT;
        r = rootfs_mkdirs(x, ".scratch");
        if (r < 0)
                return r;
        char opts[128];
        if (c->disk_mb)
                snprintf(opts, sizeof(opts), "mode=0755,size=%llum", (unsigned long long)c->disk_mb);
        else
                snprintf(opts, sizeof(opts), "mode=0755");
        char s[64];  /* "/tmp/.scratch" before pivot_root, "/.scratch" after */
        newroot_path(s, sizeof(s), ".scratch");
        if (mount("tmpfs", s, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return setup_fail(x, errno, "/workspace", "mount tmpfs");
        static const struct { const char *sub, *dest; mode_t mode; bool is_ws; } parts[] = {
                { "w", "/workspace", 0755, true }, { "t", "/tmp", 01777, false },
                { "s", "/dev/shm", 01777, false },
        };
        char sp[PATH_MAX];
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                if (parts[i].is_ws ? c->workspace != NULL : c->scratch != NULL)
                        continue;
                snprintf(sp, sizeof(sp), "%s/%s", s, parts[i].sub);
                if (mkdir(sp, parts[i].mode) < 0 || chmod(sp, parts[i].mode) < 0 ||
                    chown(sp, c->uid, c->gid) < 0)
                        return setup_fail(x, errno, parts[i].dest, "prepare");
                char dp[PATH_MAX];
                r = rootfs_mkdirs(x, parts[i].dest);
                if (r < 0)
                        return r;
                newroot_path(dp, sizeof(dp), parts[i].dest);
                if (mount(sp, dp, NULL, MS_BIND, NULL) < 0)
                        return setup_fail(x, errno, parts[i].dest, "bind");
        }
        if (umount2(s, MNT_DETACH) < 0 || rmdir(s) < 0)
                return setup_fail(x, errno, "/.scratch", "detach");
        return 0;
}

static int attach_user_binds(struct setup_ctx *x, const struct rootfs_trees *t)
{
        const struct rootfs_bind_tree *cap = t->binds;
        /* Parents before children: sort by destination (binds are few). */
        size_t n = x->c->n_ro_binds;
        bool done[64] = { false };
        for (size_t k = 0; k < n; k++) {
                size_t best = n;
                for (size_t i = 0; i < n; i++)
                        if (!done[i] && (best == n || strcmp(x->c->ro_binds[i].dest,
                                                             x->c->ro_binds[best].dest) < 0))
                                best = i;
                done[best] = true;
                int r = attach(x, cap[best].fd, x->c->ro_binds[best].dest, cap[best].is_dir);
                if (r < 0)
                        return r;
        }
        return 0;
}

int rootfs_build_base(struct setup_ctx *x)
{
        /* Our mounts must never propagate back to the host, and pivot_root
         * refuses shared mounts: make everything a slave first. */
        x->step = SBX_STEP_MOUNT;
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                return setup_fail(x, errno, "/", "make slave");
        int r = x->c->image ? rootfs_image_open(x) : 0;
        if (r < 0)
                return r;
        if (mount("tmpfs", SBX_NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV,
                  "mode=0755,size=1m,nr_inodes=4096") < 0)
                return setup_fail(x, errno, SBX_NEWROOT, "mount root tmpfs");
        r = x->c->image ? rootfs_image_dirs(x) : system_dirs(x);
        if (r >= 0)
                r = rootfs_etc(x);
        rootfs_image_close();
        if (r >= 0)
                r = rootfs_dev(x);
        if (r >= 0)
                r = rootfs_proc(x);
        x->step = SBX_STEP_MOUNT;
        if (r >= 0)
                r = rootfs_mkdirs(x, "/var");
        if (r >= 0 && symlink("../tmp", SBX_NEWROOT "/var/tmp") < 0)
                r = setup_fail(x, errno, "/var/tmp", "symlink");
        return r;
}

int rootfs_attach_job(struct setup_ctx *x, const struct rootfs_trees *t)
{
        int r = scratch(x, t);
        if (r >= 0) {
                x->step = SBX_STEP_MOUNT;
                r = attach_user_binds(x, t);
        }
        return r;
}

int rootfs_pivot(struct setup_ctx *x)
{
        x->step = SBX_STEP_PIVOT_ROOT;
        if (chdir(SBX_NEWROOT) < 0)
                return setup_fail(x, errno, SBX_NEWROOT, "chdir");
        /* pivot_root(".", ".") stacks the old root on top of the new one;
         * detaching it leaves the new root alone (no /oldroot to clean). */
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                return setup_fail(x, errno, SBX_NEWROOT, "pivot_root");
        if (umount2(".", MNT_DETACH) < 0)
                return setup_fail(x, errno, "/", "detach old root");
        rootfs_set_entered(true);
        return 0;
}

void rootfs_set_entered(bool entered)
{
        root_prefix = entered ? "" : SBX_NEWROOT;
}

int rootfs_seal(struct setup_ctx *x)
{
        x->step = SBX_STEP_PIVOT_ROOT;
        /* The root tmpfs only holds mount points and /etc: read-only, so
         * the job cannot write outside its size-limited scratch. */
        struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY };
        if (mount_setattr(AT_FDCWD, "/", 0, &a, sizeof(a)) < 0)
                return setup_fail(x, errno, "/", "make root read-only");
        if (chdir("/workspace") < 0)
                return setup_fail(x, errno, "/workspace", "chdir");
        return 0;
}
