/* A tree manifest's records, for the layer builder (layer.c) and the
 * S3 transfer of manifests (tree_s3.c): building one record at a time in
 * sorted order, looking a path up, reading a record's fields.  The format
 * is described in storage/tree.c; the API is storage.h. */
#ifndef BC_STORAGE_TREE_INTERNAL_H
#define BC_STORAGE_TREE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/dynbuf.h"
#include "common/error.h"
#include "storage/pack-internal.h"
#include "storage/storage.h"

#define TREE_HEADER "boxcar-tree 1\n"
#define TREE_HEADER_LEN 14
/* Bounds on a manifest we accept (or build): bytes and records. */
#define TREE_MAX_BYTES (UINT64_C(1) << 30)
#define TREE_MAX_ENTRIES (UINT32_C(1) << 24)

enum tree_kind { TREE_DIR = 'd', TREE_FILE = 'f', TREE_SYMLINK = 'l', TREE_LINK = 'h' };

/* One record; strings live in the manifest's bytes. */
struct tree_rec {
        uint32_t path;   /* offset of the NUL-terminated path */
        uint32_t attrs;  /* offset of the NUL-terminated attributes */
        uint32_t target; /* TREE_LINK: index of the TREE_FILE it names */
        uint16_t perm;   /* TREE_DIR, TREE_FILE */
        char kind;       /* enum tree_kind */
        uint64_t size;   /* TREE_FILE: st_size */
        uint64_t data;   /* TREE_FILE: bytes in its data regions */
};

size_t tree_count(const struct storage_tree *t);
const struct tree_rec *tree_rec_at(const struct storage_tree *t, size_t i);
const char *tree_rec_path(const struct storage_tree *t, const struct tree_rec *r);
const char *tree_rec_attrs(const struct storage_tree *t, const struct tree_rec *r);
/* TREE_FILE: the 64 hex digits of its data's SHA-256 (not NUL-terminated)
 * and its map ("-" or the regions, NUL-terminated). */
const char *tree_rec_sha(const struct storage_tree *t, const struct tree_rec *r);
const char *tree_rec_map(const struct storage_tree *t, const struct tree_rec *r);
/* The record of path (normalized, relative), or NULL. */
const struct tree_rec *tree_lookup(const struct storage_tree *t, const char *path);
/* The record a TREE_LINK names; r itself for any other kind. */
const struct tree_rec *tree_rec_content(const struct storage_tree *t, const struct tree_rec *r);

/* Attributes of a record (a new heap string, NULL when out of memory):
 * a directory, a regular file (sha256: 64 hex digits; map: "-" or the
 * regions as tree_format_map writes them), a symlink, a hard link. */
char *tree_attrs_dir(mode_t perm);
char *tree_attrs_file(mode_t perm, uint64_t size, const char *sha256, const char *map);
char *tree_attrs_symlink(const char *target);
char *tree_attrs_link(const char *first_path);
/* A file's map as the manifest spells it: "-" when m is not sparse, else
 * "<off>+<len>" pairs joined by ',' ("0+0" when the file is all hole).
 * A new heap string, NULL when out of memory. */
char *tree_format_map(const struct pack_map *m);

/* storage_tree_parse of buf (malloc'ed), which it takes over whatever
 * the outcome. */
int tree_parse_owned(char *buf, size_t len, const char *expected_id, struct storage_tree **ret,
                     struct bc_error *err);
/* Lowercase hex of the SHA-256 of buf. */
void tree_sha256_hex(const void *buf, size_t len, char out[STORAGE_SHA256_HEX_LEN + 1]);

/* A manifest built record by record, in sorted order (the order is
 * checked when it is finished, as is every other rule of the format). */
struct tree_builder {
        struct dynbuf buf;
        size_t n;
};
int tree_builder_init(struct tree_builder *b, struct bc_error *err);
int tree_builder_add(struct tree_builder *b, const char *path, const char *attrs,
                     struct bc_error *err);
/* Parses what was added into *ret (its id computed); b is emptied. */
int tree_builder_finish(struct tree_builder *b, struct storage_tree **ret, struct bc_error *err);
void tree_builder_done(struct tree_builder *b);

#endif
