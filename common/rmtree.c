#include "common/rmtree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

/* Levels of directories below the one removed: bounds the recursion and
 * the fds it holds open. */
#define RMTREE_MAX_DEPTH 512

static int empty_dir(int dirfd, int depth);

static int rm_rf_at(int dirfd, const char *name, int depth)
{
        if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        if (depth > RMTREE_MAX_DEPTH)
                return -ELOOP;
        _cleanup_fd_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        /* Read-only on purpose (a cache entry, an overlay's work
         * directory); the caller owns them. */
        (void)fchmod(fd, 0700);
        int r = empty_dir(fd, depth + 1);
        if (r < 0)
                return r;
        if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

static int empty_dir(int dirfd, int depth)
{
        for (;;) {
                int dup_fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dup_fd < 0)
                        return -errno;
                DIR *d = fdopendir(dup_fd);
                if (!d) {
                        close(dup_fd);
                        return -errno;
                }
                rewinddir(d);
                int removed = 0, r = 0;
                struct dirent *de;
                while (r == 0 && (errno = 0, de = readdir(d))) {
                        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                                continue;
                        r = rm_rf_at(dirfd, de->d_name, depth);
                        removed++;
                }
                closedir(d);
                if (r < 0)
                        return r;
                /* readdir may skip names when the directory changes under
                 * it; go round again until a pass finds nothing. */
                if (!removed)
                        return 0;
        }
}

int fs_rm_rf_at(int dirfd, const char *name)
{
        return rm_rf_at(dirfd, name, 0);
}

int fs_rm_rf(const char *path)
{
        return rm_rf_at(AT_FDCWD, path, 0);
}

int fs_empty_dir(int dirfd)
{
        return empty_dir(dirfd, 0);
}
