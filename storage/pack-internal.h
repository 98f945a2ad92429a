/* Shared by the packer's files only (pack_walk.c lists the tree, sorted
 * and bounded; pack.c writes it); the API is storage.h. */
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
        const char *link_to; /* hard link: the path carrying the data */
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
/* Whether the monotonic clock is past d. */
bool pack_past_deadline(const struct timespec *d);
/* The error for a packing past lim's time budget, at path. */
int pack_over_time(const struct storage_pack_limits *lim, const char *path, struct bc_error *err);
/* The tree's own faults (an entry we may not read is as much the job's
 * doing as one too many) are BC_WORKSPACE_LIMIT; anything else BC_IO. */
enum bc_code pack_walk_code(int e);

#endif
