/* Shared by the volume cache's files only (cache.c: entries, downloads,
 * references; cache_evict.c: the budget and eviction); the API is
 * storage.h.  The layout and the locking rules are cache.c's head
 * comment. */
#ifndef BC_STORAGE_CACHE_INTERNAL_H
#define BC_STORAGE_CACHE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "storage/storage.h"

/* What an entry (file, directory, symlink) is charged against the budget
 * beside its data bytes: about one block, what a directory or an inode
 * costs the disk.  Without it a tree of empty files or directories is
 * charged nothing: a session whose every job adds `files` empty files
 * (promoted versions, storage_cache_promote) would be kept forever and
 * exhaust the worker's inodes and directory blocks, whatever
 * --volume-cache-mb says. */
#define CACHE_ENTRY_COST 4096

struct cache_ref {
        char sha[STORAGE_SHA256_HEX_LEN + 1];
        char *path;
        int lock_fd;
        unsigned refs;
        struct cache_ref *next;
};

struct storage_cache_entry {
        struct cache_ref *ref;
        bool downloaded;
        uint64_t downloaded_bytes; /* compressed, as fetched */
};

struct inflight {
        char sha[STORAGE_SHA256_HEX_LEN + 1];
        struct inflight *next;
};

struct storage_cache {
        char *dir;
        int dirfd;
        int vfd;   /* v/ */
        int tmpfd; /* tmp/ */
        int lock_fd;
        uint64_t max_bytes;
        const struct storage_config *cfg;
        const struct storage_limits *limits;
        uint64_t min_free; /* of the filesystem, kept by downloads */
        bool owned;        /* entries keep their modes, owned by uid:gid */
        uid_t uid;
        gid_t gid;
        pthread_mutex_t mu;
        pthread_cond_t cv;
        struct cache_ref *refs;
        struct inflight *fetching;
};

/* The flock that orders changes of the index among processes. */
void cache_global_lock(struct storage_cache *c);
void cache_global_unlock(struct storage_cache *c);
/* This process's reference to sha, or NULL (mutex held). */
struct cache_ref *cache_find_ref(struct storage_cache *c, const char *sha);

/* ---- cache_evict.c ---- */
/* After an insert (mutex held): back within the budget, with the other
 * workers sharing the directory, and `more` bytes beyond it; the bytes
 * evicted.  What it set aside goes with cache_empty_trash, unlocked. */
uint64_t cache_evict_shared(struct storage_cache *c, uint64_t more, char ***ret_trash,
                            size_t *ret_ntrash);
void cache_empty_trash(struct storage_cache *c, char **trash, size_t n);
/* Unlocked: the temporary tree (gone already once renamed in) and what
 * eviction set aside. */
void cache_drop_tmp(struct storage_cache *c, const char *tmpname, char **trash, size_t ntrash);
/* Whether the cache's filesystem has `more` bytes free beyond min_free. */
bool cache_free_above(const struct storage_cache *c, uint64_t more);

#endif
