#include "agent/fileops.h"

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
#include "common/rmtree.h"

#define FILEOP_DIR_MODE 0755
#define FILEOP_FILE_MODE 0644

void fileop_result_done(struct fileop_result *r)
{
        for (uint32_t i = 0; i < r->n_entries; i++)
                free((char *)r->entries[i].name);
        free(r->entries);
        free(r->data);
        *r = (struct fileop_result){ 0 };
}

/* The path to use: relative ones from workspace, trailing slashes off. */
static int resolve(const char *workspace, const char *path, char **ret)
{
        if (!path || !path[0])
                return -EINVAL;
        char *p = NULL;
        if (path[0] == '/')
                p = strdup(path);
        else if (asprintf(&p, "%s/%s", workspace, path) < 0)
                p = NULL;
        if (!p)
                return -ENOMEM;
        size_t n = strlen(p);
        while (n > 1 && p[n - 1] == '/')
                p[--n] = '\0';
        if (n >= PATH_MAX) {
                free(p);
                return -ENAMETOOLONG;
        }
        *ret = p;
        return 0;
}

static char entry_type(mode_t m)
{
        return S_ISREG(m) ? 'f' : S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : 'o';
}

static int fill_entry(struct sw_entry *e, const struct stat *st, const char *name)
{
        char *copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        *e = (struct sw_entry){ .type = entry_type(st->st_mode),
                                .mode = st->st_mode & 07777,
                                .size = (uint64_t)st->st_size,
                                .mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 +
                                            st->st_mtim.tv_nsec,
                                .name = copy };
        return 0;
}

/* The one entry of STAT, WRITE and MKDIR, named as the request named it. */
static int one_entry(const struct stat *st, const char *name, struct fileop_result *res)
{
        res->entries = calloc(1, sizeof(*res->entries));
        if (!res->entries)
                return -ENOMEM;
        int r = fill_entry(&res->entries[0], st, name);
        if (r == 0)
                res->n_entries = 1;
        return r;
}

static int op_stat(const char *path, const char *name, struct fileop_result *res)
{
        struct stat st;
        if (lstat(path, &st) < 0)
                return -errno;
        return one_entry(&st, name, res);
}

/* mkdir -p: each missing component FILEOP_DIR_MODE; one that exists must
 * be a directory (or a symlink to one: the sandbox's own). */
static int mkdir_p(const char *path)
{
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1;; s++) {
                if (*s != '/' && *s != '\0')
                        continue;
                char c = *s;
                *s = '\0';
                if (mkdir(p, FILEOP_DIR_MODE) < 0) {
                        struct stat st;
                        if (errno != EEXIST)
                                return -errno;
                        if (stat(p, &st) < 0)
                                return -errno;
                        if (!S_ISDIR(st.st_mode))
                                return c ? -ENOTDIR : -EEXIST;
                }
                *s = c;
                if (!c)
                        return 0;
        }
}

static int op_mkdir(const char *path, const struct sw_file_req *op, struct fileop_result *res)
{
        int r = (op->flags & SW_FILE_PARENTS) ? mkdir_p(path) : 0;
        if (r < 0)
                return r;
        if (!(op->flags & SW_FILE_PARENTS) && mkdir(path, FILEOP_DIR_MODE) < 0)
                return -errno;
        return op_stat(path, op->path, res);
}

static int write_all(int fd, const char *data, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, data, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                data += n;
                len -= (size_t)n;
        }
        return 0;
}

static int op_write(const char *path, const struct sw_file_req *op, struct fileop_result *res)
{
        if (op->flags & SW_FILE_PARENTS) {
                _cleanup_free_ char *parent = strdup(path);
                if (!parent)
                        return -ENOMEM;
                char *slash = strrchr(parent, '/');
                if (slash && slash != parent) {
                        *slash = '\0';
                        int r = mkdir_p(parent);
                        if (r < 0)
                                return r;
                }
        }
        /* O_NONBLOCK: a FIFO planted at path fails (ENXIO) instead of
         * holding the agent until someone reads it. */
        _cleanup_fd_ int fd = open(path,
                                   O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC |
                                           O_NONBLOCK | O_NOCTTY,
                                   FILEOP_FILE_MODE);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL; /* a device or a FIFO: not a file to write */
        int r = write_all(fd, op->data, op->data_len);
        if (r < 0)
                return r;
        if (fstat(fd, &st) < 0)
                return -errno;
        return one_entry(&st, op->path, res);
}

static int op_read(const char *path, uint32_t max_read, struct fileop_result *res)
{
        _cleanup_fd_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EINVAL; /* a FIFO, a device: no size, maybe no end */
        uint32_t cap = max_read < FILEOP_READ_MAX ? max_read : FILEOP_READ_MAX;
        _cleanup_free_ char *buf = malloc(cap ? cap : 1);
        if (!buf)
                return -ENOMEM;
        uint32_t got = 0;
        while (got < cap) {
                ssize_t n = read(fd, buf + got, cap - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                got += (uint32_t)n;
        }
        /* A byte past max_read: truncated (st_size alone can be stale). */
        bool more = false;
        if (got == cap) {
                char extra;
                ssize_t n;
                do
                        n = read(fd, &extra, 1);
                while (n < 0 && errno == EINTR);
                if (n < 0)
                        return -errno;
                more = n > 0;
        }
        uint64_t seen = (uint64_t)got + (more ? 1 : 0);
        res->size = (uint64_t)st.st_size > seen ? (uint64_t)st.st_size : seen;
        res->truncated = more;
        res->data = steal_pointer(&buf);
        res->data_len = got;
        return 0;
}

static int cmp_entry(const void *a, const void *b)
{
        return strcmp(((const struct sw_entry *)a)->name, ((const struct sw_entry *)b)->name);
}

/* Adds name (an entry of d) to res's entries, growing them. */
static int list_add(struct fileop_result *res, uint32_t *alloc, DIR *d, const char *name)
{
        struct stat st;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno; /* gone since readdir */
        if (res->n_entries == *alloc) {
                uint32_t n = *alloc ? *alloc * 2 : 64;
                if (n > SW_ENTRIES_MAX)
                        n = SW_ENTRIES_MAX;
                struct sw_entry *e = realloc(res->entries, n * sizeof(*e));
                if (!e)
                        return -ENOMEM;
                res->entries = e;
                *alloc = n;
        }
        int r = fill_entry(&res->entries[res->n_entries], &st, name);
        if (r == 0)
                res->n_entries++;
        return r;
}

/* A directory's entries, sorted by name: the first SW_ENTRIES_MAX it
 * lists (truncated beyond), so a huge directory costs a bounded answer.
 * size: how many entries it has. */
static int op_list(const char *path, struct fileop_result *res)
{
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        _cleanup_(closedirp) DIR *d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return r;
        }
        uint32_t alloc = 0;
        uint64_t total = 0;
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de) {
                        if (errno)
                                return -errno;
                        break;
                }
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                total++;
                if (res->n_entries == SW_ENTRIES_MAX) {
                        res->truncated = true;
                        continue;
                }
                int r = list_add(res, &alloc, d, de->d_name);
                if (r < 0)
                        return r;
        }
        if (res->n_entries)
                qsort(res->entries, res->n_entries, sizeof(*res->entries), cmp_entry);
        res->size = total;
        return 0;
}

/* Never through a symlink: the link goes, not what it names; a directory
 * only with SW_FILE_RECURSIVE (rmtree never follows one either). */
static int op_remove(const char *path, const struct sw_file_req *op)
{
        struct stat st;
        if (lstat(path, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return unlink(path) < 0 ? -errno : 0;
        if (op->flags & SW_FILE_RECURSIVE)
                return fs_rm_rf(path);
        return rmdir(path) < 0 ? -errno : 0;
}

static int op_move(const char *path, const char *workspace, const char *to)
{
        _cleanup_free_ char *dest = NULL;
        int r = resolve(workspace, to, &dest);
        if (r < 0)
                return r;
        return rename(path, dest) < 0 ? -errno : 0;
}

static int op_do(const struct sw_file_req *op, const char *path, const char *workspace,
                 uint32_t max_read, struct fileop_result *res)
{
        switch (op->op) {
        case SW_FILE_WRITE:
                return op_write(path, op, res);
        case SW_FILE_READ:
                return op_read(path, max_read, res);
        case SW_FILE_LIST:
                return op_list(path, res);
        case SW_FILE_STAT:
                return op_stat(path, op->path, res);
        case SW_FILE_MKDIR:
                return op_mkdir(path, op, res);
        case SW_FILE_REMOVE:
                return op_remove(path, op);
        case SW_FILE_MOVE:
                return op_move(path, workspace, op->to);
        default:
                return -EINVAL;
        }
}

void fileop_run(const struct sw_file_req *op, const char *workspace, uint32_t max_read,
                struct fileop_result *ret)
{
        *ret = (struct fileop_result){ 0 };
        _cleanup_free_ char *path = NULL;
        int r = resolve(workspace, op->path, &path);
        if (r == 0)
                r = op_do(op, path, workspace, max_read, ret);
        if (r < 0) {
                /* A failed operation answers with its errno alone. */
                fileop_result_done(ret);
                ret->err = -r;
        }
}
