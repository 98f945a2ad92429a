/* The tree a pack writes: walked without following a symlink, sorted
 * bytewise by full path so the same tree gives the same archive, hard
 * links found, and bounded in depth, entries and time (storage.h,
 * storage_pack_limits). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "storage/fsutil.h"
#include "storage/pack-internal.h"

bool pack_past_deadline(const struct timespec *d)
{
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        return now.tv_sec > d->tv_sec || (now.tv_sec == d->tv_sec && now.tv_nsec > d->tv_nsec);
}

int pack_over_time(const struct storage_pack_limits *lim, const char *path, struct bc_error *err)
{
        char q[FS_QUOTE_MAX];
        return bc_error_set(err, BC_WORKSPACE_LIMIT, ETIME,
                            "packing took longer than its %g s budget (at %s)", lim->max_seconds,
                            fs_quote(*path ? path : ".", q));
}

ssize_t pack_pread(int fd, void *buf, size_t want, off_t off, const char *path, const char *doing,
                   struct bc_error *err)
{
        char q[FS_QUOTE_MAX];
        for (;;) {
                ssize_t n = pread(fd, buf, want, off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return bc_error_set(err, pack_walk_code(errno), errno,
                                            "cannot read %s: %m", fs_quote(path, q));
                if (n == 0)
                        return bc_error_set(err, BC_IO, EAGAIN, "pack: %s shrank while being %s",
                                            fs_quote(path, q), doing);
                return n;
        }
}

/* The tree's own faults: an entry we may not read is as much the job's
 * doing as one too many. */
enum bc_code pack_walk_code(int e)
{
        return e == EACCES || e == EPERM || e == ELOOP || e == ENAMETOOLONG ? BC_WORKSPACE_LIMIT
                                                                            : BC_IO;
}

void pack_list_done(struct pack_list *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i].path);
        free(l->v);
}

static int cmp_path_item(const void *key, const void *item)
{
        return strcmp(key, ((const struct pack_item *)item)->path);
}

size_t pack_list_find(const struct pack_list *l, const char *path)
{
        const struct pack_item *it = l->n ? bsearch(path, l->v, l->n, sizeof(l->v[0]),
                                                    cmp_path_item)
                                          : NULL;
        return it ? (size_t)(it - l->v) : l->n;
}

static int list_add(struct pack_list *l, const char *prefix, const char *name,
                    const struct stat *st, struct bc_error *err)
{
        if (l->n >= l->lim->max_entries) {
                char q[FS_QUOTE_MAX];
                return bc_error_set(err, BC_WORKSPACE_LIMIT, E2BIG,
                                    "more than %llu files (at %s/%s)",
                                    (unsigned long long)l->lim->max_entries,
                                    fs_quote(*prefix ? prefix : ".", q), name);
        }
        if (l->n % 256 == 0 && pack_past_deadline(&l->deadline))
                return pack_over_time(l->lim, prefix, err);
        if (l->n == l->alloc) {
                size_t na = l->alloc ? l->alloc * 2 : 1024;
                struct pack_item *v = realloc(l->v, na * sizeof(*v));
                if (!v)
                        return bc_error_set(err, BC_IO, ENOMEM, "pack: out of memory");
                l->v = v;
                l->alloc = na;
        }
        char *p = NULL;
        if (asprintf(&p, "%s%s%s", prefix, *prefix ? "/" : "", name) < 0)
                return bc_error_set(err, BC_IO, ENOMEM, "pack: out of memory");
        if (strlen(p) > FS_MAX_PATH) {
                char q[FS_QUOTE_MAX];
                bc_error_set(err, BC_WORKSPACE_LIMIT, ENAMETOOLONG,
                             "path longer than %d bytes: %s", FS_MAX_PATH, fs_quote(p, q));
                free(p);
                return -ENAMETOOLONG;
        }
        l->v[l->n] = (struct pack_item){ .path = p,
                                         .mode = st->st_mode,
                                         .nlink = st->st_nlink,
                                         .dev = st->st_dev,
                                         .ino = st->st_ino,
                                         .size = st->st_size };
        l->n++;
        return 0;
}

/* Walks the tree without following symlinks, recording what to pack. */
static int collect(int dirfd, const char *prefix, int depth, struct pack_list *l,
                   struct bc_error *err)
{
        char q[FS_QUOTE_MAX];
        if (depth > (int)l->lim->max_depth)
                return bc_error_set(err, BC_WORKSPACE_LIMIT, ELOOP,
                                    "directories nested deeper than %u levels: %s",
                                    l->lim->max_depth, fs_quote(prefix, q));
        int dup_fd = fs_reopen_dir(dirfd);
        _cleanup_(closedirp) DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
        if (!d) {
                int e = errno;
                if (dup_fd >= 0)
                        close(dup_fd);
                return bc_error_set(err, pack_walk_code(e), e, "cannot read directory %s: %s",
                                    fs_quote(*prefix ? prefix : ".", q), strerror(e));
        }
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                struct stat st;
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return bc_error_set(err, pack_walk_code(errno), errno,
                                            "cannot stat %s/%s: %m",
                                            fs_quote(*prefix ? prefix : ".", q), de->d_name);
                if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
                        l->skipped++;
                        continue;
                }
                int r = list_add(l, prefix, de->d_name, &st, err);
                if (r < 0)
                        return r;
                if (!S_ISDIR(st.st_mode))
                        continue;
                _cleanup_fd_ int sub = openat(dirfd, de->d_name,
                                              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        return bc_error_set(err, pack_walk_code(errno), errno,
                                            "cannot open %s: %m",
                                            fs_quote(l->v[l->n - 1].path, q));
                _cleanup_free_ char *path = strdup(l->v[l->n - 1].path);
                if (!path)
                        return bc_error_set(err, BC_IO, ENOMEM, "pack: out of memory");
                r = collect(sub, path, depth + 1, l, err);
                if (r < 0)
                        return r;
        }
        if (errno)
                return bc_error_set(err, BC_IO, errno, "pack: readdir %s: %m",
                                    *prefix ? prefix : ".");
        return 0;
}

static int cmp_item(const void *a, const void *b)
{
        return strcmp(((const struct pack_item *)a)->path, ((const struct pack_item *)b)->path);
}

/* Items sharing an inode, in path order within each inode. */
static int cmp_inode(const void *a, const void *b)
{
        const struct pack_item *x = *(const struct pack_item *const *)a;
        const struct pack_item *y = *(const struct pack_item *const *)b;
        if (x->dev != y->dev)
                return x->dev < y->dev ? -1 : 1;
        if (x->ino != y->ino)
                return x->ino < y->ino ? -1 : 1;
        return x < y ? -1 : x > y; /* the list is sorted by path */
}

/* After the sort by path: every regular file with other names gets
 * link_to = the first of its names. */
static int resolve_links(struct pack_list *l, struct bc_error *err)
{
        size_t n = 0;
        for (size_t i = 0; i < l->n; i++)
                n += S_ISREG(l->v[i].mode) && l->v[i].nlink > 1;
        if (n < 2)
                return 0;
        struct pack_item **v = malloc(n * sizeof(*v));
        if (!v)
                return bc_error_set(err, BC_IO, ENOMEM, "pack: out of memory");
        n = 0;
        for (size_t i = 0; i < l->n; i++)
                if (S_ISREG(l->v[i].mode) && l->v[i].nlink > 1)
                        v[n++] = &l->v[i];
        qsort(v, n, sizeof(*v), cmp_inode);
        const struct pack_item *first = v[0];
        for (size_t i = 1; i < n; i++) {
                if (v[i]->dev == first->dev && v[i]->ino == first->ino)
                        v[i]->link_to = first->path;
                else
                        first = v[i];
        }
        free(v);
        return 0;
}

int pack_walk(int rootfd, const struct storage_pack_limits *lim, struct pack_list *ret,
              struct bc_error *err)
{
        struct pack_list l = { .lim = lim };
        clock_gettime(CLOCK_MONOTONIC, &l.deadline);
        double whole = (double)(time_t)lim->max_seconds;
        l.deadline.tv_sec += (time_t)whole;
        l.deadline.tv_nsec += (long)((lim->max_seconds - whole) * 1e9);
        if (l.deadline.tv_nsec >= 1000000000L) {
                l.deadline.tv_sec++;
                l.deadline.tv_nsec -= 1000000000L;
        }
        int r = collect(rootfd, "", 0, &l, err);
        if (r < 0) {
                pack_list_done(&l);
                return r;
        }
        if (l.n)
                qsort(l.v, l.n, sizeof(l.v[0]), cmp_item);
        r = resolve_links(&l, err);
        if (r < 0) {
                pack_list_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}
