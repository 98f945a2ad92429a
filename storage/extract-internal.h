/* Shared by extraction's two files only: extract.c (one archive into a
 * directory, entry by entry) and extract_apply.c (what changes when the
 * archive is a layer applied onto an existing tree).  The API is
 * extract.h. */
#ifndef BC_STORAGE_EXTRACT_INTERNAL_H
#define BC_STORAGE_EXTRACT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "storage/extract.h"
#include "storage/fsutil.h"

struct archive;
struct archive_entry;
struct apply_set;

struct dir_fixup {
        char *path;
        mode_t mode;
};

struct extractor {
        struct archive *a;
        struct extract_source *src;
        const struct storage_limits *l;
        struct fs_walker walker;
        uint64_t bytes;
        uint64_t entries;
        bool free_checked;                       /* once at the start, then every FREE_CHECK_* */
        uint64_t checked_bytes, checked_entries; /* of the tar stream, at the last look */
        struct dir_fixup *fix;
        size_t nfix;
        char path[FS_MAX_PATH + 1];
        char quoted[FS_QUOTE_MAX];
        bool too_big;
        struct apply_set *apply; /* NULL: a whole tree into an empty dir */
};

/* BC_BAD_ARCHIVE naming the current entry. */
int extract_bad(struct extractor *x, struct bc_error *err, const char *what);
/* A failure to resolve or create a name, as the archive's fault or ours. */
int extract_create_failed(struct extractor *x, int r, struct bc_error *err);
/* Remembers that directory path gets mode perm once extraction ends. */
int extract_add_fixup(struct extractor *x, const char *path, mode_t perm, struct bc_error *err);

/* ---- extract_apply.c ---- */
int apply_begin(struct extractor *x, struct bc_error *err);
void apply_end(struct extractor *x);
/* A whiteout entry (its name starts with ".wh."): checks it and removes
 * what it names; *ret_done false when the entry is not one. */
int apply_whiteout(struct extractor *x, struct archive_entry *e, bool *ret_done,
                   struct bc_error *err);
/* Before x->path is created in dirfd (its parent) as leaf: checks it
 * against what this layer did so far and removes what is in the way
 * (a directory stays when the entry is one). */
int apply_prepare(struct extractor *x, int dirfd, const char *leaf, bool is_dir,
                  struct bc_error *err);
/* A directory entry's mode, for the fixups at the end: replaces the one
 * noted when the directory was opened up for writing, if any.  *ret_done
 * true when it did. */
int apply_note_dir_mode(struct extractor *x, mode_t perm, bool *ret_done, struct bc_error *err);

#endif
