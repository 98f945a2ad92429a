/* Ready workspace filesystems: see ws_pool.h.
 *
 * Handing one to a job is a mount move (MS_MOVE of <pool>/<k>/fs onto the
 * job's <dir>/fs) and a rename of its image, both O(1).  A move rather
 * than pointing the job directory at the pool entry: the job directory then
 * looks exactly like a cold one (<dir>/ws.img, <dir>/fs/{ws,scratch}), so
 * the sandbox backend, the crash cleanup of job directories (which
 * unmounts whatever is under a job's directory) and the tests see one
 * layout, and nothing of the job's path leads into the pool.
 *
 * Why a used filesystem may serve a later job, after the wipe below:
 * - no process of the job survives its sandbox: the helper's pid namespace
 *   dies with it, and the filesystem is released only after the backend
 *   has reaped the helper, so nothing still writes to it or holds a file;
 * - the job saw only fs/ws and fs/scratch (bound as /workspace, /tmp and
 *   /dev/shm), never the filesystem's root, lost+found or the mount
 *   itself, and had no capability that changes the filesystem as a whole
 *   (label, features, immutable flags need capabilities in the initial
 *   namespace); everything it could change lies inside those two
 *   directories, which are removed entirely (with their own modes, owners
 *   and xattrs) and made anew, never following a symlink and never leaving
 *   the filesystem;
 * - the wipe is verified: the used inode count must be back to exactly
 *   what it was when the filesystem was made, so no inode of the job is
 *   left anywhere (else the filesystem is discarded);
 * - ext4 never shows freed blocks to a later reader: a new file's blocks
 *   read as zeros until written (unwritten extents).
 * A filesystem the job used much (many files or bytes) is discarded
 * instead: removing 100,000 files costs more than mke2fs. */
#include "worker/workdir/ws_pool.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/deadline.h"
#include "common/io.h"
#include "sandbox/sandbox.h"
#include "worker/log/log.h"
#include "worker/metrics/wmetrics.h"
#include "worker/workdir/ws_wipe.h"

/* A filesystem is reused only when its job left at most this much beyond
 * what it had when made (measured by statvfs, so sparse files and hard
 * links count what they allocate).  Inodes: removing each costs, and
 * beyond a few thousand the wipe costs more than mke2fs.  Bytes: freeing
 * blocks is cheap, but blocks already written back stay allocated in the
 * sparse image (no discard), so a reused filesystem would hold the host
 * disk its last job used while it waits; discarding gives that back. */
#define REUSE_MAX_INODES 2000
#define REUSE_MAX_BYTES (64ull << 20)
/* Demand is the most filesystems in use at once over the last one or two
 * windows; the pool shrinks to the prefetch after two idle windows. */
#define DEMAND_WINDOW_MS 60000
/* After a failed make, the thread waits this long before the next one. */
#define MAKE_BACKOFF_MS 5000
/* A job that finds none ready while one of its size is coming (being
 * wiped, waiting to be, or being made by the thread) waits for it as long
 * as making one on its own path would take: the mean of the makes so far,
 * at least this.  A wipe takes a fraction of a millisecond to a few (it
 * may wait for a dead sandbox's mounts, see ws_wipe.h) and a make 15-40 ms
 * when the host is idle, both several times that under load. */
#define COMING_WAIT_MIN_MS 10

struct ws_entry {
        struct ws_entry *next;
        /* <pool>/<k>/: holds the filesystem while in the pool; while taken
         * it stays, empty, for the return (neither the take nor the return
         * makes or removes a directory: two rmdirs cost 0.2 ms here). */
        unsigned k;
        uint64_t disk_mb, files;
        dev_t dev;                   /* of the mounted filesystem */
        uint64_t base_inodes, base_blocks; /* in use right after it was made */
        uint64_t block_size;
        bool discard;                /* returned: discard, don't wipe */
};

/* A job waiting in ws_pool_acquire for a filesystem on its way. */
struct ws_waiter {
        struct ws_waiter *next;      /* one that came earlier */
        uint64_t disk_mb, files;
};

struct ws_pool {
        char *dir;                   /* <work-dir>/pool/<pid>.XXXXXX */
        int lock_fd;
        unsigned max_ready;
        uint64_t disk_mb, files;
        struct metrics *m;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_cond_t readied;      /* a filesystem went on the ready list */
        pthread_t thread;
        bool thread_started;
        /* under lock: */
        bool stopping;
        struct ws_entry *ready;      /* most recently made or wiped first */
        unsigned n_ready;
        struct ws_entry *returned;   /* to wipe or discard */
        struct ws_entry *wiping;     /* taken off returned, being wiped */
        bool making;                 /* the thread makes one of the pool's size */
        double make_ms;              /* running mean of the makes' time */
        struct ws_entry *taken;      /* in jobs' directories */
        struct ws_waiter *waiters;   /* latest first */
        unsigned n_taken;
        unsigned next_k;
        unsigned peak_prev, peak_cur;
        uint64_t window_start_ms;
};

static double since_s(const struct timespec *t0)
{
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void entry_path(const struct ws_pool *p, unsigned k, const char *leaf, char *buf, size_t n)
{
        snprintf(buf, n, "%s/%u%s%s", p->dir, k, *leaf ? "/" : "", leaf);
}

/* Removes the emptied directory <pool>/<k>/ (and its fs/ mountpoint). */
static void remove_entry_dir(const struct ws_pool *p, unsigned k)
{
        char fs[PATH_MAX], dir[PATH_MAX];
        entry_path(p, k, "fs", fs, sizeof(fs));
        entry_path(p, k, "", dir, sizeof(dir));
        rmdir(fs);
        rmdir(dir);
}

struct usage {
        uint64_t inodes, blocks, block_size;
        bool read_only;
};

static int fs_usage(const char *path, struct usage *ret)
{
        struct statvfs sv;
        if (statvfs(path, &sv) < 0)
                return -errno;
        ret->inodes = (uint64_t)(sv.f_files - sv.f_ffree);
        ret->blocks = (uint64_t)(sv.f_blocks - sv.f_bfree);
        ret->block_size = sv.f_frsize;
        ret->read_only = sv.f_flag & ST_RDONLY;
        return 0;
}

/* A new filesystem at mountpoint with ws/ and scratch/; e gets its device
 * and what it uses when empty. */
static int make_fs(const char *image, const char *mountpoint, struct ws_entry *e,
                   struct bc_error *err)
{
        int r = sandbox_workspace_make(image, mountpoint, e->disk_mb, e->files, err);
        if (r < 0)
                return r;
        char ws[PATH_MAX], sc[PATH_MAX];
        snprintf(ws, sizeof(ws), "%s/ws", mountpoint);
        snprintf(sc, sizeof(sc), "%s/scratch", mountpoint);
        struct stat st;
        struct usage u = { 0 };
        if (mkdir(ws, 0755) < 0 || mkdir(sc, 0755) < 0 || stat(mountpoint, &st) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "create %s: %m", ws);
        r = fs_usage(mountpoint, &u);
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "statvfs %s: %s", mountpoint,
                                    strerror(-r));
        e->dev = st.st_dev;
        e->base_inodes = u.inodes;
        e->base_blocks = u.blocks;
        e->block_size = u.block_size;
        return 0;
}

/* Unmounts and deletes a filesystem held in the pool (its loop device
 * detaches by itself: autoclear). */
static void discard(struct ws_pool *p, struct ws_entry *e)
{
        char fs[PATH_MAX], img[PATH_MAX];
        entry_path(p, e->k, "fs", fs, sizeof(fs));
        entry_path(p, e->k, "ws.img", img, sizeof(img));
        struct bc_error err = BC_ERROR_INIT;
        if (sandbox_workspace_unmount(fs, &err) < 0)
                log_event(LOG_WARN, "workspace.discard_failed", "path", fs, "error",
                          bc_error_message(&err), NULL);
        bc_error_clear(&err);
        unlink(img);
        remove_entry_dir(p, e->k);
        wmetrics_workspace(p->m, "discarded");
        free(e);
}

/* See ws_wipe.h: the filesystem back to what it was when made. */
static int wipe(struct ws_pool *p, const struct ws_entry *e)
{
        char fs[PATH_MAX];
        entry_path(p, e->k, "fs", fs, sizeof(fs));
        return ws_wipe(fs, e->dev, e->base_inodes, e->base_blocks);
}

/* The most filesystems in use at once over the last window or two. */
static unsigned peak_locked(const struct ws_pool *p)
{
        return p->peak_prev > p->peak_cur ? p->peak_prev : p->peak_cur;
}

/* Demand: the most filesystems in use at once lately, plus the prefetch,
 * ready at once (not minus those in use: when several slots free up
 * together, each must find one), at most max_ready. */
static unsigned target_locked(struct ws_pool *p)
{
        uint64_t now = bc_mono_ms();
        if (now - p->window_start_ms >= DEMAND_WINDOW_MS) {
                p->peak_prev = p->peak_cur;
                p->peak_cur = p->n_taken;
                p->window_start_ms = now;
        }
        unsigned want = peak_locked(p) + WS_POOL_PREFETCH;
        return want < p->max_ready ? want : p->max_ready;
}

/* A ready filesystem is surplus only when there are more than the target
 * ready and more in all (ready and in use) than the target plus the peak
 * in use.  (The thread asks only once every returned one is wiped.)  Not by the ready count alone: jobs take and return
 * filesystems one by one, so with a few slots between jobs the ready count
 * is briefly above the target, and one discarded then must be made anew
 * (mke2fs, often on a job's path) when the slots fill again.  Measured on
 * 400 jobs at concurrency 8: 63 made and 63 discarded with the ready count
 * alone, against the 18 the peak needs. */
static bool surplus_locked(const struct ws_pool *p, unsigned want)
{
        return p->n_ready > want && p->n_ready + p->n_taken > want + peak_locked(p);
}

static void push_ready_locked(struct ws_pool *p, struct ws_entry *e)
{
        e->next = p->ready;
        p->ready = e;
        p->n_ready++;
        wmetrics_workspaces_ready(p->m, p->n_ready);
        pthread_cond_broadcast(&p->readied);
}

/* The oldest ready filesystem, unlinked from the list. */
static struct ws_entry *pop_oldest_locked(struct ws_pool *p)
{
        struct ws_entry **pp = &p->ready;
        while (*pp && (*pp)->next)
                pp = &(*pp)->next;
        struct ws_entry *e = *pp;
        *pp = NULL;
        p->n_ready--;
        wmetrics_workspaces_ready(p->m, p->n_ready);
        return e;
}

static void note_make(struct ws_pool *p, const char *how, double seconds)
{
        wmetrics_workspace_make(p->m, how, seconds);
        pthread_mutex_lock(&p->lock);
        p->make_ms = p->make_ms > 0 ? 0.8 * p->make_ms + 0.2 * seconds * 1000 : seconds * 1000;
        pthread_mutex_unlock(&p->lock);
}

/* Makes one filesystem of the pool's size; NULL on failure (logged). */
static struct ws_entry *make_one(struct ws_pool *p, unsigned k)
{
        struct ws_entry *e = calloc(1, sizeof(*e));
        if (!e)
                return NULL;
        e->k = k;
        e->disk_mb = p->disk_mb;
        e->files = p->files;
        char dir[PATH_MAX], fs[PATH_MAX], img[PATH_MAX];
        entry_path(p, k, "", dir, sizeof(dir));
        entry_path(p, k, "fs", fs, sizeof(fs));
        entry_path(p, k, "ws.img", img, sizeof(img));
        struct bc_error err = BC_ERROR_INIT;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int r = mkdir(dir, 0700) < 0 ? bc_error_set(&err, BC_SANDBOX_SETUP, errno,
                                                    "create %s: %m", dir)
                                     : make_fs(img, fs, e, &err);
        if (r >= 0) {
                note_make(p, "pool", since_s(&t0));
                wmetrics_workspace(p->m, "made");
                return e;
        }
        log_event(LOG_WARN, "workspace.pool_make_failed", "error", bc_error_message(&err),
                  LOG_INT("retry_ms", MAKE_BACKOFF_MS), NULL);
        bc_error_clear(&err);
        (void)sandbox_workspace_unmount(fs, &err);
        bc_error_clear(&err);
        unlink(img);
        remove_entry_dir(p, k);
        free(e);
        return NULL;
}

/* A returned filesystem: wiped and made ready, or discarded.  Ready, it
 * goes first in line; when that makes one too many, the thread discards
 * the oldest (a filesystem already made is worth keeping, and its size is
 * one jobs of this worker ask for). */
static void recycle(struct ws_pool *p, struct ws_entry *e)
{
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int r = e->discard ? 0 : wipe(p, e);
        bool reuse = !e->discard && r == 0;
        if (r < 0) {   /* something still holds what the job made: see ws_wipe */
                char fs[PATH_MAX];
                entry_path(p, e->k, "fs", fs, sizeof(fs));
                log_event(LOG_WARN, "workspace.wipe_failed", "path", fs, "error", strerror(-r),
                          "action", "discarded", NULL);
        }
        if (reuse) {
                wmetrics_workspace_wipe(p->m, since_s(&t0));
                wmetrics_workspace(p->m, "reused");
        }
        pthread_mutex_lock(&p->lock);
        p->wiping = NULL;
        if (reuse)
                push_ready_locked(p, e);
        else  /* a job waiting for it stops waiting */
                pthread_cond_broadcast(&p->readied);
        pthread_mutex_unlock(&p->lock);
        if (!reuse)
                discard(p, e);
}

static void *pool_main(void *arg)
{
        struct ws_pool *p = arg;
        uint64_t backoff_until = 0;
        pthread_mutex_lock(&p->lock);
        while (!p->stopping) {
                struct ws_entry *e = p->returned;
                unsigned want = target_locked(p);
                if (e) {
                        p->returned = e->next;
                        p->wiping = e;
                        pthread_mutex_unlock(&p->lock);
                        recycle(p, e);
                } else if (surplus_locked(p, want)) {
                        e = pop_oldest_locked(p);
                        pthread_mutex_unlock(&p->lock);
                        discard(p, e);
                } else if (p->n_ready < want && bc_mono_ms() >= backoff_until) {
                        unsigned k = p->next_k++;
                        p->making = true;
                        pthread_mutex_unlock(&p->lock);
                        e = make_one(p, k);
                        pthread_mutex_lock(&p->lock);
                        p->making = false;
                        if (e) {
                                push_ready_locked(p, e);
                        } else {
                                backoff_until = bc_mono_ms() + MAKE_BACKOFF_MS;
                                /* a job waiting for it stops waiting */
                                pthread_cond_broadcast(&p->readied);
                        }
                        continue;
                } else {
                        /* Wakes for returns and takes; once a second for
                         * the demand window and the backoff. */
                        struct timespec ts = bc_realtime_after_ms(1000);
                        pthread_cond_timedwait(&p->wake, &p->lock, &ts);
                        continue;
                }
                pthread_mutex_lock(&p->lock);
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

int ws_pool_start(struct ws_pool **ret, const struct ws_pool_options *o, struct bc_error *err)
{
        _cleanup_free_ char *base = NULL, *lock = NULL;
        struct ws_pool *p = calloc(1, sizeof(*p));
        if (!p || asprintf(&base, "%s/pool", o->work_dir) < 0 ||
            asprintf(&p->dir, "%s/%d.XXXXXX", base, (int)getpid()) < 0) {
                free(p);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        p->lock_fd = -1;
        p->max_ready = o->max_ready;
        p->disk_mb = o->disk_mb;
        p->files = o->files;
        p->m = o->metrics;
        p->peak_prev = o->concurrency;
        p->window_start_ms = bc_mono_ms();
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->wake, NULL);
        pthread_cond_init(&p->readied, NULL);
        *ret = p;   /* ws_pool_stop undoes any part of what follows */
        if (o->max_ready == 0)
                return 0;
        if ((mkdir(base, 0700) < 0 && errno != EEXIST) || !mkdtemp(p->dir))
                return bc_error_set(err, BC_CONFIG, errno, "create %s: %m", p->dir);
        if (asprintf(&lock, "%s/lock", p->dir) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        p->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (p->lock_fd < 0 || flock(p->lock_fd, LOCK_EX) < 0)
                return bc_error_set(err, BC_CONFIG, errno, "lock %s: %m", lock);
        int r = pthread_create(&p->thread, NULL, pool_main, p);
        if (r != 0)
                return bc_error_set(err, BC_INTERNAL, r, "workspace pool thread: %s", strerror(r));
        p->thread_started = true;
        return 0;
}

void ws_pool_stop(struct ws_pool *p)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        pthread_cond_signal(&p->wake);
        pthread_cond_broadcast(&p->readied);   /* a job waiting for one makes its own */
        pthread_mutex_unlock(&p->lock);
        if (p->thread_started)
                pthread_join(p->thread, NULL);
        for (struct ws_entry *e = p->ready, *next; e; e = next) {
                next = e->next;
                discard(p, e);
        }
        for (struct ws_entry *e = p->returned, *next; e; e = next) {
                next = e->next;
                discard(p, e);
        }
        for (struct ws_entry *e = p->taken, *next; e; e = next) {
                next = e->next;
                free(e);
        }
        wmetrics_workspaces_ready(p->m, 0);
        if (p->lock_fd >= 0) {
                sandbox_workspace_remove_dir(p->dir);
                close(p->lock_fd);
        }
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->readied);
        pthread_mutex_destroy(&p->lock);
        free(p->dir);
        free(p);
}

void ws_pool_cleanup(const char *work_dir)
{
        _cleanup_free_ char *base = NULL;
        if (asprintf(&base, "%s/pool", work_dir) >= 0)
                bc_remove_unlocked_dirs(base, sandbox_workspace_remove_dir);
}

/* Moves a ready filesystem into the job's place: its image renamed (same
 * filesystem: the work dir), its mount moved.  On failure everything is
 * back in the pool's directory.  The emptied entry directory stays for
 * the filesystem's return. */
static int move_in(struct ws_pool *p, const struct ws_entry *e, const char *image,
                   const char *mountpoint)
{
        char fs[PATH_MAX], img[PATH_MAX];
        entry_path(p, e->k, "fs", fs, sizeof(fs));
        entry_path(p, e->k, "ws.img", img, sizeof(img));
        if (rename(img, image) < 0)
                return -errno;
        if ((mkdir(mountpoint, 0700) < 0 && errno != EEXIST) ||
            mount(fs, mountpoint, NULL, MS_MOVE, NULL) < 0) {
                int r = -errno;
                (void)rename(image, img);
                return r;
        }
        return 0;
}

static bool same_size(const struct ws_entry *e, uint64_t disk_mb, uint64_t files)
{
        return e->disk_mb == disk_mb && e->files == files;
}

/* Under the lock: a ready filesystem of this size, unlinked, or NULL. */
static struct ws_entry *take_ready_locked(struct ws_pool *p, uint64_t disk_mb, uint64_t files)
{
        struct ws_entry **pp = &p->ready;
        while (*pp && !same_size(*pp, disk_mb, files))
                pp = &(*pp)->next;
        struct ws_entry *e = *pp;
        if (e) {
                *pp = e->next;
                p->n_ready--;
                wmetrics_workspaces_ready(p->m, p->n_ready);
        }
        return e;
}

/* Under the lock: how many filesystems of this size are on their way to
 * the ready list: being made by the thread, being wiped, or waiting to be
 * (returned ones the thread will not discard). */
static unsigned coming_locked(const struct ws_pool *p, uint64_t disk_mb, uint64_t files)
{
        unsigned n = p->making && p->disk_mb == disk_mb && p->files == files;
        if (p->wiping && !p->wiping->discard && same_size(p->wiping, disk_mb, files))
                n++;
        for (const struct ws_entry *e = p->returned; e; e = e->next)
                if (!e->discard && same_size(e, disk_mb, files))
                        n++;
        return n;
}

/* Under the lock: the jobs that began waiting for this size before w. */
static unsigned waiting_before_locked(const struct ws_waiter *w)
{
        unsigned n = 0;
        for (const struct ws_waiter *o = w->next; o; o = o->next)
                n += o->disk_mb == w->disk_mb && o->files == w->files;
        return n;
}

/* Under the lock: a ready filesystem of this size, waiting for one on its
 * way if there is one that the jobs waiting already will not take (those
 * past that make their own at once: a burst's jobs do not queue behind
 * one mke2fs). */
static struct ws_entry *take_or_wait_locked(struct ws_pool *p, uint64_t disk_mb, uint64_t files)
{
        struct ws_entry *e = take_ready_locked(p, disk_mb, files);
        if (e)
                return e;
        struct ws_waiter me = { .next = p->waiters, .disk_mb = disk_mb, .files = files };
        p->waiters = &me;
        double wait_ms = p->make_ms > COMING_WAIT_MIN_MS ? p->make_ms : COMING_WAIT_MIN_MS;
        struct timespec until = bc_realtime_after_ms((uint64_t)wait_ms);
        int r = 0;
        while (!e && r == 0 && !p->stopping &&
               waiting_before_locked(&me) < coming_locked(p, disk_mb, files)) {
                r = pthread_cond_timedwait(&p->readied, &p->lock, &until);
                e = take_ready_locked(p, disk_mb, files);
        }
        struct ws_waiter **pp = &p->waiters;
        while (*pp != &me)
                pp = &(*pp)->next;
        *pp = me.next;
        return e;
}

int ws_pool_acquire(struct ws_pool *p, const char *image, const char *mountpoint,
                    uint64_t disk_mb, uint64_t files, struct bc_error *err)
{
        struct ws_entry *e = NULL;
        if (p && p->thread_started) {
                pthread_mutex_lock(&p->lock);
                e = take_or_wait_locked(p, disk_mb, files);
                pthread_mutex_unlock(&p->lock);
        }
        bool warm = false;
        if (e) {
                if (move_in(p, e, image, mountpoint) == 0) {
                        warm = true;
                } else {
                        /* Not usable in place: the thread discards it. */
                        pthread_mutex_lock(&p->lock);
                        e->discard = true;
                        e->next = p->returned;
                        p->returned = e;
                        pthread_cond_signal(&p->wake);
                        pthread_mutex_unlock(&p->lock);
                        e = NULL;
                }
        }
        if (!warm) {
                e = calloc(1, sizeof(*e));
                if (!e)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                e->disk_mb = disk_mb;
                e->files = files;
                struct timespec t0;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                int r = make_fs(image, mountpoint, e, err);
                if (r < 0) {
                        free(e);
                        return r;
                }
                if (p) {
                        note_make(p, "cold", since_s(&t0));
                        wmetrics_workspace(p->m, "cold");
                }
        } else {
                wmetrics_workspace(p->m, "taken");
        }
        if (!p) {
                free(e);
        } else {
                pthread_mutex_lock(&p->lock);
                e->next = p->taken;
                p->taken = e;
                p->n_taken++;
                if (p->n_taken > p->peak_cur)
                        p->peak_cur = p->n_taken;
                if (!warm)   /* made on the job's path: a directory for its return */
                        e->k = p->next_k++;
                /* A take may bring the ready count under the target. */
                pthread_cond_signal(&p->wake);
                pthread_mutex_unlock(&p->lock);
        }
        return 0;
}

/* The taken entry of the filesystem mounted at mountpoint, unlinked. */
static struct ws_entry *untake(struct ws_pool *p, const char *mountpoint)
{
        struct stat st;
        if (stat(mountpoint, &st) < 0)
                return NULL;
        pthread_mutex_lock(&p->lock);
        struct ws_entry **pp = &p->taken;
        while (*pp && (*pp)->dev != st.st_dev)
                pp = &(*pp)->next;
        struct ws_entry *e = *pp;
        if (e) {
                *pp = e->next;
                p->n_taken--;
        }
        pthread_mutex_unlock(&p->lock);
        return e;
}

bool ws_pool_release(struct ws_pool *p, const char *image, const char *mountpoint)
{
        if (!p)
                return false;
        struct ws_entry *e = untake(p, mountpoint);
        if (!e)
                return false;
        if (!p->thread_started) {
                free(e);
                return false;
        }
        /* Used little: wipe it; else discard it (both on the thread). */
        struct usage u = { 0 };
        e->discard = fs_usage(mountpoint, &u) < 0 || u.read_only ||
                     u.inodes > e->base_inodes + REUSE_MAX_INODES ||
                     (u.blocks > e->base_blocks &&
                      (u.blocks - e->base_blocks) * e->block_size > REUSE_MAX_BYTES);
        /* Back into its entry's directory: still there when it came from
         * the pool, made now for one made on the job's path. */
        char fs[PATH_MAX], img[PATH_MAX], dir[PATH_MAX];
        entry_path(p, e->k, "fs", fs, sizeof(fs));
        entry_path(p, e->k, "ws.img", img, sizeof(img));
        entry_path(p, e->k, "", dir, sizeof(dir));
        if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || (mkdir(fs, 0700) < 0 && errno != EEXIST) ||
            rename(image, img) < 0) {
                remove_entry_dir(p, e->k);
                free(e);
                wmetrics_workspace(p->m, "discarded");   /* by the caller */
                return false;
        }
        if (mount(mountpoint, fs, NULL, MS_MOVE, NULL) < 0) {
                (void)rename(img, image);
                remove_entry_dir(p, e->k);
                free(e);
                wmetrics_workspace(p->m, "discarded");
                return false;
        }
        pthread_mutex_lock(&p->lock);
        e->next = p->returned;
        p->returned = e;
        pthread_cond_signal(&p->wake);
        pthread_mutex_unlock(&p->lock);
        return true;
}
