/* Shared by the packer's files (pack_walk.c lists the tree, sorted and
 * bounded; pack.c writes it) and the layer builder (layer.c: writes a
 * chosen part of a walked tree plus whiteouts); the API is storage.h. */
#ifndef BC_STORAGE_PACK_INTERNAL_H
#define BC_STORAGE_PACK_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/error.h"
#include "storage/storage.h"

struct pack_item {
        char *path;
        mode_t mode;
        nlink_t nlink;
        dev_t dev;
        ino_t ino;
        off_t size;          /* st_size at the walk */
        const char *link_to; /* hard link: the path carrying the data */
        bool whiteout;       /* not on disk: an empty 0644 file (layer.c) */
};

struct pack_list {
        struct pack_item *v;
        size_t n;
        size_t alloc;
        uint64_t skipped;
        const struct storage_pack_limits *lim;
        struct timespec deadline;
};

/* Lists the tree under rootfd into *ret, sorted bytewise by path, hard
 * links resolved to their first path, within lim's depth, entries and
 * time (BC_WORKSPACE_LIMIT naming the path past one).  Free it with
 * pack_list_done. */
int pack_walk(int rootfd, const struct storage_pack_limits *lim, struct pack_list *ret,
              struct bc_error *err);
void pack_list_done(struct pack_list *l);
/* Index of path in l (sorted), or l->n when it is not there. */
size_t pack_list_find(const struct pack_list *l, const char *path);

/* Writes items v[0..n) (sorted bytewise by path; whiteouts need no file)
 * of the tree under rootfd as a deterministic .tar.gz to out_fd, exactly
 * as storage_pack_dir writes them, within lim and the walk's deadline.
 * *ret gets the archive's sha256 and size; file_count and skipped count
 * what was written and what turned out not to be packable. */
int pack_write(int rootfd, const struct pack_item *v, size_t n,
               const struct storage_pack_limits *lim, const struct timespec *deadline, int out_fd,
               struct storage_pack_result *ret, struct bc_error *err);

/* Data regions of a regular file as the packer stores it: SEEK_DATA and
 * SEEK_HOLE widened to PACK_HOLE_ALIGN and joined where they touch.  When
 * !sparse the file is stored whole (n = 0, data = its size). */
#define PACK_HOLE_ALIGN 4096
struct pack_region {
        uint64_t off;
        uint64_t len;
};
struct pack_map {
        struct pack_region *v;
        size_t n;
        size_t alloc;
        bool sparse;
        uint64_t data; /* bytes in the regions */
};
/* 0 or -errno; m is reset first and freed by pack_map_done either way. */
int pack_map_holes(int fd, off_t size, struct pack_map *m);
void pack_map_done(struct pack_map *m);
/* Adds n bytes of file data to *total, or BC_WORKSPACE_LIMIT past
 * lim->max_bytes (naming path). */
int pack_count_bytes(uint64_t *total, uint64_t n, const struct storage_pack_limits *lim,
                     const char *path, struct bc_error *err);

/* Whether the monotonic clock is past d. */
bool pack_past_deadline(const struct timespec *d);
/* The error for a packing past lim's time budget, at path. */
int pack_over_time(const struct storage_pack_limits *lim, const char *path, struct bc_error *err);
/* Reads up to want bytes of the file being packed or hashed (path, for
 * messages) at off: the count (> 0), or negative with err set: an
 * unreadable file is the tree's fault (pack_walk_code), one that ends
 * before its size shrank while we read it ("doing": "packed", "hashed"). */
ssize_t pack_pread(int fd, void *buf, size_t want, off_t off, const char *path, const char *doing,
                   struct bc_error *err);
/* The tree's own faults (an entry we may not read is as much the job's
 * doing as one too many) are BC_WORKSPACE_LIMIT; anything else BC_IO. */
enum bc_code pack_walk_code(int e);

#endif
