#include "common/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "common/error.h"

int bc_write_all(int fd, const void *data, size_t len)
{
        const char *p = data;
        while (len > 0) {
                ssize_t w = write(fd, p, len);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -errno;
                p += w;
                len -= (size_t)w;
        }
        return 0;
}

/* One component: made, or already a directory (stat after mkdir, since
 * mkdir on an existing directory may fail with EACCES or EROFS first). */
static int mkdir_one(const char *dir, mode_t mode, struct bc_error *err)
{
        if (mkdir(dir, mode) == 0)
                return 0;
        int e = errno;
        struct stat st;
        if (stat(dir, &st) == 0)
                return S_ISDIR(st.st_mode)
                               ? 0
                               : bc_error_set(err, BC_IO, ENOTDIR,
                                              "%s: exists and is not a directory", dir);
        return bc_error_set(err, BC_IO, e, "mkdir %s: %s", dir, strerror(e));
}

int bc_mkdir_p(const char *path, mode_t mode, struct bc_error *err)
{
        if (!path || !*path)
                return bc_error_set(err, BC_IO, EINVAL, "mkdir: empty path");
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        /* Each '/' after a name ends a parent: cut there, make it, restore. */
        for (char *s = p + 1; *s; s++) {
                if (*s != '/' || s[-1] == '/')
                        continue;
                *s = '\0';
                int r = mkdir_one(p, mode, err);
                *s = '/';
                if (r < 0)
                        return r;
        }
        return mkdir_one(p, mode, err);
}

int bc_read_all(const char *path, size_t cap, char **ret, size_t *ret_len, struct bc_error *err)
{
        bool std = !path || strcmp(path, "-") == 0;
        const char *shown = std ? "stdin" : path;
        _cleanup_fclose_ FILE *f = std ? NULL : fopen(path, "re");
        if (!std && !f)
                return bc_error_set(err, BC_IO, errno, "%s: %m", shown);
        FILE *in = std ? stdin : f;
        struct dynbuf b;
        dynbuf_init(&b, cap);
        char chunk[65536];
        int r = 0;
        for (size_t n = fread(chunk, 1, sizeof(chunk), in); r == 0 && n > 0;
             n = fread(chunk, 1, sizeof(chunk), in))
                r = dynbuf_add(&b, chunk, n);
        if (r == 0 && ferror(in))
                r = bc_error_set(err, BC_IO, EIO, "%s: read error", shown);
        else if (r < 0)
                r = bc_error_set(err, BC_IO, -r, "%s: larger than %zu bytes", shown, cap);
        if (r < 0) {
                dynbuf_done(&b);
                return r;
        }
        size_t len = b.len;
        char *data = dynbuf_steal(&b);
        if (!data)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        *ret = data;
        *ret_len = len;
        return 0;
}

void bc_sha256_hex(const void *data, size_t len, char ret_hex[65])
{
        static const char hex[] = "0123456789abcdef";
        unsigned char md[32];
        unsigned int n = 0;
        EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
        for (unsigned i = 0; i < 32; i++) {
                ret_hex[2 * i] = hex[md[i] >> 4];
                ret_hex[2 * i + 1] = hex[md[i] & 15];
        }
        ret_hex[64] = '\0';
}

DIR *bc_opendir_at(int dfd)
{
        int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d && fd >= 0) {
                int e = errno;
                close(fd);
                errno = e;
        }
        return d;
}

void bc_remove_unlocked_dirs(const char *parent, void (*remove)(const char *dir))
{
        DIR *d = opendir(parent);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *dir = NULL, *lock = NULL;
                if (asprintf(&dir, "%s/%s", parent, de->d_name) < 0 ||
                    asprintf(&lock, "%s/lock", dir) < 0)
                        continue;
                _cleanup_fd_ int fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0)
                        continue;
                remove(dir);
        }
        closedir(d);
}

void bc_spawnattr_own_group(posix_spawnattr_t *attr)
{
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_setsigmask(attr, &none);
        posix_spawnattr_setsigdefault(attr, &all);
        posix_spawnattr_setpgroup(attr, 0);
        posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                               POSIX_SPAWN_SETSIGDEF);
}
