/* Assembling the sandbox's root: the steps, in their order (see
 * rootfs-internal.h).  Runs in the child, in its new mount namespace, as
 * root of it (real root, or root-equivalent in a new user namespace).
 * The mounts are made with the primitives of mount.c (the new mount API,
 * see there); /dev and /proc, /etc and an image's entries are parts of
 * their own (devproc.c, etc.c, image.c). */
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
#include "sandbox/devproc-internal.h"
#include "sandbox/etc-internal.h"
#include "sandbox/image-internal.h"
#include "sandbox/mount-internal.h"

#define RO_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

/* The host's system directories.  On a merged-/usr system /bin, /lib...
 * are symlinks into /usr: recreate the symlink instead of binding. */
static int system_dirs(struct setup_ctx *x)
{
        static const char *const dirs[] = { "/usr",   "/bin",   "/sbin",  "/lib",
                                            "/lib32", "/lib64", "/libx32" };
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
                        sbx_mount_path(p, sizeof(p), dirs[i]);
                        if (symlink(target, p) < 0)
                                return setup_fail(x, errno, dirs[i], "symlink");
                } else if (S_ISDIR(st.st_mode)) {
                        int r = sbx_mount_bind(x, dirs[i], dirs[i], RO_ATTRS);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int rootfs_idmap_trees(struct setup_ctx *x, const struct rootfs_trees *t, int idmap_fd)
{
        x->step = SBX_STEP_WORKSPACE;
        const struct {
                int fd;
                const char *src;
        } rw[] = {
                { t->ws, x->c->workspace },
                { t->tmp, x->c->scratch },
                { t->shm, x->c->scratch },
        };
        for (size_t i = 0; i < ELEMENTSOF(rw); i++) {
                int r = rw[i].fd < 0 ? 0
                                     : sbx_mount_set_rw_attrs(x, rw[i].fd, rw[i].src, 0, idmap_fd);
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
                int r = sbx_mount_capture(x, c->ro_binds[i].src, RO_ATTRS, &t->binds[i].fd,
                                          &t->binds[i].is_dir);
                if (r < 0)
                        return r;
                t->n_binds = i + 1;
        }
        x->step = SBX_STEP_WORKSPACE;
        int r = 0;
        if (c->workspace)
                r = sbx_mount_capture_rw(x, c->workspace, idmap_fd, &t->ws);
        if (r >= 0 && c->scratch) {
                char p[PATH_MAX];
                snprintf(p, sizeof(p), "%s/tmp", c->scratch);
                r = sbx_mount_capture_rw(x, p, idmap_fd, &t->tmp);
                snprintf(p, sizeof(p), "%s/shm", c->scratch);
                if (r >= 0)
                        r = sbx_mount_capture_rw(x, p, idmap_fd, &t->shm);
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
                r = sbx_mount_attach(x, t->ws, "/workspace", true);
        if (r >= 0 && c->scratch)
                r = sbx_mount_attach(x, t->tmp, "/tmp", true);
        if (r >= 0 && c->scratch)
                r = sbx_mount_attach(x, t->shm, "/dev/shm", true);
        if (r < 0 || (c->workspace && c->scratch))
                return r;
        x->step = SBX_STEP_MOUNT;
        r = sbx_mount_mkdirs(x, ".scratch");
        if (r < 0)
                return r;
        char opts[128];
        if (c->disk_mb)
                snprintf(opts, sizeof(opts), "mode=0755,size=%llum",
                         (unsigned long long)c->disk_mb);
        else
                snprintf(opts, sizeof(opts), "mode=0755");
        char s[64]; /* "/tmp/.scratch" before pivot_root, "/.scratch" after */
        sbx_mount_path(s, sizeof(s), ".scratch");
        if (mount("tmpfs", s, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return setup_fail(x, errno, "/workspace", "mount tmpfs");
        static const struct {
                const char *sub, *dest;
                mode_t mode;
                bool is_ws;
        } parts[] = {
                { "w", "/workspace", 0755, true },
                { "t", "/tmp", 01777, false },
                { "s", "/dev/shm", 01777, false },
        };
        char sp[PATH_MAX];
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                if (parts[i].is_ws ? c->workspace != NULL : c->scratch != NULL)
                        continue;
                snprintf(sp, sizeof(sp), "%s/%s", s, parts[i].sub);
                if (mkdir(sp, parts[i].mode) < 0 || chmod(sp, parts[i].mode) < 0 ||
                    chown(sp, c->host.own ? c->host.uid : c->uid,
                          c->host.own ? c->host.gid : c->gid) < 0)
                        return setup_fail(x, errno, parts[i].dest, "prepare");
                char dp[PATH_MAX];
                r = sbx_mount_mkdirs(x, parts[i].dest);
                if (r < 0)
                        return r;
                sbx_mount_path(dp, sizeof(dp), parts[i].dest);
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
                int r = sbx_mount_attach(x, cap[best].fd, x->c->ro_binds[best].dest,
                                         cap[best].is_dir);
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
                r = sbx_mount_mkdirs(x, "/var");
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
        sbx_mount_set_entered(true);
        return 0;
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
