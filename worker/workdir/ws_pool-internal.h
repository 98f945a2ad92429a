/* Shared by the two halves of the workspace pool (ws_pool.h): its thread
 * and lifetime (ws_pool.c) and what a job's path calls (ws_pool_take.c).
 * Not part of the pool's API. */
#ifndef BC_WORKER_WORKDIR_WS_POOL_INTERNAL_H
#define BC_WORKER_WORKDIR_WS_POOL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/error.h"
#include "worker/workdir/ws_pool.h"

struct ws_entry {
        struct ws_entry *next;
        /* <pool>/<k>/: holds the filesystem while in the pool; while taken
         * it stays, empty, for the return (neither the take nor the return
         * makes or removes a directory: two rmdirs cost 0.2 ms here). */
        unsigned k;
        uint64_t disk_mb, files;
        dev_t dev;                         /* of the mounted filesystem */
        uint64_t base_inodes, base_blocks; /* in use right after it was made */
        uint64_t block_size;
        bool discard; /* returned: discard, don't wipe */
};

/* A job waiting in ws_pool_acquire for a filesystem on its way. */
struct ws_waiter {
        struct ws_waiter *next; /* one that came earlier */
        uint64_t disk_mb, files;
};

struct ws_pool {
        char *dir; /* <work-dir>/pool/<pid>.XXXXXX */
        int lock_fd;
        unsigned max_ready;
        uint64_t disk_mb, files;
        struct metrics *m;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_cond_t readied; /* a filesystem went on the ready list */
        pthread_t thread;
        bool thread_started;
        /* under lock: */
        bool stopping;
        struct ws_entry *ready; /* most recently made or wiped first */
        unsigned n_ready;
        struct ws_entry *returned; /* to wipe or discard */
        struct ws_entry *wiping;   /* taken off returned, being wiped */
        bool making;               /* the thread makes one of the pool's size */
        double make_ms;            /* running mean of the makes' time */
        struct ws_entry *taken;    /* in jobs' directories */
        struct ws_waiter *waiters; /* latest first */
        unsigned n_taken;
        unsigned next_k;
        unsigned peak_prev, peak_cur;
        uint64_t window_start_ms;
};

struct usage {
        uint64_t inodes, blocks, block_size;
        bool read_only;
};

/* ---- ws_pool.c ---- */
/* Seconds since t0 (CLOCK_MONOTONIC). */
double wsp_since_s(const struct timespec *t0);
/* <pool>/<k>/leaf into buf ("" leaf: the entry's directory). */
void wsp_entry_path(const struct ws_pool *p, unsigned k, const char *leaf, char *buf, size_t n);
/* Removes the emptied directory <pool>/<k>/ (and its fs/ mountpoint). */
void wsp_remove_entry_dir(const struct ws_pool *p, unsigned k);
/* What the filesystem at path uses (statvfs): 0 or a negative errno. */
int wsp_fs_usage(const char *path, struct usage *ret);
/* A new filesystem of e's size at mountpoint with ws/ and scratch/; e gets
 * its device and what it uses when empty. */
int wsp_make_fs(const char *image, const char *mountpoint, struct ws_entry *e,
                struct bc_error *err);
/* A make took seconds (how: "pool" or "cold"): counted, and into the
 * running mean a job waits for one on its way. */
void wsp_note_make(struct ws_pool *p, const char *how, double seconds);

#endif
