#include "worker/workdir/wsfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/io.h"

int wsfile_adopt(const struct stat *ws, int dirfd, const char *name)
{
        if (ws->st_uid == geteuid() && ws->st_gid == getegid())
                return 0;
        return fchownat(dirfd, name, ws->st_uid, ws->st_gid, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

/* Opens the directory part of rel under workspace without following any
 * symlink; *ret_name points at the file name inside rel, *ret_ws is the
 * workspace's stat. */
static int open_parent(const char *workspace, const char *rel, bool create, const char **ret_name,
                       struct stat *ret_ws, struct bc_error *err)
{
        const char *slash = strchr(rel, '/');
        char dir[NAME_MAX + 1];
        if (!slash || (size_t)(slash - rel) > NAME_MAX || strchr(slash + 1, '/'))
                return bc_error_set(err, BC_INTERNAL, EINVAL, "bad workspace path %s", rel);
        memcpy(dir, rel, (size_t)(slash - rel));
        dir[slash - rel] = '\0';
        _cleanup_fd_ int ws = open(workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ws < 0 || fstat(ws, ret_ws) < 0)
                return bc_error_set(err, BC_IO, errno, "open workspace: %m");
        int made = create ? mkdirat(ws, dir, 0755) : -1;
        if (create && made < 0 && errno != EEXIST)
                return bc_error_set(err, BC_IO, errno, "create /workspace/%s: %m", dir);
        if (made == 0 && (made = wsfile_adopt(ret_ws, ws, dir)) < 0)
                return bc_error_set(err, BC_IO, -made, "chown /workspace/%s: %s", dir,
                                    strerror(-made));
        int fd = openat(ws, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return -ENOENT;
        if (fd < 0)
                return bc_error_set(err, BC_IO, errno,
                                    "open /workspace/%s: %m (not a plain directory)", dir);
        *ret_name = slash + 1;
        return fd;
}

int wsfile_read(const char *workspace, const char *rel, size_t max, char **ret_data,
                size_t *ret_len, struct bc_error *err)
{
        const char *name = NULL;
        struct stat ws;
        _cleanup_fd_ int dir = open_parent(workspace, rel, false, &name, &ws, err);
        if (dir == -ENOENT)
                return 0;
        if (dir < 0)
                return dir;
        _cleanup_fd_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0 && errno == ENOENT)
                return 0;
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return bc_error_set(err, BC_IO, errno, "open /workspace/%s: %m", rel);
        if (!S_ISREG(st.st_mode))
                return bc_error_set(err, BC_IO, EINVAL, "/workspace/%s is not a regular file",
                                    rel);
        if ((size_t)st.st_size > max)
                return bc_error_set(err, BC_IO, EFBIG, "/workspace/%s is larger than %zu bytes",
                                    rel, max);
        char *buf = malloc((size_t)st.st_size + 1);
        if (!buf)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        size_t len = 0;
        while (len < (size_t)st.st_size) {
                ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        *ret_data = buf;
        *ret_len = len;
        return 1;
}

int wsfile_write(const char *workspace, const char *rel, const char *text, struct bc_error *err)
{
        const char *name = NULL;
        struct stat ws;
        _cleanup_fd_ int dir = open_parent(workspace, rel, true, &name, &ws, err);
        if (dir < 0)
                return dir == -ENOENT ? bc_error_set(err, BC_IO, ENOENT, "%s: gone", rel) : dir;
        /* Replace whatever is there (a symlink included) by a new file. */
        if (unlinkat(dir, name, 0) < 0 && errno != ENOENT)
                return bc_error_set(err, BC_IO, errno, "replace /workspace/%s: %m", rel);
        _cleanup_fd_ int fd = openat(dir, name,
                                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return bc_error_set(err, BC_IO, errno, "create /workspace/%s: %m", rel);
        int r = wsfile_adopt(&ws, dir, name);
        if (r >= 0)
                r = bc_write_all(fd, text, strlen(text));
        if (r < 0)
                return bc_error_set(err, BC_IO, -r, "write /workspace/%s: %s", rel, strerror(-r));
        return 0;
}

int wsfile_remove(const char *workspace, const char *rel, struct bc_error *err)
{
        const char *name = NULL;
        struct stat ws;
        _cleanup_fd_ int dir = open_parent(workspace, rel, false, &name, &ws, err);
        if (dir == -ENOENT)
                return 0;
        if (dir < 0)
                return dir;
        if (unlinkat(dir, name, 0) < 0 && errno != ENOENT && errno != EISDIR)
                return bc_error_set(err, BC_IO, errno, "remove /workspace/%s: %m", rel);
        return 0;
}
