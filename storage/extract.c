#include "storage/extract.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "common/cleanup.h"
#include "common/io.h"
#include "common/rmtree.h"
#include "storage/extract-internal.h"
#include "storage/fsutil.h"

/* Directories whose final mode denies us write or search get it at the
 * end; only those are remembered, so memory stays small. */
#define MAX_DIR_FIXUPS 65536
/* How often the free space is looked at when it is bounded (min_free):
 * after this much data or this many entries. */
#define FREE_CHECK_BYTES (8u << 20)
#define FREE_CHECK_ENTRIES 1024

void extract_sha_hex(EVP_MD_CTX *sha, char out[65])
{
        static const char hex[] = "0123456789abcdef";
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        EVP_DigestFinal_ex(sha, md, &n);
        for (unsigned int i = 0; i < n && i < 32; i++) {
                out[2 * i] = hex[md[i] >> 4];
                out[2 * i + 1] = hex[md[i] & 15];
        }
        out[64] = '\0';
}

/* Pulls from the source, hashing and counting every byte. */
static ssize_t source_pull(struct extract_source *s, const void **buf, bool *too_big)
{
        ssize_t n = s->read(s->ctx, buf, &s->err);
        if (n < 0) {
                s->failed = true;
                return n;
        }
        s->total += (uint64_t)n;
        if (s->total > s->max) {
                *too_big = true;
                return -EFBIG;
        }
        if (n > 0 && EVP_DigestUpdate(s->sha, *buf, (size_t)n) != 1)
                return -EIO;
        return n;
}

static la_ssize_t archive_read_cb(struct archive *a, void *ctx, const void **buf)
{
        struct extractor *x = ctx;
        ssize_t n = source_pull(x->src, buf, &x->too_big);
        if (n < 0) {
                archive_set_error(a, (int)-n, "source read failed");
                return -1;
        }
        return n;
}

int extract_bad(struct extractor *x, struct bc_error *err, const char *what)
{
        return bc_error_set(err, BC_BAD_ARCHIVE, EINVAL, "entry %llu \"%s\": %s",
                            (unsigned long long)x->entries, fs_quote(x->path, x->quoted), what);
}

/* libarchive failed: tell a transport failure, an oversized download and
 * a corrupt stream apart. */
static int archive_failed(struct extractor *x, struct bc_error *err)
{
        if (x->src->failed) {
                bc_error_move(err, &x->src->err);
                return -EIO;
        }
        if (x->too_big)
                return bc_error_set(err, BC_BAD_ARCHIVE, EFBIG, "archive larger than %llu bytes",
                                    (unsigned long long)x->l->max_download);
        return bc_error_set(err, BC_BAD_ARCHIVE, EINVAL, "corrupt archive after entry %llu: %s",
                            (unsigned long long)x->entries,
                            archive_error_string(x->a) ?: "unknown error");
}

/* Stops before the filesystem's free space goes below min_free: what
 * fills it is not the archive's fault (other files, other jobs). */
static int check_free(struct extractor *x, uint64_t unc, struct bc_error *err)
{
        if (!x->l->min_free || (x->free_checked && unc - x->checked_bytes < FREE_CHECK_BYTES &&
                                x->entries - x->checked_entries < FREE_CHECK_ENTRIES))
                return 0;
        x->free_checked = true;
        x->checked_bytes = unc;
        x->checked_entries = x->entries;
        struct statvfs sv;
        if (fstatvfs(x->walker.rootfd, &sv) < 0)
                return bc_error_set(err, BC_IO, errno, "extract: statvfs: %m");
        uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
        if (avail >= x->l->min_free)
                return 0;
        return bc_error_set(err, BC_IO, ENOSPC,
                            "extract: %llu MiB free on the filesystem after %llu MiB of the "
                            "archive, below the %llu MiB kept free (--disk-reserve)",
                            (unsigned long long)(avail >> 20), (unsigned long long)(unc >> 20),
                            (unsigned long long)(x->l->min_free >> 20));
}

static int check_caps(struct extractor *x, struct bc_error *err)
{
        uint64_t unc = (uint64_t)archive_filter_bytes(x->a, 0);
        int r = check_free(x, unc, err);
        if (r < 0)
                return r;
        uint64_t raw = x->src->total;
        if (unc > x->l->max_bytes || x->bytes > x->l->max_bytes)
                return extract_bad(x, err, "archive expands beyond the size limit");
        if (x->l->max_ratio && unc > x->l->ratio_floor && raw && unc / raw > x->l->max_ratio)
                return extract_bad(x, err,
                                   "compression ratio beyond the limit (decompression bomb?)");
        return 0;
}

static int pwrite_all(int fd, const char *p, size_t len, off_t off)
{
        while (len) {
                ssize_t n = pwrite(fd, p, len, off);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += n;
                len -= (size_t)n;
                off += n;
        }
        return 0;
}

/* Maps a failure to resolve or create a name: the archive's fault when it
 * is about the tree's shape, ours (BC_IO) otherwise. */
int extract_create_failed(struct extractor *x, int r, struct bc_error *err)
{
        switch (-r) {
        case ELOOP:
                return extract_bad(x, err, "a parent is a symlink (refusing to write through it)");
        case ENOTDIR:
                return extract_bad(x, err, "a parent is not a directory");
        case EEXIST:
                return extract_bad(x, err,
                                   "duplicate entry (refusing to replace an existing name)");
        default:
                return bc_error_set(err, BC_IO, -r, "extract \"%s\": %s",
                                    fs_quote(x->path, x->quoted), strerror(-r));
        }
}

static int reserve_bytes(struct extractor *x, int64_t size, struct bc_error *err)
{
        if (size < 0 || (uint64_t)size > x->l->max_bytes - x->bytes)
                return extract_bad(x, err, "file larger than the remaining size limit");
        x->bytes += (uint64_t)size;
        return 0;
}

static int extract_file(struct extractor *x, struct archive_entry *e, int dirfd, const char *leaf,
                        mode_t perm, struct bc_error *err)
{
        int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
        int r = reserve_bytes(x, size, err);
        if (r < 0)
                return r;
        _cleanup_fd_ int fd = openat(dirfd, leaf,
                                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return extract_create_failed(x, -errno, err);
        for (;;) {
                const void *buf;
                size_t len;
                la_int64_t off;
                r = archive_read_data_block(x->a, &buf, &len, &off);
                if (r == ARCHIVE_EOF)
                        break;
                if (r < ARCHIVE_WARN)
                        return archive_failed(x, err);
                if (off < 0 || (uint64_t)off + len > (uint64_t)size)
                        return extract_bad(x, err, "data beyond the declared size");
                r = pwrite_all(fd, buf, len, off);
                if (r < 0)
                        return extract_create_failed(x, r, err);
                r = check_caps(x, err);
                if (r < 0)
                        return r;
        }
        /* Sparse entries may end in a hole. */
        if (ftruncate(fd, size) < 0 || fchmod(fd, perm) < 0)
                return extract_create_failed(x, -errno, err);
        return 0;
}

int extract_add_fixup(struct extractor *x, const char *path, mode_t perm, struct bc_error *err)
{
        if (x->nfix >= MAX_DIR_FIXUPS)
                return extract_bad(x, err, "too many directories without owner rwx");
        if (x->nfix % 256 == 0) {
                struct dir_fixup *n = realloc(x->fix, (x->nfix + 256) * sizeof(*n));
                if (!n)
                        return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
                x->fix = n;
        }
        x->fix[x->nfix].path = strdup(path);
        if (!x->fix[x->nfix].path)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        x->fix[x->nfix++].mode = perm;
        return 0;
}

static int extract_dir(struct extractor *x, int dirfd, const char *leaf, mode_t perm,
                       struct bc_error *err)
{
        if (mkdirat(dirfd, leaf, 0700) < 0 && errno != EEXIST)
                return extract_create_failed(x, -errno, err);
        /* An existing directory (made implicitly for an earlier entry) is
         * fine; anything else by that name is a duplicate. */
        _cleanup_fd_ int fd = openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return extract_create_failed(
                        x, errno == ENOTDIR || errno == ELOOP ? -EEXIST : -errno, err);
        /* Keep owner rwx while extracting so later entries can go in. */
        if (fchmod(fd, perm | 0700) < 0)
                return extract_create_failed(x, -errno, err);
        bool noted = false;
        int r = x->apply ? apply_note_dir_mode(x, perm, &noted, err) : 0;
        if (r < 0 || noted)
                return r;
        return (perm & 0700) == 0700 ? 0 : extract_add_fixup(x, x->path, perm, err);
}

static int extract_symlink(struct extractor *x, struct archive_entry *e, int dirfd,
                           const char *leaf, struct bc_error *err)
{
        const char *target = archive_entry_symlink(e);
        if (!target)
                target = archive_entry_symlink_utf8(e);
        if (!target || !*target || strlen(target) > FS_MAX_PATH)
                return extract_bad(x, err, "symlink target empty or too long");
        if (symlinkat(target, dirfd, leaf) < 0)
                return extract_create_failed(x, -errno, err);
        return 0;
}

/* A hard link to a regular file this archive already extracted becomes a
 * hard link again (free: packing keeps links, so must unpacking, or 64
 * links to 8 MiB would come back as 512 MiB).  Only a file inside the
 * tree, opened without following anything, can be linked; where linking
 * is impossible it becomes a copy, within the byte limit. */
static int extract_hardlink(struct extractor *x, const char *link, mode_t perm,
                            struct bc_error *err)
{
        char src[FS_MAX_PATH + 1];
        if (fs_normalize(link, src) <= 0)
                return extract_bad(x, err, "hard link to an unsafe path");
        int dirfd;
        const char *leaf;
        /* Looking the target up must not make directories on the way. */
        x->walker.create = false;
        int r = fs_walker_parent(&x->walker, src, &dirfd, &leaf);
        x->walker.create = true;
        _cleanup_fd_ int in = r < 0 ? -1
                                    : openat(dirfd, leaf,
                                             O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode))
                return extract_bad(x, err,
                                   x->apply ? "hard link to something that is not a file of the "
                                              "tree or of this layer"
                                            : "hard link to something that is not a file "
                                              "extracted earlier");
        r = fs_walker_parent(&x->walker, x->path, &dirfd, &leaf);
        if (r < 0)
                return extract_create_failed(x, r, err);
        r = x->apply ? apply_prepare(x, dirfd, leaf, false, err) : 0;
        if (r < 0)
                return r;
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", in);
        if (linkat(AT_FDCWD, proc, dirfd, leaf, AT_SYMLINK_FOLLOW) == 0)
                return 0;
        if (errno == EEXIST)
                return extract_create_failed(x, -errno, err);
        r = reserve_bytes(x, st.st_size, err);
        if (r < 0)
                return r;
        _cleanup_fd_ int out = openat(dirfd, leaf,
                                      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0)
                return extract_create_failed(x, -errno, err);
        char buf[65536];
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return extract_create_failed(x, -errno, err);
                if (n == 0)
                        break;
                r = bc_write_all(out, buf, (size_t)n);
                if (r < 0)
                        return extract_create_failed(x, r, err);
        }
        if (fchmod(out, perm) < 0)
                return extract_create_failed(x, -errno, err);
        return 0;
}

static int extract_entry(struct extractor *x, struct archive_entry *e, struct bc_error *err)
{
        const char *raw = archive_entry_pathname(e);
        if (!raw)
                raw = archive_entry_pathname_utf8(e);
        if (!raw) {
                x->path[0] = '\0';
                return extract_bad(x, err, "path not representable");
        }
        int depth = fs_normalize(raw, x->path);
        if (depth < 0) {
                /* Name the raw path: it is what the author must fix. */
                snprintf(x->path, sizeof(x->path), "%s", raw);
                return extract_bad(x, err, "unsafe path (absolute, \"..\", too long or too deep)");
        }
        mode_t type = archive_entry_filetype(e);
        mode_t perm = archive_entry_perm(e);
        /* An image's setuid bits are cleared, never honoured: even on a
         * nosuid mount a setuid file owned by the worker has no business in
         * its cache. */
        if ((perm & (S_ISUID | S_ISGID)) && !x->l->image)
                return extract_bad(x, err, "setuid/setgid bit");
        perm &= 0777; /* the sticky bit is meaningless for us: dropped */
        const char *link = archive_entry_hardlink(e);
        if (depth == 0)
                return type == AE_IFDIR && !link ? 0 : extract_bad(x, err, "empty path");
        bool whiteout = false;
        int r = x->apply ? apply_whiteout(x, e, &whiteout, err) : 0;
        if (r < 0 || whiteout)
                return r;
        if (link)
                return extract_hardlink(x, link, perm, err);
        if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
                /* An image's /dev entries are not created: the sandbox
                 * mounts its own /dev over them anyway. */
                if (x->l->image && (type == AE_IFCHR || type == AE_IFBLK || type == AE_IFIFO ||
                                    type == AE_IFSOCK))
                        return 0;
                return extract_bad(x, err,
                                   "not a file, directory or symlink (device, fifo or socket)");
        }

        int dirfd;
        const char *leaf;
        r = fs_walker_parent(&x->walker, x->path, &dirfd, &leaf);
        if (r < 0)
                return extract_create_failed(x, r, err);
        r = x->apply ? apply_prepare(x, dirfd, leaf, type == AE_IFDIR, err) : 0;
        if (r < 0)
                return r;
        switch (type) {
        case AE_IFREG:
                return extract_file(x, e, dirfd, leaf, perm, err);
        case AE_IFDIR:
                return extract_dir(x, dirfd, leaf, perm, err);
        default:
                return extract_symlink(x, e, dirfd, leaf, err);
        }
}

static int cmp_fixup_desc(const void *a, const void *b)
{
        return strcmp(((const struct dir_fixup *)b)->path, ((const struct dir_fixup *)a)->path);
}

/* Children before parents (reverse order), so a parent losing its
 * search bit does not lock us out of its children. */
static int apply_fixups(struct extractor *x, struct bc_error *err)
{
        if (x->nfix)
                qsort(x->fix, x->nfix, sizeof(x->fix[0]), cmp_fixup_desc);
        for (size_t i = 0; i < x->nfix; i++) {
                int dirfd;
                const char *leaf;
                snprintf(x->path, sizeof(x->path), "%s", x->fix[i].path);
                x->walker.create = false;
                int r = x->path[0] ? fs_walker_parent(&x->walker, x->path, &dirfd, &leaf) : 0;
                _cleanup_fd_ int fd = r < 0        ? -1
                                      : x->path[0] ? openat(dirfd, leaf,
                                                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                                                    O_CLOEXEC)
                                                   : fs_reopen_dir(x->walker.rootfd);
                r = r < 0 ? r : fd < 0 ? -errno : 0;
                /* A layer may remove a directory it opened up for writing
                 * (a whiteout of it after one of a name inside). */
                if (x->apply && (r == -ENOENT || r == -ENOTDIR || r == -ELOOP))
                        continue;
                if (r < 0 || fchmod(fd, x->fix[i].mode) < 0)
                        return extract_create_failed(x, r < 0 ? r : -errno, err);
        }
        return 0;
}

static int extract_all(struct extractor *x, struct bc_error *err)
{
        for (;;) {
                struct archive_entry *e;
                int r = archive_read_next_header(x->a, &e);
                if (r == ARCHIVE_EOF)
                        break;
                if (r < ARCHIVE_WARN)
                        return archive_failed(x, err);
                if (++x->entries > x->l->max_entries)
                        return extract_bad(x, err, "too many entries");
                r = check_caps(x, err);
                r = r ? r : extract_entry(x, e, err);
                if (r < 0)
                        return r;
        }
        return apply_fixups(x, err);
}

/* Reads what libarchive left (gzip trailer, tar padding, trailing bytes)
 * so the hash covers the whole object. */
static int drain(struct extractor *x, struct bc_error *err)
{
        for (;;) {
                const void *buf;
                ssize_t n = source_pull(x->src, &buf, &x->too_big);
                if (n == 0)
                        return 0;
                if (n < 0)
                        return archive_failed(x, err);
        }
}

static void archive_freep(struct archive **a)
{
        if (*a)
                archive_read_free(*a);
}

int extract_stream(struct extract_source *src, int rootfd, const struct storage_limits *l,
                   bool apply, struct extract_stats *ret, struct bc_error *err)
{
        struct extractor x = { .src = src, .l = l };
        _cleanup_(archive_freep) struct archive *a = archive_read_new();
        if (!a)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        x.a = a;
        int r = apply ? apply_begin(&x, err) : 0;
        if (r < 0)
                return r;
        /* Only tar (ustar/pax/GNU) behind gzip or nothing: every other
         * format and filter is attack surface we do not need. */
        archive_read_support_format_tar(a);
        archive_read_support_format_gnutar(a);
        archive_read_support_filter_gzip(a);
        archive_read_support_filter_none(a);
        fs_walker_init(&x.walker, rootfd, true, 0755);
        locale_t old = fs_archive_locale_enter();
        if (archive_read_open(a, &x, NULL, archive_read_cb, NULL) != ARCHIVE_OK)
                r = archive_failed(&x, err);
        else
                r = extract_all(&x, err);
        fs_archive_locale_leave(old);
        r = r ? r : drain(&x, err);
        fs_walker_done(&x.walker);
        apply_end(&x);
        for (size_t i = 0; i < x.nfix; i++)
                free(x.fix[i].path);
        free(x.fix);
        if (r < 0)
                return r;
        ret->bytes = x.bytes;
        ret->entries = x.entries;
        return 0;
}

static bool dir_is_empty(int fd)
{
        int d2 = fs_reopen_dir(fd);
        DIR *d = d2 < 0 ? NULL : fdopendir(d2);
        if (!d) {
                if (d2 >= 0)
                        close(d2);
                return false;
        }
        struct dirent *de;
        bool empty = true;
        while (empty && (de = readdir(d)))
                empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
        closedir(d);
        return empty;
}

int extract_dest_open(const char *dest, int *ret_fd, bool *ret_created, struct bc_error *err)
{
        bool created = mkdir(dest, 0755) == 0;
        if (!created && errno != EEXIST)
                return bc_error_set(err, BC_IO, errno, "create %s: %m", dest);
        int fd = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return bc_error_set(err, BC_IO, errno, "open %s: %m", dest);
        if (!created && !dir_is_empty(fd)) {
                close(fd);
                return bc_error_set(err, BC_IO, ENOTEMPTY, "extract into %s: directory not empty",
                                    dest);
        }
        *ret_fd = fd;
        *ret_created = created;
        return 0;
}

void extract_dest_abort(const char *dest, int fd, bool created)
{
        if (created)
                (void)fs_rm_rf(dest);
        else if (fd >= 0)
                (void)fs_empty_dir(fd);
}
