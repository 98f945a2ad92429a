/* The layer builder: a directory's tree (its manifest) and the layer that
 * turns the tree below into it (storage.h, "Layers").
 *
 * The tree is walked as storage_pack_dir walks it (pack_walk: same order,
 * limits and errors).  Each regular file's data is hashed the way the
 * packer stores it (pack_map_holes), except where the overlay says the
 * file cannot have changed: a name absent from the upper directory is the
 * lower tree's file, whose hash and map the base manifest already has, so
 * a job that changed one file of a large tree costs a stat per file, not
 * a read of the tree.  That relies on the overlay being mounted without
 * redirect_dir and metacopy (a copied-up file is whole in upper, a
 * renamed one is a copy): storage.h's contract with its caller.
 *
 * The layer is what differs from `below`, record by record (the
 * manifests' attribute strings compared), with an OCI whiteout for each
 * name that is gone, written by the packer's own writer (pack_write) so
 * that a layer holding the whole tree is storage_pack_dir's tarball. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/cleanup.h"
#include "storage/extract.h"
#include "storage/fsutil.h"
#include "storage/layer-internal.h"
#include "storage/pack-internal.h"
#include "storage/tree-internal.h"

#define HASH_READ_BUF (256 * 1024)

struct builder {
        const struct storage_layer_args *a;
        const struct storage_pack_limits *lim;
        int rootfd;
        int upperfd; /* -1 without upper */
        struct fs_walker walker;
        struct fs_walker upper_walker;
        struct pack_list l;
        char **attrs;     /* per walked item; NULL: not in the tree */
        uint64_t data;    /* file data bytes, for lim->max_bytes */
        uint64_t skipped; /* gone unpackable since the walk */
        char *buf;
};

static void md_freep(EVP_MD_CTX **p)
{
        EVP_MD_CTX_free(*p);
}

/* Whether the file at it->path is, by the overlay's word, base's file of
 * the same size (its content unchanged): no name in upper.  The upper
 * tree is resolved without following symlinks; anything unexpected there
 * means "read it". */
static const struct tree_rec *unchanged_in_base(struct builder *b, const struct pack_item *it)
{
        if (b->upperfd < 0 || !b->a->base)
                return NULL;
        const struct storage_tree *base = b->a->base;
        const struct tree_rec *r = tree_lookup(base, it->path);
        if (!r || (r->kind != TREE_FILE && r->kind != TREE_LINK))
                return NULL;
        r = tree_rec_content(base, r);
        if (r->size != (uint64_t)it->size)
                return NULL;
        int dirfd;
        const char *leaf;
        int e = fs_walker_parent(&b->upper_walker, it->path, &dirfd, &leaf);
        if (e == -ENOENT || e == -ENOTDIR)
                return r;
        struct stat st;
        if (e < 0 || fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return NULL;
        return errno == ENOENT || errno == ENOTDIR ? r : NULL;
}

static int read_into(struct builder *b, EVP_MD_CTX *sha, int fd, uint64_t off, uint64_t len,
                     const char *path, struct bc_error *err)
{
        while (len) {
                size_t want = len < HASH_READ_BUF ? (size_t)len : HASH_READ_BUF;
                ssize_t n = pack_pread(fd, b->buf, want, (off_t)off, path, "hashed", err);
                if (n < 0)
                        return (int)n;
                EVP_DigestUpdate(sha, b->buf, (size_t)n);
                len -= (uint64_t)n;
                off += (uint64_t)n;
                if (pack_past_deadline(&b->l.deadline))
                        return pack_over_time(b->lim, path, err);
        }
        return 0;
}

/* Reads and hashes the file as the packer would store it. */
static int hash_file(struct builder *b, int dirfd, const char *leaf, const struct pack_item *it,
                     char **ret, struct bc_error *err)
{
        char q[FS_QUOTE_MAX];
        _cleanup_fd_ int fd = openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return bc_error_set(err, pack_walk_code(errno), errno, "cannot open %s: %m",
                                    fs_quote(it->path, q));
        if (!S_ISREG(st.st_mode)) { /* became something else: as the packer */
                *ret = NULL;
                return 0;
        }
        _cleanup_(pack_map_done) struct pack_map m = { 0 };
        int r = pack_map_holes(fd, st.st_size, &m);
        if (r < 0)
                return bc_error_set(err, BC_IO, -r, "pack: map holes of %s: %s",
                                    fs_quote(it->path, q), strerror(-r));
        r = pack_count_bytes(&b->data, m.data, b->lim, it->path, err);
        if (r < 0)
                return r;
        _cleanup_(md_freep) EVP_MD_CTX *sha = EVP_MD_CTX_new();
        if (!sha || EVP_DigestInit_ex(sha, EVP_sha256(), NULL) != 1)
                return bc_error_set(err, BC_IO, ENOMEM, "pack: sha256 init failed");
        if (!m.sparse) {
                (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
                r = read_into(b, sha, fd, 0, (uint64_t)st.st_size, it->path, err);
        }
        for (size_t i = 0; r == 0 && i < m.n; i++)
                r = read_into(b, sha, fd, m.v[i].off, m.v[i].len, it->path, err);
        if (r < 0)
                return r;
        char hex[STORAGE_SHA256_HEX_LEN + 1];
        extract_sha_hex(sha, hex);
        _cleanup_free_ char *map = tree_format_map(&m);
        *ret = map ? tree_attrs_file(st.st_mode, (uint64_t)st.st_size, hex, map) : NULL;
        return *ret ? 0 : bc_error_set(err, BC_IO, ENOMEM, "out of memory");
}

static int file_attrs(struct builder *b, int dirfd, const char *leaf, const struct pack_item *it,
                      char **ret, struct bc_error *err)
{
        const struct tree_rec *r = unchanged_in_base(b, it);
        if (!r)
                return hash_file(b, dirfd, leaf, it, ret, err);
        int e = pack_count_bytes(&b->data, r->data, b->lim, it->path, err);
        if (e < 0)
                return e;
        const struct storage_tree *base = b->a->base;
        *ret = tree_attrs_file(it->mode, r->size, tree_rec_sha(base, r), tree_rec_map(base, r));
        return *ret ? 0 : bc_error_set(err, BC_IO, ENOMEM, "out of memory");
}

/* The attributes of walked item i, or NULL in *ret when it is not part
 * of the tree after all (it stopped being a file, as the packer skips). */
static int item_attrs(struct builder *b, size_t i, char **ret, struct bc_error *err)
{
        char q[FS_QUOTE_MAX];
        const struct pack_item *it = &b->l.v[i];
        *ret = NULL;
        if (S_ISDIR(it->mode))
                *ret = tree_attrs_dir(it->mode);
        else if (S_ISREG(it->mode) && it->link_to) {
                size_t k = pack_list_find(&b->l, it->link_to);
                if (k >= i || !b->attrs[k])
                        return 0; /* its first name went: so does the link */
                *ret = tree_attrs_link(it->link_to);
        }
        if (*ret || S_ISDIR(it->mode) || (S_ISREG(it->mode) && it->link_to))
                return *ret ? 0 : bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        int dirfd;
        const char *leaf;
        int r = fs_walker_parent(&b->walker, it->path, &dirfd, &leaf);
        if (r < 0)
                return bc_error_set(err, BC_IO, -r, "pack: open parent of %s: %s",
                                    fs_quote(it->path, q), strerror(-r));
        if (S_ISREG(it->mode))
                return file_attrs(b, dirfd, leaf, it, ret, err);
        char target[FS_MAX_PATH + 1];
        ssize_t n = readlinkat(dirfd, leaf, target, sizeof(target));
        if (n <= 0 || (size_t)n >= sizeof(target))
                return bc_error_set(err, BC_IO, n < 0 ? errno : ENAMETOOLONG, "pack: readlink %s",
                                    fs_quote(it->path, q));
        target[n] = '\0';
        *ret = tree_attrs_symlink(target);
        return *ret ? 0 : bc_error_set(err, BC_IO, ENOMEM, "out of memory");
}

/* Walks dir and makes its tree. */
static int build_tree(struct builder *b, struct storage_tree **ret, struct bc_error *err)
{
        int r = pack_walk(b->rootfd, b->lim, &b->l, err);
        if (r < 0)
                return r;
        b->attrs = calloc(b->l.n ? b->l.n : 1, sizeof(*b->attrs));
        b->buf = malloc(HASH_READ_BUF);
        if (!b->attrs || !b->buf)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        _cleanup_(tree_builder_done) struct tree_builder tb;
        r = tree_builder_init(&tb, err);
        for (size_t i = 0; r == 0 && i < b->l.n; i++) {
                r = item_attrs(b, i, &b->attrs[i], err);
                if (r == 0 && b->attrs[i])
                        r = tree_builder_add(&tb, b->l.v[i].path, b->attrs[i], err);
                else if (r == 0)
                        b->skipped++;
        }
        return r ? r : tree_builder_finish(&tb, ret, err);
}

static void builder_done(struct builder *b)
{
        fs_walker_done(&b->walker);
        if (b->upperfd >= 0)
                fs_walker_done(&b->upper_walker);
        for (size_t i = 0; b->attrs && i < b->l.n; i++)
                free(b->attrs[i]);
        free(b->attrs);
        free(b->buf);
        pack_list_done(&b->l);
        if (b->upperfd >= 0)
                close(b->upperfd);
}

static int open_dirs(const struct storage_layer_args *a, int *ret_root, int *ret_upper,
                     struct bc_error *err)
{
        int root = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return bc_error_set(err, BC_IO, errno, "pack: open %s: %m", a->dir);
        int upper = a->upper ? open(a->upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (a->upper && upper < 0) {
                int e = errno;
                close(root);
                return bc_error_set(err, BC_IO, e, "layer: open upper %s: %s", a->upper,
                                    strerror(e));
        }
        *ret_root = root;
        *ret_upper = upper;
        return 0;
}

/* The tree, the plan, the layer's bytes. */
static int build(struct builder *b, int out_fd, struct storage_layer_result *res,
                 struct bc_error *err)
{
        int r = build_tree(b, &res->tree, err);
        if (r < 0)
                return r;
        struct layer_plan plan;
        r = layer_plan(res->tree, b->a->below, &b->l, b->attrs, &plan, err);
        if (r < 0)
                return r;
        r = pack_write(b->rootfd, plan.whole ? b->l.v : plan.v, plan.whole ? b->l.n : plan.n,
                       b->lim, &b->l.deadline, out_fd, &res->pack, err);
        layer_plan_done(&plan);
        if (r < 0)
                return r;
        storage_tree_stats(res->tree, NULL, &res->pack.file_count, NULL);
        res->pack.skipped = b->l.skipped + b->skipped;
        res->whole = plan.whole;
        res->changed_bytes = plan.changed_bytes;
        res->changed_entries = plan.changed_entries;
        res->whiteouts = plan.whiteouts;
        return 0;
}

int storage_layer_build(const struct storage_layer_args *a, int out_fd,
                        struct storage_layer_result *ret, struct bc_error *err)
{
        struct storage_pack_limits defaults;
        storage_pack_limits_default(&defaults);
        _cleanup_fd_ int rootfd = -1;
        int upperfd = -1;
        int r = open_dirs(a, &rootfd, &upperfd, err);
        if (r < 0)
                return r;
        struct builder b = { .a = a,
                             .lim = a->limits ? a->limits : &defaults,
                             .rootfd = rootfd,
                             .upperfd = upperfd };
        fs_walker_init(&b.walker, rootfd, false, 0);
        if (upperfd >= 0)
                fs_walker_init(&b.upper_walker, upperfd, false, 0);
        struct storage_layer_result res = { 0 };
        r = build(&b, out_fd, &res, err);
        builder_done(&b);
        if (r < 0) {
                storage_tree_free(res.tree);
                return err && err->code == BC_WORKSPACE_LIMIT ? r
                                                              : bc_error_prefix(err, "%s", a->dir);
        }
        *ret = res;
        return 0;
}

void storage_layer_result_done(struct storage_layer_result *r)
{
        if (!r)
                return;
        storage_tree_free(r->tree);
        r->tree = NULL;
}
