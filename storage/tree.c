/* Tree manifests: what a version is, in canonical bytes whose SHA-256 is
 * the version's id (storage.h, "Trees").
 *
 * Format (version 1):
 *   the 14 bytes "boxcar-tree 1\n", then one record per entry of the tree
 *   (the root itself excluded), sorted bytewise (strcmp) by path, no two
 *   alike:  <path> NUL <attrs> NUL
 *   path: relative, '/'-separated, normalized (fs_normalize gives it back
 *   unchanged: no leading '/', no empty, "." or ".." component, at most
 *   FS_MAX_PATH bytes); its parent is an earlier "d" record (or the root).
 *   attrs: ASCII fields separated by one space:
 *     "d <perm>"                          a directory
 *     "f <perm> <size> <sha256> <map>"    a regular file
 *     "l <target>"                        a symlink (target: raw bytes,
 *                                         non-empty, at most FS_MAX_PATH)
 *     "h <path>"                          another name of the regular file
 *                                         of an earlier "f" record (the
 *                                         first of the inode's names in
 *                                         sorted order, as packing links)
 *   perm: exactly 4 octal digits, mode & 0777 (setuid, setgid and sticky
 *   are never kept, as packing drops them); size: st_size in decimal;
 *   map: "-" when the file is stored whole, else its data regions as the
 *   packer finds them (pack_map_holes: SEEK_DATA/SEEK_HOLE widened to
 *   4 KiB and joined where they touch) as comma-separated
 *   "<offset>+<length>" decimal pairs, increasing, never touching, each
 *   starting on a 4 KiB boundary and ending on one or at the end of the
 *   file, "0+0" for a file that is all hole; sha256: lowercase hex of the
 *   SHA-256 of the data regions' bytes concatenated in order (the whole
 *   content when the map is "-"), so holes are never read.  Decimals have
 *   no sign and no leading zero.
 * Only what packing keeps is there: sockets, fifos and devices are left
 * out, as storage_pack_dir skips them; owners and times are not part of
 * a tree.  So a tree walked from a directory and the tree of that
 * directory's tarball extracted elsewhere are the same bytes.
 *
 * Parsing is for hostile input (a manifest comes from S3): every rule
 * above is checked, and bytes and records are bounded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/cleanup.h"
#include "storage/fsutil.h"
#include "storage/tree-internal.h"

struct storage_tree {
        char *buf;
        size_t len;
        struct tree_rec *v;
        size_t n;
        char id[STORAGE_SHA256_HEX_LEN + 1];
        uint64_t file_count; /* "f", "h" and "l" records */
        uint64_t data;       /* data bytes of the "f" records */
};

void storage_tree_free(struct storage_tree *t)
{
        if (!t)
                return;
        free(t->buf);
        free(t->v);
        free(t);
}

const char *storage_tree_id(const struct storage_tree *t)
{
        return t->id;
}

void storage_tree_bytes(const struct storage_tree *t, const void **ret_buf, size_t *ret_len)
{
        *ret_buf = t->buf;
        *ret_len = t->len;
}

void storage_tree_stats(const struct storage_tree *t, uint64_t *ret_entries,
                        uint64_t *ret_file_count, uint64_t *ret_data_bytes)
{
        if (ret_entries)
                *ret_entries = t->n;
        if (ret_file_count)
                *ret_file_count = t->file_count;
        if (ret_data_bytes)
                *ret_data_bytes = t->data;
}

size_t tree_count(const struct storage_tree *t)
{
        return t->n;
}

const struct tree_rec *tree_rec_at(const struct storage_tree *t, size_t i)
{
        return &t->v[i];
}

const char *tree_rec_path(const struct storage_tree *t, const struct tree_rec *r)
{
        return t->buf + r->path;
}

const char *tree_rec_attrs(const struct storage_tree *t, const struct tree_rec *r)
{
        return t->buf + r->attrs;
}

/* "f PPPP SIZE SHA MAP": the sha after the third space. */
const char *tree_rec_sha(const struct storage_tree *t, const struct tree_rec *r)
{
        const char *s = tree_rec_attrs(t, r) + 7; /* past "f PPPP " */
        return strchr(s, ' ') + 1;
}

const char *tree_rec_map(const struct storage_tree *t, const struct tree_rec *r)
{
        return tree_rec_sha(t, r) + STORAGE_SHA256_HEX_LEN + 1;
}

const struct tree_rec *tree_rec_content(const struct storage_tree *t, const struct tree_rec *r)
{
        return r->kind == TREE_LINK ? &t->v[r->target] : r;
}

/* Index of path among the first n records, or -1. */
static ssize_t find(const struct storage_tree *t, size_t n, const char *path)
{
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(t->buf + t->v[mid].path, path);
                if (c == 0)
                        return (ssize_t)mid;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -1;
}

const struct tree_rec *tree_lookup(const struct storage_tree *t, const char *path)
{
        ssize_t i = find(t, t->n, path);
        return i < 0 ? NULL : &t->v[i];
}

/* ---- parsing ----------------------------------------------------------- */

static int fault(struct bc_error *err, size_t rec, const char *path, const char *what)
{
        char q[FS_QUOTE_MAX];
        if (!path)
                return bc_error_set(err, BC_BAD_ARCHIVE, EINVAL, "tree manifest: %s", what);
        return bc_error_set(err, BC_BAD_ARCHIVE, EINVAL, "tree manifest: record %zu (%s): %s",
                            rec + 1, fs_quote(path, q), what);
}

/* A decimal without sign or leading zero; *s is left on the byte after. */
static bool parse_u64(const char **s, uint64_t *ret)
{
        const char *p = *s;
        uint64_t v = 0;
        size_t n = 0;
        for (; *p >= '0' && *p <= '9'; p++, n++) {
                unsigned d = (unsigned)(*p - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return false;
                v = v * 10 + d;
        }
        if (n == 0 || (n > 1 && **s == '0'))
                return false;
        *s = p;
        *ret = v;
        return true;
}

/* Exactly 4 octal digits, at most 0777, then a space or the end. */
static bool parse_perm(const char **s, uint16_t *ret)
{
        const char *p = *s;
        unsigned v = 0;
        for (int i = 0; i < 4; i++) {
                if (p[i] < '0' || p[i] > '7')
                        return false;
                v = v * 8 + (unsigned)(p[i] - '0');
        }
        if (v > 0777 || (p[4] != ' ' && p[4] != '\0'))
                return false;
        *s = p + 4;
        *ret = (uint16_t)v;
        return true;
}

static bool is_hex64(const char *s)
{
        for (int i = 0; i < STORAGE_SHA256_HEX_LEN; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* The map of a file of `size` bytes, canonical as pack_map_holes makes
 * it; *ret_data: bytes in its regions. */
static bool parse_map(const char *s, uint64_t size, uint64_t *ret_data)
{
        if (strcmp(s, "-") == 0) {
                *ret_data = size;
                return true;
        }
        if (strcmp(s, "0+0") == 0) {
                *ret_data = 0;
                return size > 0;
        }
        uint64_t data = 0, prev_end = 0, n = 0;
        for (const char *p = s;; p++) {
                uint64_t off, len;
                if (!parse_u64(&p, &off) || *p++ != '+' || !parse_u64(&p, &len) ||
                    (*p != ',' && *p != '\0'))
                        return false;
                if (len == 0 || off % PACK_HOLE_ALIGN || (n > 0 && off <= prev_end) ||
                    len > size || off > size - len)
                        return false;
                uint64_t end = off + len;
                if (end % PACK_HOLE_ALIGN && end != size)
                        return false;
                data += len;
                prev_end = end;
                n++;
                if (*p == '\0')
                        break;
                if (end == size)
                        return false; /* nothing can follow the end */
        }
        if (n == 1 && data == size)
                return false; /* a file stored whole is "-" */
        *ret_data = data;
        return true;
}

static const char *parse_file(const char *a, struct tree_rec *r)
{
        const char *p = a + 2;
        if (!parse_perm(&p, &r->perm) || *p++ != ' ')
                return "bad permissions (4 octal digits, at most 0777)";
        if (!parse_u64(&p, &r->size) || *p++ != ' ')
                return "bad size";
        if (!is_hex64(p) || p[STORAGE_SHA256_HEX_LEN] != ' ')
                return "bad sha256";
        p += STORAGE_SHA256_HEX_LEN + 1;
        if (!parse_map(p, r->size, &r->data))
                return "bad map of data regions";
        return NULL;
}

/* The attributes of record i; NULL or what is wrong. */
static const char *parse_attrs(struct storage_tree *t, size_t i, const char *a)
{
        struct tree_rec *r = &t->v[i];
        r->kind = a[0];
        if (a[0] == '\0' || a[1] != ' ')
                return "bad attributes";
        switch (a[0]) {
        case TREE_DIR: {
                const char *p = a + 2;
                return parse_perm(&p, &r->perm) && *p == '\0'
                               ? NULL
                               : "bad permissions (4 octal digits, at most 0777)";
        }
        case TREE_FILE:
                return parse_file(a, r);
        case TREE_SYMLINK:
                return a[2] && strlen(a + 2) <= FS_MAX_PATH ? NULL : "bad symlink target";
        case TREE_LINK: {
                ssize_t k = find(t, i, a + 2);
                if (k < 0 || t->v[k].kind != TREE_FILE)
                        return "hard link to no earlier file";
                r->target = (uint32_t)k;
                return NULL;
        }
        default:
                return "unknown kind";
        }
}

/* The path of record i: normalized, after the previous one, in a
 * directory of the tree. */
static const char *check_path(const struct storage_tree *t, size_t i, const char *path)
{
        char norm[FS_MAX_PATH + 1];
        if (strlen(path) > FS_MAX_PATH || fs_normalize(path, norm) <= 0 || strcmp(norm, path))
                return "unsafe or unnormalized path";
        if (i > 0 && strcmp(t->buf + t->v[i - 1].path, path) >= 0)
                return "out of order or duplicated";
        const char *slash = strrchr(path, '/');
        if (!slash)
                return NULL;
        memcpy(norm, path, (size_t)(slash - path));
        norm[slash - path] = '\0';
        ssize_t k = find(t, i, norm);
        return k >= 0 && t->v[k].kind == TREE_DIR ? NULL : "parent is not a directory of the tree";
}

static int parse_records(struct storage_tree *t, struct bc_error *err)
{
        size_t alloc = 0;
        for (size_t off = TREE_HEADER_LEN; off < t->len;) {
                size_t i = t->n;
                if (i >= TREE_MAX_ENTRIES)
                        return fault(err, i, NULL, "too many records");
                const char *path = t->buf + off;
                const char *z = memchr(path, '\0', t->len - off);
                const char *attrs = z ? z + 1 : NULL;
                const char *end = z ? memchr(attrs, '\0', t->len - (size_t)(attrs - t->buf))
                                    : NULL;
                if (!end)
                        return fault(err, i, NULL, "truncated record");
                if (i == alloc) {
                        alloc = alloc ? alloc * 2 : 256;
                        struct tree_rec *v = realloc(t->v, alloc * sizeof(*v));
                        if (!v)
                                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
                        t->v = v;
                }
                t->v[i] = (struct tree_rec){ .path = (uint32_t)off,
                                             .attrs = (uint32_t)(attrs - t->buf) };
                const char *why = check_path(t, i, path);
                why = why ? why : parse_attrs(t, i, attrs);
                if (why)
                        return fault(err, i, path, why);
                t->n++;
                t->file_count += t->v[i].kind != TREE_DIR;
                t->data += t->v[i].kind == TREE_FILE ? t->v[i].data : 0;
                off = (size_t)(end - t->buf) + 1;
        }
        return 0;
}

void tree_sha256_hex(const void *buf, size_t len, char out[STORAGE_SHA256_HEX_LEN + 1])
{
        unsigned char md[32];
        unsigned int n = 0;
        EVP_Digest(buf, len, md, &n, EVP_sha256(), NULL);
        for (unsigned i = 0; i < 32; i++)
                snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int tree_parse_owned(char *buf, size_t len, const char *expected_id, struct storage_tree **ret,
                     struct bc_error *err)
{
        struct storage_tree *t = calloc(1, sizeof(*t));
        if (!t) {
                free(buf);
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        }
        t->buf = buf;
        t->len = len;
        int r = 0;
        if (len > TREE_MAX_BYTES)
                r = fault(err, 0, NULL, "larger than 1 GiB");
        else if (len < TREE_HEADER_LEN || memcmp(buf, TREE_HEADER, TREE_HEADER_LEN))
                r = fault(err, 0, NULL, "bad header (not \"boxcar-tree 1\")");
        if (r == 0) {
                tree_sha256_hex(buf, len, t->id);
                if (expected_id && strcmp(expected_id, t->id))
                        r = bc_error_set(err, BC_BAD_ARCHIVE, EINVAL,
                                         "tree manifest: sha256 is %s, expected %s", t->id,
                                         expected_id);
        }
        r = r ? r : parse_records(t, err);
        if (r < 0) {
                storage_tree_free(t);
                return r;
        }
        *ret = t;
        return 0;
}

int storage_tree_parse(const void *buf, size_t len, const char *expected_id,
                       struct storage_tree **ret, struct bc_error *err)
{
        if (len > TREE_MAX_BYTES)
                return fault(err, 0, NULL, "larger than 1 GiB");
        char *copy = malloc(len + 1);
        if (!copy)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        if (len)
                memcpy(copy, buf, len);
        copy[len] = '\0';
        return tree_parse_owned(copy, len, expected_id, ret, err);
}

/* ---- building ---------------------------------------------------------- */

char *tree_attrs_dir(mode_t perm)
{
        char *s = NULL;
        return asprintf(&s, "d %04o", (unsigned)(perm & 0777)) < 0 ? NULL : s;
}

char *tree_attrs_file(mode_t perm, uint64_t size, const char *sha256, const char *map)
{
        char *s = NULL;
        return asprintf(&s, "f %04o %llu %.64s %s", (unsigned)(perm & 0777),
                        (unsigned long long)size, sha256, map) < 0
                       ? NULL
                       : s;
}

char *tree_attrs_symlink(const char *target)
{
        char *s = NULL;
        return asprintf(&s, "l %s", target) < 0 ? NULL : s;
}

char *tree_attrs_link(const char *first_path)
{
        char *s = NULL;
        return asprintf(&s, "h %s", first_path) < 0 ? NULL : s;
}

char *tree_format_map(const struct pack_map *m)
{
        if (!m->sparse)
                return strdup("-");
        if (m->n == 0)
                return strdup("0+0");
        _cleanup_(dynbuf_donep) struct dynbuf b;
        dynbuf_init(&b, TREE_MAX_BYTES);
        for (size_t i = 0; i < m->n; i++)
                if (dynbuf_printf(&b, "%s%llu+%llu", i ? "," : "", (unsigned long long)m->v[i].off,
                                  (unsigned long long)m->v[i].len) < 0)
                        return NULL;
        return dynbuf_steal(&b);
}

int tree_builder_init(struct tree_builder *b, struct bc_error *err)
{
        dynbuf_init(&b->buf, TREE_MAX_BYTES);
        b->n = 0;
        if (dynbuf_add(&b->buf, TREE_HEADER, TREE_HEADER_LEN) < 0)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        return 0;
}

int tree_builder_add(struct tree_builder *b, const char *path, const char *attrs,
                     struct bc_error *err)
{
        if (b->n >= TREE_MAX_ENTRIES)
                return bc_error_set(err, BC_WORKSPACE_LIMIT, E2BIG,
                                    "more than %lu entries in a tree",
                                    (unsigned long)TREE_MAX_ENTRIES);
        b->n++;
        int r = dynbuf_add(&b->buf, path, strlen(path) + 1);
        r = r ? r : dynbuf_add(&b->buf, attrs, strlen(attrs) + 1);
        if (r == -E2BIG)
                return bc_error_set(err, BC_WORKSPACE_LIMIT, E2BIG,
                                    "the tree's manifest would be larger than 1 GiB");
        return r < 0 ? bc_error_set(err, BC_IO, -r, "out of memory") : 0;
}

int tree_builder_finish(struct tree_builder *b, struct storage_tree **ret, struct bc_error *err)
{
        size_t len = b->buf.len;
        char *buf = dynbuf_steal(&b->buf);
        if (!buf)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        return tree_parse_owned(buf, len, NULL, ret, err);
}

void tree_builder_done(struct tree_builder *b)
{
        dynbuf_done(&b->buf);
}
