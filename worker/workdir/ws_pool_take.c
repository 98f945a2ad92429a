/* What a job's path calls of the workspace pool (ws_pool.h): a ready
 * filesystem taken, or one on its way waited for a moment, else one made
 * now; and the filesystem given back after the job, for the pool's thread
 * (ws_pool.c) to wipe or discard.
 *
 * Handing one to a job is a mount move (MS_MOVE of <pool>/<k>/fs onto the
 * job's <dir>/fs) and a rename of its image, both O(1).  A move rather
 * than pointing the job directory at the pool entry: the job directory then
 * looks exactly like a cold one (<dir>/ws.img, <dir>/fs/{ws,scratch}), so
 * the sandbox backend, the crash cleanup of job directories (which
 * unmounts whatever is under a job's directory) and the tests see one
 * layout, and nothing of the job's path leads into the pool. */
#include "worker/workdir/ws_pool-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/deadline.h"
#include "worker/metrics/wmetrics.h"

/* A filesystem is reused only when its job left at most this much beyond
 * what it had when made (measured by statvfs, so sparse files and hard
 * links count what they allocate).  Inodes: removing each costs, and
 * beyond a few thousand the wipe costs more than mke2fs.  Bytes: freeing
 * blocks is cheap, but blocks already written back stay allocated in the
 * sparse image (no discard), so a reused filesystem would hold the host
 * disk its last job used while it waits; discarding gives that back. */
#define REUSE_MAX_INODES 2000
#define REUSE_MAX_BYTES (64ull << 20)
/* A job that finds none ready while one of its size is coming (being
 * wiped, waiting to be, or being made by the thread) waits for it as long
 * as making one on its own path would take: the mean of the makes so far,
 * at least this.  A wipe takes a fraction of a millisecond to a few (it
 * may wait for a dead sandbox's mounts, see ws_wipe.h) and a make 15-40 ms
 * when the host is idle, both several times that under load. */
#define COMING_WAIT_MIN_MS 10

/* Moves a ready filesystem into the job's place: its image renamed (same
 * filesystem: the work dir), its mount moved.  On failure everything is
 * back in the pool's directory.  The emptied entry directory stays for
 * the filesystem's return. */
static int move_in(struct ws_pool *p, const struct ws_entry *e, const char *image,
                   const char *mountpoint)
{
        char fs[PATH_MAX], img[PATH_MAX];
        wsp_entry_path(p, e->k, "fs", fs, sizeof(fs));
        wsp_entry_path(p, e->k, "ws.img", img, sizeof(img));
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
        /* cppcheck-suppress autoVariables ; me is unlinked before this function returns */
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

int ws_pool_acquire(struct ws_pool *p, const char *image, const char *mountpoint, uint64_t disk_mb,
                    uint64_t files, struct bc_error *err)
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
                int r = wsp_make_fs(image, mountpoint, e, err);
                if (r < 0) {
                        free(e);
                        return r;
                }
                if (p) {
                        wsp_note_make(p, "cold", wsp_since_s(&t0));
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
                if (!warm) /* made on the job's path: a directory for its return */
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
        e->discard = wsp_fs_usage(mountpoint, &u) < 0 || u.read_only ||
                     u.inodes > e->base_inodes + REUSE_MAX_INODES ||
                     (u.blocks > e->base_blocks &&
                      (u.blocks - e->base_blocks) * e->block_size > REUSE_MAX_BYTES);
        /* Back into its entry's directory: still there when it came from
         * the pool, made now for one made on the job's path. */
        char fs[PATH_MAX], img[PATH_MAX], dir[PATH_MAX];
        wsp_entry_path(p, e->k, "fs", fs, sizeof(fs));
        wsp_entry_path(p, e->k, "ws.img", img, sizeof(img));
        wsp_entry_path(p, e->k, "", dir, sizeof(dir));
        if ((mkdir(dir, 0700) < 0 && errno != EEXIST) ||
            (mkdir(fs, 0700) < 0 && errno != EEXIST) || rename(image, img) < 0) {
                wsp_remove_entry_dir(p, e->k);
                free(e);
                wmetrics_workspace(p->m, "discarded"); /* by the caller */
                return false;
        }
        if (mount(mountpoint, fs, NULL, MS_MOVE, NULL) < 0) {
                (void)rename(img, image);
                wsp_remove_entry_dir(p, e->k);
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
