/* Shared by the two halves of the warm sandbox pool (sandbox_pool.h): its
 * sizing policy (sandbox_pool_sizing.c: how many of each kind, when to make
 * or drop one, how long to back off) and the rest, the pool's thread and
 * what the slots call (sandbox_pool.c).  Not part of the pool's API. */
#ifndef BC_WORKER_EXEC_SANDBOX_POOL_INTERNAL_H
#define BC_WORKER_EXEC_SANDBOX_POOL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sandbox/sandbox.h"
#include "storage/storage.h"
#include "worker/exec/sandbox_pool.h"

/* Sandboxes being made at once: at least MIN_STARTING, more while the
 * takes expected over one build (the arrival rate times the build time)
 * need them, at most MAX_STARTING: a refill must not starve running jobs
 * (the builds run niced, sandbox_pool.c), nor fall behind a burst. */
#define MIN_STARTING 4
#define MAX_STARTING 16
#define MAX_DYING 64
/* Images kept warm at once (each a kind per network); beyond, jobs on
 * further images start cold. */
#define MAX_IMAGE_KINDS 8
#define MAX_KINDS (2 + MAX_IMAGE_KINDS)

/* Sandboxes of one network kind on one root: the host's (kinds 0 and 1,
 * always there) or an image's (made while jobs ask for it, gone once
 * nobody has for a demand window). */
struct pool_kind {
        enum sandbox_network network;
        char sha[STORAGE_SHA256_HEX_LEN + 1]; /* "" for the host's root */
        /* The pool's own reference to the image in the cache: its tree
         * must not be evicted while sandboxes have it mounted. */
        struct storage_cache_entry *image;
        struct sandbox_warm *items; /* starting and ready */
        size_t n;
        unsigned in_use;
        unsigned peak_cur, peak_prev; /* most in use in this and the last window */
        uint64_t last_take_ms;
        double gap_ms; /* EWMA of the time between takes (0: none yet) */
};

struct dying {
        struct sandbox_warm w;
        uint64_t since_ms;
};

struct sandbox_pool {
        char *helper, *cgroup_parent;
        struct sandbox_warm_limits limits; /* each sandbox's before its job */
        unsigned max;
        struct metrics *m;
        pthread_mutex_t mu;
        pthread_t thread;
        int wake_fd;
        bool stop;
        struct storage_cache *images; /* may be NULL: no image kinds */
        struct pool_kind kinds[MAX_KINDS];
        size_t n_kinds;
        uint64_t window_start_ms;
        uint64_t backoff_until_ms;
        unsigned backoff_ms;
        double build_ms;   /* EWMA of a sandbox's spawn -> ready (a guess until timed) */
        bool builds_timed; /* one was */
        /* Takes announced by the claim (sandbox_pool_expect), not yet
         * come, until expect_until_ms; counted for the host's "none". */
        unsigned expected;
        uint64_t expect_until_ms;
        uint64_t last_miss_ms; /* a take that found none ready */
        int job_nice;          /* the worker's, the jobs' (the pool's thread: + POOL_NICE) */
        bool renice;           /* CAP_SYS_NICE: a sandbox may be put back at job_nice */
        struct dying dying[MAX_DYING]; /* under mu */
        size_t n_dying;
};

/* A sandbox to start: for kind index `kind`, which stays valid until it
 * is added (kinds are dropped on the pool's thread only, and an added one
 * goes at the end). */
struct planned {
        size_t kind;
        enum sandbox_network network;
        const char *root;
};

/* ---- sandbox_pool.c ---- */
/* Under the lock: tells w to go (SIGTERM); the pool's thread reaps it. */
void sbpool_discard_locked(struct sandbox_pool *p, struct sandbox_warm *w);

static inline void sbpool_remove_at(struct pool_kind *k, size_t i)
{
        k->items[i] = k->items[--k->n];
}

/* ---- sandbox_pool_sizing.c (each under the lock) ---- */
/* A take of kind k at now: its arrival rate. */
void sbpool_note_take(struct pool_kind *k, uint64_t now);
/* A sandbox came ready build_ms after its spawn. */
void sbpool_note_built(struct sandbox_pool *p, double build_ms);
/* Takes of kind i expected before a sandbox started now is ready: its
 * arrival rate times the build time, plus those the claim announced. */
unsigned sbpool_ahead(const struct sandbox_pool *p, size_t i, uint64_t now);
/* How many sandboxes kind i should have, starting and ready. */
unsigned sbpool_target(const struct sandbox_pool *p, size_t i, uint64_t now);
/* Starts a new demand window when the last one is over. */
void sbpool_roll_window(struct sandbox_pool *p, uint64_t now);
/* Drops image kinds nobody asked for in a demand window once their
 * sandboxes are gone; *ret_release gets their cache references (at most
 * MAX_IMAGE_KINDS), released by the caller outside the lock. */
void sbpool_drop_idle_kinds(struct sandbox_pool *p, uint64_t now,
                            struct storage_cache_entry **ret_release, size_t *ret_n);
/* Per kind, the sandboxes to start to reach its target into ret (at most
 * MAX_STARTING: their count), or one surplus ready sandbox out. */
size_t sbpool_rebalance(struct sandbox_pool *p, uint64_t now, struct planned *ret);
/* A sandbox could not be made: counted, logged, and the pool backs off. */
void sbpool_note_failure(struct sandbox_pool *p, const struct bc_error *err, uint64_t now);
/* How long the thread may sleep, at most timeout_ms: until a kind's
 * refill is due, or the backoff is over. */
int sbpool_wait_ms(const struct sandbox_pool *p, uint64_t now, int timeout_ms);

#endif
