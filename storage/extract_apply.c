/* A layer applied onto a tree (storage_fetch_apply): what changes from
 * extracting a whole tree into an empty directory (extract.c).
 *
 * - An entry replaces what is at its path: a file or a symlink is
 *   unlinked (a directory removed with everything in it) and made anew,
 *   never opened.  The tree may share inodes with other cache entries
 *   (hard links, storage_cache_acquire_layers): writing through a name
 *   would change them too.  A directory entry only sets the mode of a
 *   directory that is there.
 * - "<dir>/.wh.<name>" removes <dir>/<name>; it is never created.  It
 *   must name something (boxcar writes a whiteout only for a name that
 *   existed), and neither "", "." nor ".."; the opaque marker
 *   ".wh..wh..opq" is refused (boxcar never writes one).
 * - A layer is a set of changes, so it must not contradict itself: a
 *   name given twice, a whiteout of a name the layer creates (or puts
 *   something under), in either order, an entry that replaces a
 *   directory the layer filled.  The paths seen are kept as keyed
 *   SipHash digests, each path's chained from its parent's (so the
 *   digests of all of a path's parents cost one pass over it): bounded
 *   memory, no flooding with chosen collisions.
 * - Directories that deny their owner write or search are opened up
 *   while the layer goes in and get their mode back at the end (the
 *   fixups of extract.c), unless the layer sets one.
 * Paths are resolved as in extract.c: component by component with
 * O_NOFOLLOW from the root, so nothing outside the tree is reached. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive_entry.h>
#include <openssl/rand.h>

#include "common/rmtree.h"
#include "storage/extract-internal.h"

/* Distinct paths (entries, their parents, whiteouts) one layer may name:
 * the set's memory is at most 4x this many 16-byte slots. */
#define APPLY_MAX_PATHS (1u << 21)

enum path_kind {
        K_NONE,     /* only a fixup note (a directory opened up) */
        K_ENTRY,    /* an entry of this layer */
        K_UNDER,    /* a directory this layer put entries in */
        K_WHITEOUT, /* removed by a whiteout of this layer */
};

struct apply_slot {
        uint64_t h;   /* 0: a free slot */
        uint32_t fix; /* 1 + index into x->fix, 0: none */
        uint8_t kind;
};

struct apply_set {
        uint64_t k0, k1;
        struct apply_slot *v;
        size_t n, alloc; /* alloc: 0 or a power of two */
};

static uint64_t rotl(uint64_t x, int b)
{
        return (x << b) | (x >> (64 - b));
}

static void sipround(uint64_t v[4])
{
        v[0] += v[1];
        v[1] = rotl(v[1], 13) ^ v[0];
        v[0] = rotl(v[0], 32);
        v[2] += v[3];
        v[3] = rotl(v[3], 16) ^ v[2];
        v[0] += v[3];
        v[3] = rotl(v[3], 21) ^ v[0];
        v[2] += v[1];
        v[1] = rotl(v[1], 17) ^ v[2];
        v[2] = rotl(v[2], 32);
}

/* SipHash-2-4 of (parent digest, component). */
static uint64_t siphash(const struct apply_set *s, uint64_t parent, const char *p, size_t len)
{
        unsigned char buf[8 + FS_MAX_NAME];
        size_t n = 8 + len;
        for (int i = 0; i < 8; i++)
                buf[i] = (unsigned char)(parent >> (8 * i));
        memcpy(buf + 8, p, len);
        uint64_t v[4] = { s->k0 ^ UINT64_C(0x736f6d6570736575),
                          s->k1 ^ UINT64_C(0x646f72616e646f6d),
                          s->k0 ^ UINT64_C(0x6c7967656e657261),
                          s->k1 ^ UINT64_C(0x7465646279746573) };
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
                uint64_t m = 0;
                for (int j = 0; j < 8; j++)
                        m |= (uint64_t)buf[i + (size_t)j] << (8 * j);
                v[3] ^= m;
                sipround(v);
                sipround(v);
                v[0] ^= m;
        }
        uint64_t b = (uint64_t)n << 56;
        for (int j = 0; i + (size_t)j < n; j++)
                b |= (uint64_t)buf[i + (size_t)j] << (8 * j);
        v[3] ^= b;
        sipround(v);
        sipround(v);
        v[0] ^= b;
        v[2] ^= 0xff;
        for (int r = 0; r < 4; r++)
                sipround(v);
        return (v[0] ^ v[1] ^ v[2] ^ v[3]) | 1; /* never 0: a free slot */
}

/* The digests of path's prefixes ("a", "a/b", "a/b/c"); their count. */
static int prefix_hashes(const struct apply_set *s, const char *path, uint64_t out[FS_MAX_DEPTH])
{
        int n = 0;
        uint64_t h = 0;
        for (const char *p = path; *p && n < FS_MAX_DEPTH;) {
                size_t len = strcspn(p, "/");
                h = siphash(s, h, p, len < FS_MAX_NAME ? len : FS_MAX_NAME);
                out[n++] = h;
                p += len + (p[len] == '/');
        }
        return n;
}

static struct apply_slot *slot_at(const struct apply_set *s, uint64_t h)
{
        size_t i = (size_t)(h >> 11) & (s->alloc - 1);
        while (s->v[i].h && s->v[i].h != h)
                i = (i + 1) & (s->alloc - 1);
        return &s->v[i];
}

static struct apply_slot *slot_get(const struct apply_set *s, uint64_t h)
{
        if (!s->alloc)
                return NULL;
        struct apply_slot *x = slot_at(s, h);
        return x->h ? x : NULL;
}

/* The slot of h, added when missing; NULL when the set is full (or out of
 * memory).  Invalidates earlier slot pointers. */
static struct apply_slot *slot_add(struct apply_set *s, uint64_t h)
{
        struct apply_slot *x = slot_get(s, h);
        if (x)
                return x;
        if (s->n >= APPLY_MAX_PATHS)
                return NULL;
        if (2 * (s->n + 1) > s->alloc) {
                size_t na = s->alloc ? 2 * s->alloc : 1024;
                struct apply_slot *nv = calloc(na, sizeof(*nv));
                if (!nv)
                        return NULL;
                struct apply_set g = { .v = nv, .alloc = na };
                for (size_t i = 0; i < s->alloc; i++)
                        if (s->v[i].h)
                                *slot_at(&g, s->v[i].h) = s->v[i];
                free(s->v);
                s->v = nv;
                s->alloc = na;
        }
        x = slot_at(s, h);
        *x = (struct apply_slot){ .h = h };
        s->n++;
        return x;
}

static int set_full(struct extractor *x, struct bc_error *err)
{
        return extract_bad(x, err, "too many distinct paths in one layer");
}

int apply_begin(struct extractor *x, struct bc_error *err)
{
        struct apply_set *s = calloc(1, sizeof(*s));
        unsigned char k[16];
        if (!s || RAND_bytes(k, sizeof(k)) != 1) {
                free(s);
                return bc_error_set(err, BC_IO, ENOMEM, "apply: cannot set up");
        }
        memcpy(&s->k0, k, 8);
        memcpy(&s->k1, k + 8, 8);
        x->apply = s;
        return 0;
}

void apply_end(struct extractor *x)
{
        if (!x->apply)
                return;
        free(x->apply->v);
        free(x->apply);
        x->apply = NULL;
}

/* The directory path of x->path's parent ("" for the root). */
static void parent_of(const char *path, char out[FS_MAX_PATH + 1])
{
        const char *slash = strrchr(path, '/');
        size_t n = slash ? (size_t)(slash - path) : 0;
        memcpy(out, path, n);
        out[n] = '\0';
}

/* Gives dirfd (the directory `dir`) owner rwx for as long as the layer
 * goes in, noting its mode for the end (once: afterwards it has them). */
static int open_up(struct extractor *x, int dirfd, const char *dir, struct bc_error *err)
{
        struct stat st;
        if (fstat(dirfd, &st) < 0)
                return extract_create_failed(x, -errno, err);
        if ((st.st_mode & 0700) == 0700)
                return 0;
        int r = extract_add_fixup(x, dir, st.st_mode & 07777, err);
        if (r < 0)
                return r;
        uint64_t hs[FS_MAX_DEPTH];
        int n = prefix_hashes(x->apply, dir, hs);
        if (n > 0) {
                struct apply_slot *s = slot_add(x->apply, hs[n - 1]);
                if (!s)
                        return set_full(x, err);
                s->fix = (uint32_t)x->nfix;
        }
        if (fchmod(dirfd, (st.st_mode & 07777) | 0700) < 0)
                return extract_create_failed(x, -errno, err);
        return 0;
}

int apply_note_dir_mode(struct extractor *x, mode_t perm, bool *ret_done, struct bc_error *err)
{
        (void)err;
        uint64_t hs[FS_MAX_DEPTH];
        int n = prefix_hashes(x->apply, x->path, hs);
        struct apply_slot *s = n > 0 ? slot_get(x->apply, hs[n - 1]) : NULL;
        *ret_done = s && s->fix;
        if (*ret_done)
                x->fix[s->fix - 1].mode = perm;
        return 0;
}

/* Records x->path as an entry and its parents as filled by this layer. */
static int mark_entry(struct extractor *x, const uint64_t *hs, int n, struct bc_error *err)
{
        struct apply_slot *s = slot_add(x->apply, hs[n - 1]);
        if (!s)
                return set_full(x, err);
        s->kind = K_ENTRY;
        for (int i = n - 2; i >= 0; i--) {
                s = slot_add(x->apply, hs[i]);
                if (!s)
                        return set_full(x, err);
                if (s->kind == K_ENTRY || s->kind == K_UNDER)
                        break; /* its parents are marked already */
                s->kind = K_UNDER;
        }
        return 0;
}

int apply_prepare(struct extractor *x, int dirfd, const char *leaf, bool is_dir,
                  struct bc_error *err)
{
        uint64_t hs[FS_MAX_DEPTH];
        int n = prefix_hashes(x->apply, x->path, hs);
        struct apply_slot *s = slot_get(x->apply, hs[n - 1]);
        enum path_kind kind = s ? (enum path_kind)s->kind : K_NONE;
        if (kind == K_ENTRY)
                return extract_bad(x, err, "duplicate entry in one layer");
        if (kind == K_WHITEOUT)
                return extract_bad(x, err, "a whiteout of this layer removes this name");
        for (int i = 0; i < n - 1; i++) {
                s = slot_get(x->apply, hs[i]);
                if (s && s->kind == K_WHITEOUT)
                        return extract_bad(x, err,
                                           "under a name a whiteout of this layer removes");
        }
        char dir[FS_MAX_PATH + 1];
        parent_of(x->path, dir);
        int r = open_up(x, dirfd, dir, err);
        if (r < 0)
                return r;
        struct stat st;
        if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT)
                        return extract_create_failed(x, -errno, err);
        } else if (S_ISDIR(st.st_mode) && !is_dir) {
                if (kind == K_UNDER)
                        return extract_bad(x, err, "replaces a directory this layer fills");
                r = fs_rm_rf_at(dirfd, leaf);
                if (r < 0)
                        return extract_create_failed(x, r, err);
        } else if (!S_ISDIR(st.st_mode) && unlinkat(dirfd, leaf, 0) < 0) {
                return extract_create_failed(x, -errno, err);
        }
        return mark_entry(x, hs, n, err);
}

/* What a whiteout's name says to remove, checked. */
static int whiteout_target(struct extractor *x, struct archive_entry *e, const char *base,
                           char target[FS_MAX_PATH + 1], struct bc_error *err)
{
        if (archive_entry_hardlink(e) || archive_entry_filetype(e) != AE_IFREG ||
            (archive_entry_size_is_set(e) && archive_entry_size(e) != 0))
                return extract_bad(x, err, "whiteout that is not an empty file");
        const char *name = base + strlen(STORAGE_WHITEOUT_PREFIX);
        if (strcmp(name, STORAGE_WHITEOUT_PREFIX ".opq") == 0)
                return extract_bad(x, err, "opaque-directory marker (boxcar's layers hold none)");
        if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return extract_bad(x, err, "whiteout of an empty name, \".\" or \"..\"");
        size_t plen = (size_t)(base - x->path);
        memcpy(target, x->path, plen);
        memcpy(target + plen, name, strlen(name) + 1);
        return 0;
}

int apply_whiteout(struct extractor *x, struct archive_entry *e, bool *ret_done,
                   struct bc_error *err)
{
        const char *slash = strrchr(x->path, '/');
        const char *base = slash ? slash + 1 : x->path;
        *ret_done = strncmp(base, STORAGE_WHITEOUT_PREFIX, strlen(STORAGE_WHITEOUT_PREFIX)) == 0;
        if (!*ret_done)
                return 0;
        char target[FS_MAX_PATH + 1];
        int r = whiteout_target(x, e, base, target, err);
        if (r < 0)
                return r;
        uint64_t hs[FS_MAX_DEPTH];
        int n = prefix_hashes(x->apply, target, hs);
        struct apply_slot *s = slot_get(x->apply, hs[n - 1]);
        if (s && (s->kind == K_ENTRY || s->kind == K_UNDER))
                return extract_bad(x, err, "whiteout of a name this layer also creates");
        if (s && s->kind == K_WHITEOUT)
                return extract_bad(x, err, "duplicate whiteout");
        int dirfd;
        const char *leaf;
        x->walker.create = false;
        r = fs_walker_parent(&x->walker, target, &dirfd, &leaf);
        x->walker.create = true;
        struct stat st;
        if (r == 0 && fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
                r = -errno;
        if (r == -ENOENT)
                return extract_bad(x, err, "whiteout of a name that is not there");
        if (r < 0)
                return extract_create_failed(x, r, err);
        char dir[FS_MAX_PATH + 1];
        parent_of(x->path, dir);
        r = open_up(x, dirfd, dir, err);
        if (r < 0)
                return r;
        r = fs_rm_rf_at(dirfd, leaf);
        if (r < 0)
                return extract_create_failed(x, r, err);
        s = slot_add(x->apply, hs[n - 1]);
        if (!s)
                return set_full(x, err);
        s->kind = K_WHITEOUT;
        return 0;
}
