/* Ready workspace filesystems (ws_pool.h): the pool's thread, which makes
 * them, wipes or discards those jobs give back, and keeps as many ready
 * as demand asks; and the pool's start and stop.  What a job's path calls
 * (ws_pool_acquire, ws_pool_release) is ws_pool_take.c.
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
#include "worker/workdir/ws_pool-internal.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

/* Demand is the most filesystems in use at once over the last one or two
 * windows; the pool shrinks to the prefetch after two idle windows. */
#define DEMAND_WINDOW_MS 60000
/* After a failed make, the thread waits this long before the next one. */
#define MAKE_BACKOFF_MS 5000

double wsp_since_s(const struct timespec *t0)
{
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

void wsp_entry_path(const struct ws_pool *p, unsigned k, const char *leaf, char *buf, size_t n)
{
        snprintf(buf, n, "%s/%u%s%s", p->dir, k, *leaf ? "/" : "", leaf);
}

void wsp_remove_entry_dir(const struct ws_pool *p, unsigned k)
{
        char fs[PATH_MAX], dir[PATH_MAX];
        wsp_entry_path(p, k, "fs", fs, sizeof(fs));
        wsp_entry_path(p, k, "", dir, sizeof(dir));
        rmdir(fs);
        rmdir(dir);
}

int wsp_fs_usage(const char *path, struct usage *ret)
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

int wsp_make_fs(const char *image, const char *mountpoint, struct ws_entry *e,
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
        _cleanup_fd_ int root = open(mountpoint, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        r = root < 0 ? -errno : ws_make_scratch_subdirs(root);
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "create %s/tmp and shm: %s", sc,
                                    strerror(-r));
        r = wsp_fs_usage(mountpoint, &u);
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
        wsp_entry_path(p, e->k, "fs", fs, sizeof(fs));
        wsp_entry_path(p, e->k, "ws.img", img, sizeof(img));
        struct bc_error err = BC_ERROR_INIT;
        if (sandbox_workspace_unmount(fs, &err) < 0)
                log_event(LOG_WARN, "workspace.discard_failed", "path", fs, "error",
                          bc_error_message(&err), NULL);
        bc_error_clear(&err);
        unlink(img);
        wsp_remove_entry_dir(p, e->k);
        wmetrics_workspace(p->m, "discarded");
        free(e);
}

/* See ws_wipe.h: the filesystem back to what it was when made. */
static int wipe(struct ws_pool *p, const struct ws_entry *e)
{
        char fs[PATH_MAX];
        wsp_entry_path(p, e->k, "fs", fs, sizeof(fs));
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

void wsp_note_make(struct ws_pool *p, const char *how, double seconds)
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
        wsp_entry_path(p, k, "", dir, sizeof(dir));
        wsp_entry_path(p, k, "fs", fs, sizeof(fs));
        wsp_entry_path(p, k, "ws.img", img, sizeof(img));
        struct bc_error err = BC_ERROR_INIT;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int r = mkdir(dir, 0700) < 0
                        ? bc_error_set(&err, BC_SANDBOX_SETUP, errno, "create %s: %m", dir)
                        : wsp_make_fs(img, fs, e, &err);
        if (r >= 0) {
                wsp_note_make(p, "pool", wsp_since_s(&t0));
                wmetrics_workspace(p->m, "made");
                return e;
        }
        log_event(LOG_WARN, "workspace.pool_make_failed", "error", bc_error_message(&err),
                  LOG_INT("retry_ms", MAKE_BACKOFF_MS), NULL);
        bc_error_clear(&err);
        (void)sandbox_workspace_unmount(fs, &err);
        bc_error_clear(&err);
        unlink(img);
        wsp_remove_entry_dir(p, k);
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
        if (r < 0) { /* something still holds what the job made: see ws_wipe */
                char fs[PATH_MAX];
                wsp_entry_path(p, e->k, "fs", fs, sizeof(fs));
                log_event(LOG_WARN, "workspace.wipe_failed", "path", fs, "error", strerror(-r),
                          "action", "discarded", NULL);
        }
        if (reuse) {
                wmetrics_workspace_wipe(p->m, wsp_since_s(&t0));
                wmetrics_workspace(p->m, "reused");
        }
        pthread_mutex_lock(&p->lock);
        p->wiping = NULL;
        if (reuse)
                push_ready_locked(p, e);
        else /* a job waiting for it stops waiting */
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
        *ret = p; /* ws_pool_stop undoes any part of what follows */
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
        pthread_cond_broadcast(&p->readied); /* a job waiting for one makes its own */
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
