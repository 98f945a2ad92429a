/* A job's merged overlay workspace as a tree of its own, built cheaply
 * beside the lower it came from (see storage_cache_promote): what the job
 * did not touch is hard-linked from the lower (cache entries are never
 * modified, so two entries may share an inode), what it changed or added
 * is copied (holes kept, since where they are is part of the packed
 * tree), so the cost follows the job's changes and the number of names,
 * not the bytes of the tree.
 *
 * Which names the job did not touch: those absent from the upper
 * directory.  That holds because the overlay is mounted with
 * redirect_dir=off and metacopy=off (see sandbox_overlay_mount): a merged
 * path not in the upper is the lower's file at the same path.  Anything
 * unexpected (a type the packer would not store, a lower file that does
 * not match) makes the build fail: then there is simply no entry, and the
 * next job extracts the version as on any miss.
 *
 * With no upper at all the same walk clones a tree as hard links
 * (fs_clone_tree): the start of a cache entry built from a cached prefix
 * of its layers (cache_layers.c). */
#include "storage/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

struct link_seen {
        dev_t dev;
        ino_t ino;
        char *path; /* relative to the destination's root */
};

struct flatten {
        int dest_root;
        uid_t uid;
        gid_t gid;
        /* Inodes with other names, by (dev, ino): an open-addressing hash
         * table (a slot with a NULL path is free), never more than half
         * full.  Not a list scanned per name: a job can make every one of
         * its `files` inodes a link (and a session's versions add up), so
         * a scan would cost the worker quadratic time, unbounded by any
         * job limit (100,000 linked inodes took 10 s, 1,000,000 would take
         * a quarter of an hour). */
        struct link_seen *seen;
        size_t n_seen, alloc_seen; /* alloc_seen: 0 or a power of two */
        uint64_t bytes, entries;
};

static size_t seen_slot(const struct link_seen *v, size_t alloc, dev_t dev, ino_t ino)
{
        uint64_t h = ((uint64_t)ino ^ ((uint64_t)dev << 32 | (uint64_t)dev >> 32)) *
                     UINT64_C(0x9E3779B97F4A7C15);
        size_t i = (size_t)(h >> 17) & (alloc - 1);
        while (v[i].path && (v[i].dev != dev || v[i].ino != ino))
                i = (i + 1) & (alloc - 1);
        return i;
}

static int seen_grow(struct flatten *f)
{
        size_t na = f->alloc_seen ? 2 * f->alloc_seen : 1024;
        struct link_seen *n = calloc(na, sizeof(*n));
        if (!n)
                return -ENOMEM;
        for (size_t i = 0; i < f->alloc_seen; i++)
                if (f->seen[i].path)
                        n[seen_slot(n, na, f->seen[i].dev, f->seen[i].ino)] = f->seen[i];
        free(f->seen);
        f->seen = n;
        f->alloc_seen = na;
        return 0;
}

static int opt_openat(int dirfd, const char *name)
{
        if (dirfd < 0)
                return -1;
        return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Copies src to dst, data regions only (holes stay holes), then sizes it. */
static int copy_sparse(int src, int dst, off_t size)
{
        char buf[65536];
        off_t off = 0;
        while (off < size) {
                off_t start = lseek(src, off, SEEK_DATA);
                if (start < 0 && errno == ENXIO)
                        break; /* only a hole is left */
                if (start < 0)
                        return -errno; /* never guess the data */
                off_t end = lseek(src, start, SEEK_HOLE);
                if (end < 0)
                        return -errno;
                for (off_t p = start; p < end;) {
                        size_t want = (size_t)(end - p) < sizeof(buf) ? (size_t)(end - p)
                                                                      : sizeof(buf);
                        ssize_t k = pread(src, buf, want, p);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0)
                                return k < 0 ? -errno : -EIO;
                        for (ssize_t w = 0; w < k;) {
                                ssize_t x = pwrite(dst, buf + w, (size_t)(k - w), p + w);
                                if (x < 0 && errno != EINTR)
                                        return -errno;
                                w += x > 0 ? x : 0;
                        }
                        p += k;
                }
                off = end;
        }
        return ftruncate(dst, size) < 0 ? -errno : 0;
}

static int copy_file(struct flatten *f, int mdir, int ddir, const char *name,
                     const struct stat *st)
{
        _cleanup_fd_ int src = openat(mdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (src < 0)
                return -errno;
        _cleanup_fd_ int dst = openat(ddir, name,
                                      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (dst < 0)
                return -errno;
        int r = copy_sparse(src, dst, st->st_size);
        if (r == 0 && (fchown(dst, f->uid, f->gid) < 0 || fchmod(dst, st->st_mode & 0777) < 0))
                r = -errno;
        return r;
}

/* A file's data bytes, holes left out: what packing counts, what a
 * download of the version is charged, and so what the cache's budget is
 * charged for it.  Its size instead would let a job's 1 TiB sparse file
 * (a few blocks on disk, holes kept) be charged 1 TiB and evict every
 * other entry on the worker, other sessions' included.  Only a file with
 * fewer blocks than its size may have holes: only those are looked at. */
static uint64_t data_bytes(int mdir, const char *name, const struct stat *st)
{
        if ((uint64_t)st->st_blocks * 512 >= (uint64_t)st->st_size)
                return (uint64_t)st->st_size;
        _cleanup_fd_ int fd = openat(mdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return (uint64_t)st->st_size;
        uint64_t n = 0;
        for (off_t off = 0; off < st->st_size;) {
                off_t start = lseek(fd, off, SEEK_DATA);
                off_t end = start < 0 ? -1 : lseek(fd, start, SEEK_HOLE);
                if (start < 0 && errno == ENXIO)
                        break;
                if (end < 0)
                        return (uint64_t)st->st_size; /* unknown: its size, as before */
                n += (uint64_t)(end - start);
                /* Packing widens each region to 4 KiB boundaries
                 * (PACK_HOLE_ALIGN): count as much, never beyond the size. */
                n += (uint64_t)(start % 4096) + (end % 4096 ? 4096 - (uint64_t)(end % 4096) : 0);
                off = end;
        }
        return n < (uint64_t)st->st_size ? n : (uint64_t)st->st_size;
}

/* A second name of an inode already placed: a link to the first. */
static int link_again(struct flatten *f, const struct stat *st, int ddir, const char *name,
                      const char *rel, bool *ret_done)
{
        *ret_done = false;
        if (st->st_nlink < 2)
                return 0;
        if (2 * (f->n_seen + 1) > f->alloc_seen && seen_grow(f) < 0)
                return -ENOMEM;
        struct link_seen *s = &f->seen[seen_slot(f->seen, f->alloc_seen, st->st_dev, st->st_ino)];
        if (s->path) {
                *ret_done = true;
                return linkat(f->dest_root, s->path, ddir, name, 0) < 0 ? -errno : 0;
        }
        char *p = strdup(rel);
        if (!p)
                return -ENOMEM;
        *s = (struct link_seen){ .dev = st->st_dev, .ino = st->st_ino, .path = p };
        f->n_seen++;
        return 0;
}

static int regular(struct flatten *f, int mdir, int udir, int ldir, int ddir, const char *name,
                   const char *rel, const struct stat *st)
{
        bool done = false;
        int r = link_again(f, st, ddir, name, rel, &done);
        if (r < 0 || done)
                return r;
        f->bytes += data_bytes(mdir, name, st);
        struct stat us, ls;
        bool changed = udir >= 0 && fstatat(udir, name, &us, AT_SYMLINK_NOFOLLOW) == 0;
        if (!changed && ldir >= 0 && fstatat(ldir, name, &ls, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(ls.st_mode) && ls.st_size == st->st_size && ls.st_mode == st->st_mode)
                return linkat(ldir, name, ddir, name, 0) < 0 ? -errno : 0;
        if (!changed)
                return -ESTALE; /* not in the upper, not as in the lower */
        return copy_file(f, mdir, ddir, name, st);
}

static int walk(struct flatten *f, int mdir, int udir, int ldir, int ddir, const char *rel,
                int depth);

static int one(struct flatten *f, int mdir, int udir, int ldir, int ddir, const char *name,
               const char *rel, int depth)
{
        struct stat st;
        if (fstatat(mdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        f->entries++;
        if (S_ISREG(st.st_mode))
                return regular(f, mdir, udir, ldir, ddir, name, rel, &st);
        if (S_ISLNK(st.st_mode)) {
                char target[4097];
                ssize_t k = readlinkat(mdir, name, target, sizeof(target) - 1);
                if (k < 0)
                        return -errno;
                target[k] = '\0';
                if (symlinkat(target, ddir, name) < 0 ||
                    fchownat(ddir, name, f->uid, f->gid, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                return 0;
        }
        if (!S_ISDIR(st.st_mode))
                return -ENOTSUP; /* the packer stores no such entry either */
        if (mkdirat(ddir, name, 0700) < 0)
                return -errno;
        _cleanup_fd_ int m = opt_openat(mdir, name);
        _cleanup_fd_ int u = opt_openat(udir, name);
        _cleanup_fd_ int l = opt_openat(ldir, name);
        _cleanup_fd_ int d = opt_openat(ddir, name);
        if (m < 0 || d < 0)
                return -errno;
        int r = walk(f, m, u, l, d, rel, depth + 1);
        if (r == 0 && (fchown(d, f->uid, f->gid) < 0 || fchmod(d, st.st_mode & 0777) < 0))
                r = -errno;
        return r;
}

static int walk(struct flatten *f, int mdir, int udir, int ldir, int ddir, const char *rel,
                int depth)
{
        if (depth > 2 * FS_MAX_DEPTH)
                return -ELOOP;
        int dup_fd = fs_reopen_dir(mdir);
        DIR *dir = dup_fd < 0 ? NULL : fdopendir(dup_fd);
        if (!dir) {
                if (dup_fd >= 0)
                        close(dup_fd);
                return -errno;
        }
        int r = 0;
        struct dirent *de;
        while (r == 0 && (de = readdir(dir))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                char *sub = NULL;
                if (asprintf(&sub, "%s%s%s", rel, *rel ? "/" : "", de->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                r = one(f, mdir, udir, ldir, ddir, de->d_name, sub, depth);
                free(sub);
        }
        closedir(dir);
        return r;
}

static int flatten_fds(int m, int u, int l, int d, uid_t uid, gid_t gid, uint64_t *ret_bytes,
                       uint64_t *ret_entries)
{
        struct flatten f = { .dest_root = d, .uid = uid, .gid = gid };
        int r = walk(&f, m, u, l, d, "", 0);
        if (r == 0 && fchown(d, uid, gid) < 0)
                r = -errno;
        for (size_t i = 0; i < f.alloc_seen; i++)
                free(f.seen[i].path);
        free(f.seen);
        *ret_bytes = f.bytes;
        *ret_entries = f.entries;
        return r;
}

int fs_overlay_flatten(const char *merged, const char *upper, const char *lower, const char *dest,
                       uid_t uid, gid_t gid, uint64_t *ret_bytes, uint64_t *ret_entries)
{
        _cleanup_fd_ int m = open(merged, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_fd_ int u = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_fd_ int l = open(lower, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_fd_ int d = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (m < 0 || u < 0 || l < 0 || d < 0)
                return -errno;
        return flatten_fds(m, u, l, d, uid, gid, ret_bytes, ret_entries);
}

/* The overlay case with nothing changed: no upper, so every file is the
 * lower's, hard-linked. */
int fs_clone_tree(const char *src, const char *dest, uid_t uid, gid_t gid)
{
        _cleanup_fd_ int s = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_fd_ int d = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (s < 0 || d < 0 || fstat(s, &st) < 0)
                return -errno;
        uint64_t bytes, entries;
        int r = flatten_fds(s, -1, s, d, uid, gid, &bytes, &entries);
        if (r == 0 && fchmod(d, st.st_mode & 0777) < 0)
                r = -errno;
        return r;
}
