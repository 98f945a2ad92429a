/* Workspace copy in and out.  Everything goes through directory fds and
 * *at() calls with O_NOFOLLOW, so a symlink the job planted (say
 * out -> /etc) is copied as a symlink and never traversed: the copy can
 * only ever create entries below the destination fd it was given. */
#include "sandbox/wsync-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

/* Deeper trees are refused: each level holds two fds open. */
#define WS_MAX_DEPTH 200

BC_DEFINE_CLEANUP(DIR *, closedir)

static int fail(struct bc_error *err, int e, const char *what, const char *name)
{
        return bc_error_set(err, BC_SANDBOX_SETUP, e, "%s '%s': %s", what, name, strerror(e));
}

static int copy_bytes(int in, int out)
{
        for (;;) {
                ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
                if (n == 0)
                        return 0;
                if (n > 0)
                        continue;
                if (errno == EINTR)
                        continue;
                if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
                        return -errno;
                break;  /* no in-kernel copy between these filesystems */
        }
        char buf[65536];
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n == 0)
                        return 0;
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                for (ssize_t off = 0; off < n;) {
                        ssize_t w = write(out, buf + off, (size_t)(n - off));
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0)
                                return -errno;
                        off += w;
                }
        }
}

/* Permission bits we carry over: never set-id (a job's setuid file must
 * not become a host setuid file owned by the worker's user). */
static mode_t clean_mode(mode_t m, bool is_dir, const struct ws_copy_opts *o)
{
        mode_t r = m & 01777;
        if (o->owner_rw)
                r |= is_dir ? 0700 : 0600;
        return r;
}

static int finish_entry(int fd, const struct stat *st, bool is_dir, const struct ws_copy_opts *o)
{
        if (o->chown && fchown(fd, o->uid, o->gid) < 0)
                return -errno;
        if (fchmod(fd, clean_mode(st->st_mode, is_dir, o)) < 0)
                return -errno;
        struct timespec ts[2] = { st->st_atim, st->st_mtim };
        return futimens(fd, ts) < 0 ? -errno : 0;
}

static int copy_file(int src, int dst, const char *name, const struct stat *st,
                     const struct ws_copy_opts *o, struct bc_error *err)
{
        _cleanup_fd_ int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (in < 0)
                return fail(err, errno, "open", name);
        struct stat now;
        /* Same inode as listed, still a regular file (not a FIFO swapped in). */
        if (fstat(in, &now) < 0 || !S_ISREG(now.st_mode) || now.st_ino != st->st_ino)
                return fail(err, EAGAIN, "changed while copying", name);
        _cleanup_fd_ int out = openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0)
                return fail(err, errno, "create", name);
        int r = copy_bytes(in, out);
        if (r >= 0)
                r = finish_entry(out, &now, false, o);
        return r < 0 ? fail(err, -r, "copy", name) : 0;
}

static int copy_symlink(int src, int dst, const char *name, const struct stat *st,
                        const struct ws_copy_opts *o, struct bc_error *err)
{
        char target[PATH_MAX];
        ssize_t n = readlinkat(src, name, target, sizeof(target) - 1);
        if (n < 0)
                return fail(err, errno, "readlink", name);
        target[n] = '\0';
        if (symlinkat(target, dst, name) < 0)
                return fail(err, errno, "symlink", name);
        if (o->chown && fchownat(dst, name, o->uid, o->gid, AT_SYMLINK_NOFOLLOW) < 0)
                return fail(err, errno, "chown", name);
        struct timespec ts[2] = { st->st_atim, st->st_mtim };
        (void)utimensat(dst, name, ts, AT_SYMLINK_NOFOLLOW);
        return 0;
}

static int copy_dir(int src, int dst, const struct ws_copy_opts *o, int depth, struct bc_error *err);

static int copy_subdir(int src, int dst, const char *name, const struct stat *st,
                       const struct ws_copy_opts *o, int depth, struct bc_error *err)
{
        if (depth >= WS_MAX_DEPTH)
                return fail(err, ELOOP, "directory nested too deep", name);
        _cleanup_fd_ int in = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (in < 0)
                return fail(err, errno, "open", name);
        if (mkdirat(dst, name, 0700) < 0)
                return fail(err, errno, "mkdir", name);
        _cleanup_fd_ int out = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (out < 0)
                return fail(err, errno, "open", name);
        int r = copy_dir(in, out, o, depth + 1, err);
        if (r < 0)
                return bc_error_prefix(err, "%s", name);
        r = finish_entry(out, st, true, o);
        return r < 0 ? fail(err, -r, "set attributes of", name) : 0;
}

/* A stream over dir's entries from the start.  The offset is shared with
 * every dup of dir (a copy may have read it to the end in another
 * process): hence the rewind. */
static int open_dir_stream(int dir, DIR **ret, struct bc_error *err)
{
        int dfd = dup(dir);
        if (dfd < 0)
                return fail(err, errno, "dup", ".");
        DIR *d = fdopendir(dfd);
        if (!d) {
                close(dfd);
                return fail(err, errno, "opendir", ".");
        }
        rewinddir(d);
        *ret = d;
        return 0;
}

static int copy_dir(int src, int dst, const struct ws_copy_opts *o, int depth, struct bc_error *err)
{
        _cleanup_(closedirp) DIR *d = NULL;
        int r0 = open_dir_stream(src, &d, err);
        if (r0 < 0)
                return r0;
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                const char *name = de->d_name;
                if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                        continue;
                struct stat st;
                if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return fail(err, errno, "stat", name);
                int r = 0;
                if (S_ISDIR(st.st_mode))
                        r = copy_subdir(src, dst, name, &st, o, depth, err);
                else if (S_ISREG(st.st_mode))
                        r = copy_file(src, dst, name, &st, o, err);
                else if (S_ISLNK(st.st_mode))
                        r = copy_symlink(src, dst, name, &st, o, err);
                /* FIFOs, sockets, devices: not workspace content; skipped. */
                if (r < 0)
                        return r;
        }
        if (errno)
                return fail(err, errno, "readdir", ".");
        return 0;
}

int ws_copy_tree(int src_dir, int dst_dir, const struct ws_copy_opts *o, struct bc_error *err)
{
        return copy_dir(src_dir, dst_dir, o, 0, err);
}

static int clear_dir(int dir, int depth, struct bc_error *err)
{
        _cleanup_(closedirp) DIR *d = NULL;
        int r0 = open_dir_stream(dir, &d, err);
        if (r0 < 0)
                return r0;
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                const char *name = de->d_name;
                if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                        continue;
                if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
                        continue;
                if (errno != EISDIR && errno != EPERM)
                        return fail(err, errno, "unlink", name);
                if (depth >= WS_MAX_DEPTH)
                        return fail(err, ELOOP, "directory nested too deep", name);
                _cleanup_fd_ int sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        return fail(err, errno, "open", name);
                int r = clear_dir(sub, depth + 1, err);
                if (r < 0)
                        return bc_error_prefix(err, "%s", name);
                if (unlinkat(dir, name, AT_REMOVEDIR) < 0)
                        return fail(err, errno, "rmdir", name);
        }
        return errno ? fail(err, errno, "readdir", ".") : 0;
}

int ws_clear(int dir, struct bc_error *err)
{
        return clear_dir(dir, 0, err);
}
