/* Deterministic packing: the same tree gives the same .tar.gz bytes, so
 * the SHA-256 of the bytes can be the object's name.
 *
 * Format: pax restricted (libarchive's "ustar unless it cannot"): plain
 * ustar headers for ordinary entries, which every tar reads, and a pax
 * extended header only where ustar cannot say it (paths over 100/155
 * bytes, files over 8 GiB, long symlink targets).  GNU tar's format would
 * also work, but pax is the POSIX one and what GNU tar reads natively.
 * Path names are written under a fixed locale (fs_archive_locale_enter):
 * UTF-8 names as pax UTF-8, anything else as raw bytes (hdrcharset=BINARY),
 * whatever the process's locale.
 *
 * What varies between machines is removed: entries are sorted bytewise by
 * full path (the tree is walked first, then sorted), mtime/uid/gid are 0,
 * owner names are empty, atime/ctime are never written, only permission
 * bits are kept (setuid/setgid/sticky dropped: extraction would refuse
 * them), gzip carries no name and a zero timestamp.  The one thing left is
 * zlib itself: deflate at level 6 gives the same bytes with the same zlib
 * build; a fleet mixing zlib implementations (zlib-ng) could name one tree
 * twice, which costs a duplicate object, never correctness. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <openssl/evp.h>

#include "common/cleanup.h"
#include "storage/extract.h"
#include "common/io.h"
#include "storage/fsutil.h"
#include "storage/storage.h"

#define PACK_MAX_ENTRIES 10000000
#define PACK_READ_BUF (256 * 1024)

struct pack_item {
        char *path;
        mode_t mode;
};

struct pack_list {
        struct pack_item *v;
        size_t n;
        size_t alloc;
        uint64_t skipped;
};

static void pack_list_done(struct pack_list *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i].path);
        free(l->v);
}

static int list_add(struct pack_list *l, const char *prefix, const char *name, mode_t mode,
                    struct bc_error *err)
{
        if (l->n >= PACK_MAX_ENTRIES)
                return bc_error_set(err, BC_IO, E2BIG, "pack: more than %d entries", PACK_MAX_ENTRIES);
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
                bc_error_set(err, BC_IO, ENAMETOOLONG, "pack: path too long: %s", fs_quote(p, q));
                free(p);
                return -ENAMETOOLONG;
        }
        l->v[l->n].path = p;
        l->v[l->n].mode = mode;
        l->n++;
        return 0;
}

static void closedirp(DIR **d)
{
        if (*d)
                closedir(*d);
}

/* Walks the tree without following symlinks, recording what to pack. */
static int collect(int dirfd, const char *prefix, int depth, struct pack_list *l,
                   struct bc_error *err)
{
        if (depth > FS_MAX_DEPTH)
                return bc_error_set(err, BC_IO, ELOOP, "pack: tree deeper than %d", FS_MAX_DEPTH);
        int dup_fd = fs_reopen_dir(dirfd);
        _cleanup_(closedirp) DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
        if (!d) {
                if (dup_fd >= 0)
                        close(dup_fd);
                return bc_error_set(err, BC_IO, errno, "pack: opendir %s: %m", *prefix ? prefix : ".");
        }
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                struct stat st;
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return bc_error_set(err, BC_IO, errno, "pack: stat %s/%s: %m", prefix, de->d_name);
                if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
                        l->skipped++;
                        continue;
                }
                int r = list_add(l, prefix, de->d_name, st.st_mode, err);
                if (r < 0)
                        return r;
                if (!S_ISDIR(st.st_mode))
                        continue;
                _cleanup_fd_ int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        return bc_error_set(err, BC_IO, errno, "pack: open %s: %m", l->v[l->n - 1].path);
                _cleanup_free_ char *path = strdup(l->v[l->n - 1].path);
                if (!path)
                        return bc_error_set(err, BC_IO, ENOMEM, "pack: out of memory");
                r = collect(sub, path, depth + 1, l, err);
                if (r < 0)
                        return r;
        }
        if (errno)
                return bc_error_set(err, BC_IO, errno, "pack: readdir %s: %m", *prefix ? prefix : ".");
        return 0;
}

static int cmp_item(const void *a, const void *b)
{
        return strcmp(((const struct pack_item *)a)->path, ((const struct pack_item *)b)->path);
}

struct pack_out {
        int fd;
        EVP_MD_CTX *sha;
        uint64_t size;
        int errnum;
};

static la_ssize_t out_write_cb(struct archive *a, void *ctx, const void *buf, size_t len)
{
        struct pack_out *o = ctx;
        int r = bc_write_all(o->fd, buf, len);
        if (r < 0) {
                o->errnum = -r;
                archive_set_error(a, -r, "write failed");
                return -1;
        }
        EVP_DigestUpdate(o->sha, buf, len);
        o->size += len;
        return (la_ssize_t)len;
}

struct packer {
        struct archive *a;
        struct archive_entry *e;
        struct fs_walker walker;
        char *buf;
        uint64_t files;
        uint64_t skipped;
};

static int archive_err(struct packer *p, const char *path, struct bc_error *err)
{
        char q[FS_QUOTE_MAX];
        return bc_error_set(err, BC_IO, archive_errno(p->a) > 0 ? archive_errno(p->a) : EIO,
                            "pack %s: %s", fs_quote(path, q), archive_error_string(p->a) ?: "archive error");
}

static int write_header(struct packer *p, const char *path, mode_t type, mode_t perm, int64_t size,
                        struct bc_error *err)
{
        archive_entry_clear(p->e);
        archive_entry_copy_pathname(p->e, path);
        archive_entry_set_filetype(p->e, type);
        archive_entry_set_perm(p->e, perm & 0777);
        archive_entry_set_size(p->e, size);
        archive_entry_set_mtime(p->e, 0, 0);
        archive_entry_set_uid(p->e, 0);
        archive_entry_set_gid(p->e, 0);
        if (archive_write_header(p->a, p->e) < ARCHIVE_WARN)
                return archive_err(p, path, err);
        return 0;
}

static int pack_file(struct packer *p, int dirfd, const char *leaf, const char *path,
                     struct bc_error *err)
{
        char q[FS_QUOTE_MAX];
        /* O_NONBLOCK: if the name became a fifo since the walk, don't hang. */
        _cleanup_fd_ int fd = openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return bc_error_set(err, BC_IO, errno, "pack: open %s: %m", fs_quote(path, q));
        if (!S_ISREG(st.st_mode)) {
                p->skipped++;
                return 0;
        }
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        int r = write_header(p, path, AE_IFREG, st.st_mode, st.st_size, err);
        if (r < 0)
                return r;
        uint64_t left = (uint64_t)st.st_size;
        while (left) {
                ssize_t n = read(fd, p->buf, left < PACK_READ_BUF ? left : PACK_READ_BUF);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return bc_error_set(err, BC_IO, errno, "pack: read %s: %m", fs_quote(path, q));
                if (n == 0)
                        return bc_error_set(err, BC_IO, EAGAIN, "pack: %s shrank while being packed",
                                            fs_quote(path, q));
                if (archive_write_data(p->a, p->buf, (size_t)n) != n)
                        return archive_err(p, path, err);
                left -= (uint64_t)n;
        }
        p->files++;
        return 0;
}

static int pack_item(struct packer *p, const struct pack_item *it, struct bc_error *err)
{
        char q[FS_QUOTE_MAX];
        if (S_ISDIR(it->mode))
                return write_header(p, it->path, AE_IFDIR, it->mode, 0, err);
        int dirfd;
        const char *leaf;
        int r = fs_walker_parent(&p->walker, it->path, &dirfd, &leaf);
        if (r < 0)
                return bc_error_set(err, BC_IO, -r, "pack: open parent of %s: %s",
                                    fs_quote(it->path, q), strerror(-r));
        if (S_ISREG(it->mode))
                return pack_file(p, dirfd, leaf, it->path, err);
        char target[FS_MAX_PATH + 1];
        ssize_t n = readlinkat(dirfd, leaf, target, sizeof(target));
        if (n < 0 || (size_t)n >= sizeof(target))
                return bc_error_set(err, BC_IO, n < 0 ? errno : ENAMETOOLONG, "pack: readlink %s",
                                    fs_quote(it->path, q));
        target[n] = '\0';
        archive_entry_clear(p->e);
        archive_entry_copy_pathname(p->e, it->path);
        archive_entry_set_filetype(p->e, AE_IFLNK);
        archive_entry_set_perm(p->e, 0777);
        archive_entry_copy_symlink(p->e, target);
        archive_entry_set_mtime(p->e, 0, 0);
        if (archive_write_header(p->a, p->e) < ARCHIVE_WARN)
                return archive_err(p, it->path, err);
        p->files++;
        return 0;
}

static void archive_write_freep(struct archive **a)
{
        if (*a)
                archive_write_free(*a);
}

static void md_freep(EVP_MD_CTX **p)
{
        EVP_MD_CTX_free(*p);
}

static int open_writer(struct archive *a, struct pack_out *o, struct bc_error *err)
{
        if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
            archive_write_add_filter_gzip(a) != ARCHIVE_OK ||
            archive_write_set_options(a, "gzip:compression-level=6,gzip:!timestamp") < ARCHIVE_WARN ||
            archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
            archive_write_open(a, o, NULL, out_write_cb, NULL) != ARCHIVE_OK)
                return bc_error_set(err, BC_IO, EIO, "pack: %s", archive_error_string(a) ?: "setup failed");
        return 0;
}

static int pack_list(int rootfd, struct pack_list *l, struct pack_out *o, struct packer *p,
                     struct bc_error *err)
{
        _cleanup_(archive_write_freep) struct archive *a = archive_write_new();
        p->e = archive_entry_new();
        p->buf = malloc(PACK_READ_BUF);
        if (!a || !p->e || !p->buf)
                return bc_error_set(err, BC_IO, ENOMEM, "pack: out of memory");
        p->a = a;
        int r = open_writer(a, o, err);
        if (r < 0)
                return r;
        fs_walker_init(&p->walker, rootfd, false, 0);
        for (size_t i = 0; r == 0 && i < l->n; i++)
                r = pack_item(p, &l->v[i], err);
        fs_walker_done(&p->walker);
        if (r == 0 && archive_write_close(a) != ARCHIVE_OK)
                r = o->errnum ? bc_error_set(err, BC_IO, o->errnum, "pack: write: %s", strerror(o->errnum))
                              : archive_err(p, "(end)", err);
        return r;
}

int storage_pack_dir(const char *dir, int out_fd, struct storage_pack_result *ret,
                     struct bc_error *err)
{
        _cleanup_fd_ int rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return bc_error_set(err, BC_IO, errno, "pack: open %s: %m", dir);
        struct pack_list l = { 0 };
        int r = collect(rootfd, "", 0, &l, err);
        if (r < 0) {
                pack_list_done(&l);
                return r;
        }
        if (l.n)
                qsort(l.v, l.n, sizeof(l.v[0]), cmp_item);

        _cleanup_(md_freep) EVP_MD_CTX *sha = EVP_MD_CTX_new();
        if (!sha || EVP_DigestInit_ex(sha, EVP_sha256(), NULL) != 1) {
                pack_list_done(&l);
                return bc_error_set(err, BC_IO, ENOMEM, "pack: sha256 init failed");
        }
        struct pack_out o = { .fd = out_fd, .sha = sha };
        struct packer p = { 0 };
        locale_t old = fs_archive_locale_enter();
        r = pack_list(rootfd, &l, &o, &p, err);
        fs_archive_locale_leave(old);
        if (p.e)
                archive_entry_free(p.e);
        free(p.buf);
        pack_list_done(&l);
        if (r < 0)
                return bc_error_prefix(err, "%s", dir);
        struct storage_pack_result res = { .size = o.size, .file_count = p.files,
                                           .skipped = l.skipped + p.skipped };
        extract_sha_hex(sha, res.sha256);
        *ret = res;
        return 0;
}
