/* Shared by the volume cache's files only (cache.c: entries, downloads,
 * references; cache_evict.c: the budget and eviction; cache_layers.c:
 * versions as stacks of layers); the API is
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

/* Downloads url (verified against sha256) even when sha256 is cached, and
 * returns the entry (the cached one when it was: the download only proved
 * that url serves it).  The url volumes' proof (cache_origin.c). */
int cache_download_anyway(struct storage_cache *c, const char *url, const char *sha256,
                          const struct netguard *guard, struct storage_cache_entry **ret,
                          struct bc_error *err);

/* The flock that orders changes of the index among processes. */
void cache_global_lock(struct storage_cache *c);
void cache_global_unlock(struct storage_cache *c);
/* This process's reference to sha, or NULL (mutex held). */
struct cache_ref *cache_find_ref(struct storage_cache *c, const char *sha);

/* A tree being built in tmp/ before cache_publish moves it in. */
struct cache_build {
        char tmpname[64];
        char tmppath[4200];
        const char *claimed;          /* the sha this thread claimed, or NULL */
        struct storage_limits limits; /* the cache's, with its min_free */
        /* Set by the builder on success: */
        char sha[STORAGE_SHA256_HEX_LEN + 1]; /* the entry's name */
        uint64_t bytes, entries;              /* of the whole tree */
        uint64_t downloaded;                  /* compressed bytes fetched */
};
/* A fresh temporary name "<kind>-<pid>-<random>" under tmp/. */
void cache_build_init(struct storage_cache *c, const char *kind, const char *claimed,
                      struct cache_build *b);
/* Makes a built tree what an entry is: read-only, or given to the
 * cache's owner.  BC_IO. */
int cache_seal_tree(struct storage_cache *c, const char *path, struct bc_error *err);
/* Ends a build (mutex not held): r is the build's outcome.  Releases the
 * claim, moves the tree in (or finds the same entry published meanwhile
 * by another process) and returns a handle to it, downloaded; removes
 * the temporary tree in every case. */
int cache_publish(struct storage_cache *c, const struct cache_build *b, int r,
                  struct storage_cache_entry **ret, struct bc_error *err);
/* Mutex not held.  0 with *ret on a hit; 1 on a miss, this thread being
 * now the one to fetch sha (cache_publish with b->claimed = sha ends
 * that), after waiting for another thread fetching it; without
 * can_fetch a miss is BC_NOT_FOUND. */
int cache_hit_or_claim(struct storage_cache *c, const char *sha, bool can_fetch,
                       struct storage_cache_entry **ret, struct bc_error *err);
/* A reference to a cached entry (so it is not evicted), or NULL when it
 * is not there; a lookup, no network.  Mutex not held. */
struct cache_ref *cache_hold(struct storage_cache *c, const char *sha);
void cache_unhold(struct storage_cache *c, struct cache_ref *r);

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
