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
 * them), gzip carries no name and a zero timestamp (zlib's own gzip
 * wrapper, deflating on a thread of its own while the tree is read).  The one thing left is
 * zlib itself: deflate at level 6 gives the same bytes with the same zlib
 * build; a fleet mixing zlib implementations (zlib-ng) could name one tree
 * twice, which costs a duplicate object, never correctness.
 *
 * Hard links stay links: of the paths sharing an inode, the first in the
 * sorted order carries the data, the others are hard-link entries to it
 * (so the choice depends on the paths only).  Sparse files stay sparse:
 * a file with holes (SEEK_HOLE, widened to 4 KiB boundaries: PACK_HOLE_ALIGN) is
 * written as a GNU sparse 1.0 pax entry, its holes neither read nor
 * stored; "the same tree" then includes where its holes are.
 *
 * The tree is the job's and may be hostile: its depth, entry count, data
 * bytes and the time spent are bounded (storage_pack_limits), and going
 * past one, or an entry we may not read, is BC_WORKSPACE_LIMIT naming the
 * path and the limit: the tree's fault, not the packer's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <openssl/evp.h>

#include "common/cleanup.h"
#include "storage/extract.h"
#include "storage/fsutil.h"
#include "storage/gzpipe.h"
#include "storage/pack-internal.h"

#define PACK_READ_BUF (256 * 1024)

void storage_pack_limits_default(struct storage_pack_limits *ret)
{
        *ret = (struct storage_pack_limits){ .max_bytes = UINT64_C(16) << 30,
                                             .max_entries = 10000000,
                                             .max_depth = STORAGE_PACK_MAX_DEPTH,
                                             .max_seconds = 3600 };
}

/* libarchive writes the plain tar stream; gzip runs on its own thread. */
struct pack_out {
        int fd;
        EVP_MD_CTX *sha;
        struct gzpipe *gz;
        uint64_t size;
        int errnum;
};

static la_ssize_t out_write_cb(struct archive *a, void *ctx, const void *buf, size_t len)
{
        struct pack_out *o = ctx;
        /* After a failure the pipe is gone; archive_write_free still closes. */
        int r = o->gz ? gzpipe_write(o->gz, buf, len) : -EPIPE;
        if (r < 0) {
                o->errnum = -r;
                archive_set_error(a, -r, "write failed");
                return -1;
        }
        return (la_ssize_t)len;
}

struct packer {
        struct archive *a;
        struct archive_entry *e;
        struct fs_walker walker;
        char *buf;
        const char *zeros; /* PACK_READ_BUF of zeros, fed for holes */
        uint64_t files;
        uint64_t skipped;
        uint64_t bytes; /* data bytes stored (holes excluded) */
        const struct storage_pack_limits *lim;
        const struct timespec *deadline;
};

static int archive_err(struct packer *p, const char *path, struct bc_error *err)
{
        char q[FS_QUOTE_MAX];
        return bc_error_set(err, BC_IO, archive_errno(p->a) > 0 ? archive_errno(p->a) : EIO,
                            "pack %s: %s", fs_quote(path, q),
                            archive_error_string(p->a) ?: "archive error");
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

int pack_count_bytes(uint64_t *total, uint64_t n, const struct storage_pack_limits *lim,
                     const char *path, struct bc_error *err)
{
        char q[FS_QUOTE_MAX];
        if (n > lim->max_bytes - *total)
                return bc_error_set(err, BC_WORKSPACE_LIMIT, EFBIG,
                                    "more than %llu bytes of file data (at %s)",
                                    (unsigned long long)lim->max_bytes, fs_quote(path, q));
        *total += n;
        return 0;
}

void pack_map_done(struct pack_map *m)
{
        free(m->v);
        *m = (struct pack_map){ 0 };
}

static int map_add(struct pack_map *m, off_t off, off_t len)
{
        if (m->n == m->alloc) {
                size_t na = m->alloc ? m->alloc * 2 : 16;
                struct pack_region *v = realloc(m->v, na * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                m->v = v;
                m->alloc = na;
        }
        m->v[m->n++] = (struct pack_region){ (uint64_t)off, (uint64_t)len };
        m->data += (uint64_t)len;
        return 0;
}

/* Data regions are widened to PACK_HOLE_ALIGN boundaries, and joined
 * where they then touch: a filesystem reports holes at its block size,
 * 1 KiB on a small ext4 (a job's own filesystem) and 4 KiB on most
 * others, and the packed tree must not depend on which one the same file
 * sits on.  Otherwise the version an overlay job packs and the one a
 * plain extraction of it packs get two names, and an artifact cache entry
 * (on the worker's disk) repacks to another sha256 than the one it is
 * filed under.  What the widening takes in is read, as zeros. */
int pack_map_holes(int fd, off_t size, struct pack_map *m)
{
        pack_map_done(m);
        m->data = (uint64_t)size;
        off_t hole = lseek(fd, 0, SEEK_HOLE);
        if (hole < 0 || hole >= size)
                return 0; /* no hole (or no SEEK_HOLE): a plain file */
        m->data = 0;
        off_t ps = -1, pe = -1; /* the region not yet added */
        for (off_t off = 0; off < size;) {
                off_t start = lseek(fd, off, SEEK_DATA);
                if (start < 0 && errno == ENXIO)
                        break; /* a hole up to the end */
                if (start < 0)
                        return -errno;
                off_t end = lseek(fd, start, SEEK_HOLE);
                if (end < 0)
                        return -errno;
                off = end;
                start -= start % PACK_HOLE_ALIGN;
                if (end % PACK_HOLE_ALIGN)
                        end += PACK_HOLE_ALIGN - end % PACK_HOLE_ALIGN;
                if (end > size)
                        end = size;
                if (ps >= 0 && start <= pe) {
                        pe = end > pe ? end : pe;
                        continue;
                }
                if (ps >= 0 && map_add(m, ps, pe - ps) < 0)
                        return -ENOMEM;
                ps = start;
                pe = end;
        }
        if (ps == 0 && pe == size && m->n == 0) {
                m->data = (uint64_t)size; /* no hole as large as PACK_HOLE_ALIGN */
                return 0;
        }
        if (ps >= 0 && map_add(m, ps, pe - ps) < 0)
                return -ENOMEM;
        m->sparse = true;
        return 0;
}

/* Feeds len bytes at off: from the file in data regions, zeros (never
 * read, never stored by the writer) in holes. */
static int feed(struct packer *p, int fd, off_t off, uint64_t len, bool hole, const char *path,
                struct bc_error *err)
{
        while (len) {
                size_t want = len < PACK_READ_BUF ? (size_t)len : PACK_READ_BUF;
                const char *src = p->zeros;
                ssize_t n = (ssize_t)want;
                if (!hole) {
                        n = pack_pread(fd, p->buf, want, off, path, "packed", err);
                        if (n < 0)
                                return (int)n;
                        src = p->buf;
                }
                if (archive_write_data(p->a, src, (size_t)n) != n)
                        return archive_err(p, path, err);
                len -= (uint64_t)n;
                off += n;
                if (pack_past_deadline(p->deadline))
                        return pack_over_time(p->lim, path, err);
        }
        return 0;
}

static int pack_file(struct packer *p, int dirfd, const char *leaf, const struct pack_item *it,
                     struct bc_error *err)
{
        char q[FS_QUOTE_MAX];
        const char *path = it->path;
        /* O_NONBLOCK: if the name became a fifo since the walk, don't hang. */
        _cleanup_fd_ int fd = openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return bc_error_set(err, pack_walk_code(errno), errno, "cannot open %s: %m",
                                    fs_quote(path, q));
        if (!S_ISREG(st.st_mode)) {
                p->skipped++;
                return 0;
        }
        archive_entry_clear(p->e);
        archive_entry_copy_pathname(p->e, path);
        archive_entry_set_filetype(p->e, AE_IFREG);
        archive_entry_set_perm(p->e, st.st_mode & 0777);
        archive_entry_set_mtime(p->e, 0, 0);
        archive_entry_set_uid(p->e, 0);
        archive_entry_set_gid(p->e, 0);
        if (it->link_to) {
                /* Its data went with the first name. */
                archive_entry_copy_hardlink(p->e, it->link_to);
                archive_entry_set_size(p->e, 0);
                if (archive_write_header(p->a, p->e) < ARCHIVE_WARN)
                        return archive_err(p, path, err);
                p->files++;
                return 0;
        }
        archive_entry_set_size(p->e, st.st_size);
        _cleanup_(pack_map_done) struct pack_map m = { 0 };
        int r = pack_map_holes(fd, st.st_size, &m);
        if (r < 0)
                return bc_error_set(err, BC_IO, -r, "pack: map holes of %s: %s", fs_quote(path, q),
                                    strerror(-r));
        r = pack_count_bytes(&p->bytes, m.data, p->lim, path, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m.n; i++)
                archive_entry_sparse_add_entry(p->e, (la_int64_t)m.v[i].off,
                                               (la_int64_t)m.v[i].len);
        /* libarchive wants the end of the file marked by an empty entry
         * when it ends in a hole. */
        if (m.sparse)
                archive_entry_sparse_add_entry(p->e, st.st_size, 0);
        if (archive_write_header(p->a, p->e) < ARCHIVE_WARN)
                return archive_err(p, path, err);
        if (!m.sparse) {
                (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
                r = feed(p, fd, 0, (uint64_t)st.st_size, false, path, err);
        } else {
                uint64_t off = 0;
                for (size_t i = 0; r >= 0 && i < m.n; i++) {
                        if (m.v[i].off > off)
                                r = feed(p, fd, (off_t)off, m.v[i].off - off, true, path, err);
                        if (r >= 0)
                                r = feed(p, fd, (off_t)m.v[i].off, m.v[i].len, false, path, err);
                        off = m.v[i].off + m.v[i].len;
                }
                if (r >= 0 && off < (uint64_t)st.st_size)
                        r = feed(p, fd, (off_t)off, (uint64_t)st.st_size - off, true, path, err);
        }
        if (r < 0)
                return r;
        p->files++;
        return 0;
}

static int pack_item(struct packer *p, const struct pack_item *it, struct bc_error *err)
{
        char q[FS_QUOTE_MAX];
        if (it->whiteout)
                return write_header(p, it->path, AE_IFREG, 0644, 0, err);
        if (S_ISDIR(it->mode))
                return write_header(p, it->path, AE_IFDIR, it->mode, 0, err);
        int dirfd;
        const char *leaf;
        int r = fs_walker_parent(&p->walker, it->path, &dirfd, &leaf);
        if (r < 0)
                return bc_error_set(err, BC_IO, -r, "pack: open parent of %s: %s",
                                    fs_quote(it->path, q), strerror(-r));
        if (S_ISREG(it->mode))
                return pack_file(p, dirfd, leaf, it, err);
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
            archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
            archive_write_open(a, o, NULL, out_write_cb, NULL) != ARCHIVE_OK)
                return bc_error_set(err, BC_IO, EIO, "pack: %s",
                                    archive_error_string(a) ?: "setup failed");
        return 0;
}

static int pack_items(int rootfd, const struct pack_item *v, size_t n, struct pack_out *o,
                      struct packer *p, struct bc_error *err)
{
        _cleanup_(archive_write_freep) struct archive *a = archive_write_new();
        p->e = archive_entry_new();
        p->buf = malloc(PACK_READ_BUF);
        p->zeros = calloc(1, PACK_READ_BUF);
        if (!a || !p->e || !p->buf || !p->zeros)
                return bc_error_set(err, BC_IO, ENOMEM, "pack: out of memory");
        p->a = a;
        int r = gzpipe_start(&o->gz, o->fd, o->sha, 6);
        if (r < 0)
                return bc_error_set(err, BC_IO, -r, "pack: start compressor: %s", strerror(-r));
        r = open_writer(a, o, err);
        fs_walker_init(&p->walker, rootfd, false, 0);
        for (size_t i = 0; r == 0 && i < n; i++)
                r = pack_item(p, &v[i], err);
        fs_walker_done(&p->walker);
        if (r == 0 && archive_write_close(a) != ARCHIVE_OK)
                r = o->errnum ? bc_error_set(err, BC_IO, o->errnum, "pack: write: %s",
                                             strerror(o->errnum))
                              : archive_err(p, "(end)", err);
        struct gzpipe *gz = o->gz;
        o->gz = NULL;
        if (r < 0) {
                gzpipe_abort(gz);
                return r;
        }
        int w = gzpipe_finish(gz, &o->size);
        if (w < 0)
                return bc_error_set(err, BC_IO, -w, "pack: write: %s", strerror(-w));
        return 0;
}

int pack_write(int rootfd, const struct pack_item *v, size_t n,
               const struct storage_pack_limits *lim, const struct timespec *deadline, int out_fd,
               struct storage_pack_result *ret, struct bc_error *err)
{
        _cleanup_(md_freep) EVP_MD_CTX *sha = EVP_MD_CTX_new();
        if (!sha || EVP_DigestInit_ex(sha, EVP_sha256(), NULL) != 1)
                return bc_error_set(err, BC_IO, ENOMEM, "pack: sha256 init failed");
        struct pack_out o = { .fd = out_fd, .sha = sha };
        struct packer p = { .lim = lim, .deadline = deadline };
        locale_t old = fs_archive_locale_enter();
        int r = pack_items(rootfd, v, n, &o, &p, err);
        fs_archive_locale_leave(old);
        if (p.e)
                archive_entry_free(p.e);
        free(p.buf);
        free((void *)p.zeros);
        if (r < 0)
                return r;
        struct storage_pack_result res = { .size = o.size,
                                           .file_count = p.files,
                                           .skipped = p.skipped };
        extract_sha_hex(sha, res.sha256);
        *ret = res;
        return 0;
}

int storage_pack_dir(const char *dir, int out_fd, const struct storage_pack_limits *limits,
                     struct storage_pack_result *ret, struct bc_error *err)
{
        struct storage_pack_limits defaults;
        storage_pack_limits_default(&defaults);
        const struct storage_pack_limits *lim = limits ? limits : &defaults;
        _cleanup_fd_ int rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return bc_error_set(err, BC_IO, errno, "pack: open %s: %m", dir);
        struct pack_list l;
        int r = pack_walk(rootfd, lim, &l, err);
        if (r < 0)
                return r;
        struct storage_pack_result res;
        r = pack_write(rootfd, l.v, l.n, lim, &l.deadline, out_fd, &res, err);
        uint64_t skipped = l.skipped;
        pack_list_done(&l);
        if (r < 0)
                return err && err->code == BC_WORKSPACE_LIMIT ? r
                                                              : bc_error_prefix(err, "%s", dir);
        res.skipped += skipped;
        *ret = res;
        return 0;
}
