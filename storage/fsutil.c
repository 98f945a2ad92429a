#include "storage/fsutil.h"

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

int fs_normalize(const char *path, char *out)
{
        if (path[0] == '/')
                return -EINVAL;
        size_t o = 0;
        int depth = 0;
        const char *p = path;
        while (*p) {
                size_t n = strcspn(p, "/");
                if (n == 0 || (n == 1 && p[0] == '.')) {
                        p += n + (p[n] == '/');
                        continue;
                }
                if (n == 2 && p[0] == '.' && p[1] == '.')
                        return -EINVAL;
                if (n > FS_MAX_NAME)
                        return -ENAMETOOLONG;
                if (++depth > FS_MAX_DEPTH)
                        return -E2BIG;
                if (o + (o ? 1 : 0) + n > FS_MAX_PATH)
                        return -ENAMETOOLONG;
                if (o)
                        out[o++] = '/';
                memcpy(out + o, p, n);
                o += n;
                p += n + (p[n] == '/');
        }
        out[o] = '\0';
        return depth;
}

void fs_walker_init(struct fs_walker *w, int rootfd, bool create, mode_t create_mode)
{
        w->rootfd = rootfd;
        w->create = create;
        w->create_mode = create_mode;
        w->cached[0] = '\0';
        w->cached_fd = -1;
}

void fs_walker_done(struct fs_walker *w)
{
        if (w->cached_fd >= 0)
                close(w->cached_fd);
        w->cached_fd = -1;
}

/* Why a component could not be opened as a directory: a symlink is the
 * interesting case (an attempt to write through it). */
static int classify_open_error(int dirfd, const char *name, int err)
{
        struct stat st;
        if ((err == ELOOP || err == ENOTDIR) &&
            fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
        return -err;
}

static int open_dir_component(struct fs_walker *w, int cur, const char *name)
{
        const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
        int fd = openat(cur, name, flags);
        if (fd >= 0 || errno != ENOENT || !w->create)
                return fd >= 0 ? fd : classify_open_error(cur, name, errno);
        if (mkdirat(cur, name, 0700) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(cur, name, flags);
        if (fd < 0)
                return classify_open_error(cur, name, errno);
        /* umask must not decide the mode of directories we invent. */
        if (fchmod(fd, w->create_mode) < 0) {
                int e = errno;
                close(fd);
                return -e;
        }
        return fd;
}

int fs_walker_parent(struct fs_walker *w, const char *path, int *ret_dirfd, const char **ret_leaf)
{
        const char *slash = strrchr(path, '/');
        if (!slash) {
                *ret_dirfd = w->rootfd;
                *ret_leaf = path;
                return 0;
        }
        size_t plen = (size_t)(slash - path);
        if (plen > FS_MAX_PATH)
                return -ENAMETOOLONG;
        if (w->cached_fd >= 0 && strlen(w->cached) == plen && memcmp(w->cached, path, plen) == 0) {
                *ret_dirfd = w->cached_fd;
                *ret_leaf = slash + 1;
                return 0;
        }
        int cur = w->rootfd;
        bool owned = false;
        for (const char *p = path; p < slash;) {
                size_t n = strcspn(p, "/");
                char name[FS_MAX_NAME + 1];
                if (n == 0 || n > FS_MAX_NAME) {
                        if (owned)
                                close(cur);
                        return -EINVAL;
                }
                memcpy(name, p, n);
                name[n] = '\0';
                int fd = open_dir_component(w, cur, name);
                if (owned)
                        close(cur);
                if (fd < 0)
                        return fd;
                cur = fd;
                owned = true;
                p += n + 1;
        }
        fs_walker_done(w);
        memcpy(w->cached, path, plen);
        w->cached[plen] = '\0';
        w->cached_fd = cur;
        *ret_dirfd = cur;
        *ret_leaf = slash + 1;
        return 0;
}

/* Visits every entry below dirfd without following a symlink: leaf() for
 * each one that is not a directory (with its lstat), then dir() for each
 * directory, the deepest first (so a mode change cannot lock the walk
 * out of what it still has to visit). */
struct tree_visit {
        int (*leaf)(int dirfd, const char *name, const struct stat *st,
                    const struct tree_visit *v);
        int (*dir)(int dirfd, const struct tree_visit *v);
        uid_t uid;
        gid_t gid;
        void *ctx;
};

static int visit_tree(int dirfd, const struct tree_visit *v, int depth)
{
        if (depth > 2 * FS_MAX_DEPTH)
                return -ELOOP;
        int dup_fd = fs_reopen_dir(dirfd);
        DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
        if (!d) {
                if (dup_fd >= 0)
                        close(dup_fd);
                return -errno;
        }
        int r = 0;
        struct dirent *de;
        while (r == 0 && (de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                struct stat st;
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = -errno;
                } else if (S_ISDIR(st.st_mode)) {
                        int fd = openat(dirfd, de->d_name,
                                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        r = fd < 0 ? -errno : visit_tree(fd, v, depth + 1);
                        if (fd >= 0)
                                close(fd);
                } else {
                        r = v->leaf(dirfd, de->d_name, &st, v);
                }
        }
        closedir(d);
        return r < 0 ? r : v->dir(dirfd, v);
}

static int readonly_leaf(int dirfd, const char *name, const struct stat *st,
                         const struct tree_visit *v)
{
        (void)v;
        /* lstat said regular: the tree is private to us, so fchmodat cannot
         * be raced into a symlink. */
        if (S_ISREG(st->st_mode) && fchmodat(dirfd, name, st->st_mode & 07555, 0) < 0)
                return -errno;
        return 0;
}

static int readonly_dir(int dirfd, const struct tree_visit *v)
{
        (void)v;
        struct stat st;
        if (fstat(dirfd, &st) < 0 || fchmod(dirfd, st.st_mode & 07555) < 0)
                return -errno;
        return 0;
}

int fs_make_readonly(int dirfd)
{
        static const struct tree_visit v = { .leaf = readonly_leaf, .dir = readonly_dir };
        return visit_tree(dirfd, &v, 0);
}

static int chown_leaf(int dirfd, const char *name, const struct stat *st,
                      const struct tree_visit *v)
{
        (void)st;
        return fchownat(dirfd, name, v->uid, v->gid, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int chown_dir(int dirfd, const struct tree_visit *v)
{
        return fchown(dirfd, v->uid, v->gid) < 0 ? -errno : 0;
}

int fs_chown_tree(int dirfd, uid_t uid, gid_t gid)
{
        const struct tree_visit v = { .leaf = chown_leaf,
                                      .dir = chown_dir,
                                      .uid = uid,
                                      .gid = gid };
        return visit_tree(dirfd, &v, 0);
}

/* fs_tree_stats' count, with the inodes of more than one name seen so
 * far: an open-addressing table by (dev, ino), at most half full. */
struct tree_stats {
        uint64_t bytes, entries;
        struct stat_inode {
                dev_t dev;
                ino_t ino; /* 0: a free slot */
        } * seen;
        size_t n, alloc;
};

static size_t inode_slot(const struct stat_inode *v, size_t alloc, dev_t dev, ino_t ino)
{
        uint64_t h = ((uint64_t)ino ^ (uint64_t)dev << 40) * UINT64_C(0x9E3779B97F4A7C15);
        size_t i = (size_t)(h >> 17) & (alloc - 1);
        while (v[i].ino && (v[i].dev != dev || v[i].ino != ino))
                i = (i + 1) & (alloc - 1);
        return i;
}

/* Whether (dev, ino) was seen, adding it: -ENOMEM, 1 seen, 0 new. */
static int inode_seen(struct tree_stats *t, dev_t dev, ino_t ino)
{
        if (2 * (t->n + 1) > t->alloc) {
                size_t na = t->alloc ? 2 * t->alloc : 1024;
                struct stat_inode *nv = calloc(na, sizeof(*nv));
                if (!nv)
                        return -ENOMEM;
                for (size_t i = 0; i < t->alloc; i++)
                        if (t->seen[i].ino)
                                nv[inode_slot(nv, na, t->seen[i].dev, t->seen[i].ino)] =
                                        t->seen[i];
                free(t->seen);
                t->seen = nv;
                t->alloc = na;
        }
        struct stat_inode *s = &t->seen[inode_slot(t->seen, t->alloc, dev, ino)];
        if (s->ino)
                return 1;
        *s = (struct stat_inode){ .dev = dev, .ino = ino };
        t->n++;
        return 0;
}

static int stats_leaf(int dirfd, const char *name, const struct stat *st,
                      const struct tree_visit *v)
{
        (void)dirfd;
        (void)name;
        struct tree_stats *t = v->ctx;
        t->entries++;
        if (!S_ISREG(st->st_mode))
                return 0;
        int seen = st->st_nlink > 1 && st->st_ino ? inode_seen(t, st->st_dev, st->st_ino) : 0;
        if (seen < 0)
                return seen;
        if (!seen)
                t->bytes += (uint64_t)st->st_size;
        return 0;
}

static int stats_dir(int dirfd, const struct tree_visit *v)
{
        (void)dirfd;
        ((struct tree_stats *)v->ctx)->entries++;
        return 0;
}

int fs_tree_stats(int dirfd, uint64_t *ret_bytes, uint64_t *ret_entries)
{
        struct tree_stats t = { 0 };
        const struct tree_visit v = { .leaf = stats_leaf, .dir = stats_dir, .ctx = &t };
        int r = visit_tree(dirfd, &v, 0);
        free(t.seen);
        if (r < 0)
                return r;
        *ret_bytes = t.bytes;
        *ret_entries = t.entries - 1; /* the root is no name of the tree */
        return 0;
}

const char *fs_quote(const char *name, char out[static FS_QUOTE_MAX])
{
        size_t o = 0;
        if (!name)
                name = "(null)";
        for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
                if (o > 200) {
                        memcpy(out + o, "...", 4);
                        return out;
                }
                if (*p < 0x20 || *p >= 0x7f || *p == '\\' || *p == '"')
                        o += (size_t)snprintf(out + o, FS_QUOTE_MAX - o, "\\x%02x", *p);
                else
                        out[o++] = (char)*p;
        }
        out[o] = '\0';
        return out;
}

static pthread_once_t locale_once = PTHREAD_ONCE_INIT;
static locale_t archive_locale;

static void make_locale(void)
{
        archive_locale = newlocale(LC_ALL_MASK, "C.UTF-8", (locale_t)0);
        if (!archive_locale)
                archive_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

locale_t fs_archive_locale_enter(void)
{
        pthread_once(&locale_once, make_locale);
        return archive_locale ? uselocale(archive_locale) : (locale_t)0;
}

void fs_archive_locale_leave(locale_t old)
{
        if (old)
                uselocale(old);
}

int fs_reopen_dir(int dirfd)
{
        return openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}
