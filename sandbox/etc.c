/* The sandbox's /etc: selected host entries, read-only, plus generated
 * passwd/group/hostname/hosts.  Not the whole host /etc: on a worker host
 * it holds what a job has no business reading (the worker's own config
 * and credentials, package-manager tokens in npmrc/pip.conf, ssh keys,
 * shadow when the job's uid maps to a privileged one).  python3, node and
 * sh need only the loader cache, alternatives, TLS roots, time zone and
 * name-service configuration, listed here so the list can be audited. */
#include "sandbox/etc-internal.h"

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
#include "sandbox/image-internal.h"
#include "sandbox/mount-internal.h"

/* Only what the runtimes read.  Small regular files are copied into the
 * root tmpfs (made read-only before the job runs), which costs a few
 * microseconds where a bind costs tens, plus its share of tearing the
 * mount namespace down; directories are bound read-only; symlinks are
 * recreated. */
static const char *const etc_entries[] = {
        "ld.so.cache",   "ld.so.conf",      "ld.so.conf.d", "alternatives",
        "ssl",           "ca-certificates", "localtime",    "timezone",
        "nsswitch.conf", "protocols",       "services",     "os-release",
};

static int copy_symlink(struct setup_ctx *x, const char *host, const char *rel)
{
        char target[PATH_MAX], p[PATH_MAX];
        ssize_t n = readlink(host, target, sizeof(target) - 1);
        if (n < 0)
                return setup_fail(x, errno, host, "readlink");
        target[n] = '\0';
        if (snprintf(p, sizeof(p), "%s/%s", SBX_NEWROOT, rel) >= (int)sizeof(p))
                return setup_fail(x, ENAMETOOLONG, host, "symlink");
        if (symlink(target, p) < 0)
                return setup_fail(x, errno, host, "symlink");
        return 0;
}

/* Files up to this size are copied rather than bound, while the copies
 * (in pages) stay within the budget: the root tmpfs is 1 MiB, and an
 * image's /etc, shown whole, may hold more small files than fit; past the
 * budget they are bound. */
#define ETC_COPY_MAX (128 * 1024)
#define ETC_COPY_BUDGET (512 * 1024)
static uint64_t etc_copied;

static uint64_t pages_of(off_t size)
{
        return ((uint64_t)size + 4095) & ~(uint64_t)4095;
}

/* Copies the regular file host (lstat'ed as st) to NEWROOT/rel, without
 * its owner and with at most mode 0644.  1 when copied, 0 when it turned
 * out not to be a small regular file (the caller binds it instead). */
static int copy_small(struct setup_ctx *x, const char *host, const char *rel,
                      const struct stat *st)
{
        if (st->st_size > ETC_COPY_MAX || etc_copied + pages_of(st->st_size) > ETC_COPY_BUDGET)
                return 0;
        /* O_NOFOLLOW + fstat: the file read is the one that was checked. */
        _cleanup_fd_ int in = open(host, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat fst;
        if (in < 0 || fstat(in, &fst) < 0)
                return setup_fail(x, errno, host, "open");
        if (!S_ISREG(fst.st_mode) || fst.st_size > ETC_COPY_MAX ||
            etc_copied + pages_of(fst.st_size) > ETC_COPY_BUDGET)
                return 0;
        etc_copied += pages_of(fst.st_size);
        char p[PATH_MAX];
        if (snprintf(p, sizeof(p), "%s/%s", SBX_NEWROOT, rel) >= (int)sizeof(p))
                return setup_fail(x, ENAMETOOLONG, host, "copy");
        _cleanup_fd_ int out = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                    fst.st_mode & 0644);
        if (out < 0)
                return setup_fail(x, errno, host, "copy");
        char buf[16384];
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return setup_fail(x, errno, host, "read");
                if (n == 0)
                        return 1;
                for (ssize_t off = 0; off < n;) {
                        ssize_t w = write(out, buf + off, (size_t)(n - off));
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w <= 0)
                                return setup_fail(x, w < 0 ? errno : EIO, host, "copy");
                        off += w;
                }
        }
}

/* Shows SRC/NAME (SRC: the host's /etc or an image's) as /etc/NAME if it
 * exists: a small file copied, anything else bound; a symlink is
 * recreated (binding would follow it, possibly out of what we meant to
 * show). */
static int etc_entry_from(struct setup_ctx *x, const char *src, const char *name)
{
        char host[PATH_MAX], rel[300];
        if (strlen(name) > 255)
                return 0;
        if (snprintf(host, sizeof(host), "%s/%s", src, name) >= (int)sizeof(host))
                return setup_fail(x, ENAMETOOLONG, name, "etc");
        snprintf(rel, sizeof(rel), "etc/%s", name);
        struct stat st;
        if (lstat(host, &st) < 0)
                return 0;
        if (strchr(name, '/')) {
                char parent[300];
                snprintf(parent, sizeof(parent), "%s", rel);
                *strrchr(parent, '/') = '\0';
                int r = sbx_mount_mkdirs(x, parent);
                if (r < 0)
                        return r;
        }
        if (S_ISLNK(st.st_mode))
                return copy_symlink(x, host, rel);
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                return 0;
        if (S_ISREG(st.st_mode)) {
                int r = copy_small(x, host, rel, &st);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        return sbx_mount_bind(x, host, rel,
                              MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}

static int etc_entry(struct setup_ctx *x, const char *name)
{
        return etc_entry_from(x, "/etc", name);
}

/* Generated in every sandbox (etc_generated), and DNS, which is the
 * host's when the job has the host's network. */
static bool etc_own(const char *name)
{
        static const char *const own[] = { "passwd", "group", "hostname", "hosts", "resolv.conf" };
        for (size_t i = 0; i < ELEMENTSOF(own); i++)
                if (strcmp(name, own[i]) == 0)
                        return true;
        return false;
}

/* An image's /etc is the job's own choice, so all of it is shown (the
 * host's list above guards the worker host's secrets, which an image
 * does not hold), but for the files every sandbox generates. */
static int etc_image(struct setup_ctx *x)
{
        char src[PATH_MAX];
        if (snprintf(src, sizeof(src), "%s/etc", rootfs_image_root()) >= (int)sizeof(src))
                return setup_fail(x, ENAMETOOLONG, x->c->image, "etc");
        /* O_NOFOLLOW: an image's /etc that is a symlink (to the host's
         * /etc, say) is not followed; such an image has no /etc. */
        int fd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT || errno == ELOOP || errno == ENOTDIR
                               ? 0
                               : setup_fail(x, errno, src, "open");
        _cleanup_(closedirp) DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return setup_fail(x, errno, src, "opendir");
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    etc_own(de->d_name))
                        continue;
                int r = etc_entry_from(x, src, de->d_name);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* python3.X keeps its sysconfig under /etc/python3.X on Debian. */
static int etc_python(struct setup_ctx *x)
{
        _cleanup_(closedirp) DIR *d = opendir("/etc");
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (strncmp(de->d_name, "python", 6) == 0) {
                        int r = etc_entry(x, de->d_name);
                        if (r < 0)
                                return r;
                }
        return 0;
}

static const char *user_name(uid_t uid)
{
        return uid == 65534 ? "nobody" : "sandbox";
}

static int etc_generated(struct setup_ctx *x)
{
        const struct helper_config *c = x->c;
        char buf[1024];
        snprintf(buf, sizeof(buf),
                 "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                 "%s:x:%u:%u:sandbox:/workspace:/bin/sh\n",
                 user_name(c->uid), (unsigned)c->uid, (unsigned)c->gid);
        int r = sbx_mount_write(x, "etc/passwd", buf, 0644);
        if (r < 0)
                return r;
        snprintf(buf, sizeof(buf), "root:x:0:\n%s:x:%u:\n",
                 c->gid == 65534 ? "nogroup" : "sandbox", (unsigned)c->gid);
        r = sbx_mount_write(x, "etc/group", buf, 0644);
        if (r < 0)
                return r;
        snprintf(buf, sizeof(buf), "%s\n", c->hostname);
        r = sbx_mount_write(x, "etc/hostname", buf, 0644);
        if (r < 0)
                return r;
        snprintf(buf, sizeof(buf), "127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost\n",
                 c->hostname);
        return sbx_mount_write(x, "etc/hosts", buf, 0644);
}

int rootfs_etc(struct setup_ctx *x)
{
        x->step = SBX_STEP_MOUNT;
        etc_copied = 0;
        int r = sbx_mount_mkdirs(x, "etc");
        if (r >= 0 && x->c->image)
                r = etc_image(x);
        for (size_t i = 0; r >= 0 && !x->c->image && i < ELEMENTSOF(etc_entries); i++)
                r = etc_entry(x, etc_entries[i]);
        if (r >= 0 && !x->c->image)
                r = etc_python(x);
        /* DNS only makes sense with the host's network. */
        if (r >= 0 && x->c->network == SANDBOX_NET_HOST)
                r = etc_entry(x, "resolv.conf");
        if (r >= 0)
                r = etc_generated(x);
        return r;
}
