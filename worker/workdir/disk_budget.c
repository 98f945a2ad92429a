/* The disk of --work-dir, shared by the jobs' workspaces (see
 * disk_budget.h).  Every figure is in bytes; the arithmetic saturates, so
 * a filesystem fuller than its reserve answers "wait", never wraps. */
#include "worker/workdir/disk_budget.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
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
#include "common/io.h"

/* How often a waiting job looks again: jobs give disk back when they end,
 * which the budget does not hear about from other workers. */
#define RECHECK_MS 50
/* How often a waiting job asks the reclaimer again: what it frees comes
 * back as the caches fill again, but each ask scans them. */
#define RECLAIM_EVERY_MS 1000
#define MIB (UINT64_C(1) << 20)

struct disk_grant {
        struct disk_grant *next;
        char *image;
        uint64_t image_bytes, extra_bytes;
};

/* A job waiting for disk, in order of arrival: only the first may take,
 * or one behind jobs that have no room even with none running. */
struct waiter {
        struct waiter *next;
        bool no_room;
};

struct disk_budget {
        pthread_mutex_t lock;
        char *work_dir;
        int dir;      /* <work-dir>/disk */
        int dir_lock; /* its lock file: asking is one worker at a time */
        int own;      /* this worker's file, held LOCK_SH while it lives */
        char own_name[16];
        uint64_t reserve_bytes;
        int reserve_pct; /* < 0: reserve_bytes */
        struct disk_grant *grants;
        struct waiter *queue;
        _Atomic bool draining; /* waiting jobs go back to the queue */
        uint64_t (*reclaim)(void *ctx, uint64_t bytes);
        void *reclaim_ctx;
};

static bool my_turn(const struct disk_budget *b, const struct waiter *me)
{
        for (const struct waiter *w = b->queue; w != me; w = w->next)
                if (!w->no_room)
                        return false;
        return true;
}

/* What jobs may still write, and what their images hold now. */
struct tally {
        uint64_t left, held;
};

static uint64_t sub0(uint64_t a, uint64_t b)
{
        return a > b ? a - b : 0;
}

/* An image not made yet (or already handed to the pool) counts whole. */
static void own_tally(const struct disk_budget *b, struct tally *t)
{
        *t = (struct tally){ 0 };
        for (const struct disk_grant *g = b->grants; g; g = g->next) {
                struct stat st;
                uint64_t held = 0;
                if (stat(g->image, &st) == 0 && S_ISREG(st.st_mode))
                        held = (uint64_t)st.st_blocks * 512;
                t->held += held;
                t->left += sub0(g->image_bytes, held) + g->extra_bytes;
        }
}

/* The other live workers' files; a file nobody holds is a dead worker's. */
static void others_tally(const struct disk_budget *b, struct tally *t)
{
        *t = (struct tally){ 0 };
        int fd = dup(b->dir);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        rewinddir(d);
        for (struct dirent *e; (e = readdir(d));) {
                if (strncmp(e->d_name, "w.", 2) != 0 || strcmp(e->d_name, b->own_name) == 0)
                        continue;
                _cleanup_fd_ int f = openat(b->dir, e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (f < 0)
                        continue;
                if (flock(f, LOCK_EX | LOCK_NB) == 0) {
                        unlinkat(b->dir, e->d_name, 0);
                        continue;
                }
                char buf[64];
                ssize_t n = pread(f, buf, sizeof(buf) - 1, 0);
                uint64_t left = 0, held = 0;
                if (n > 0) {
                        buf[n] = '\0';
                        if (sscanf(buf, "%" SCNu64 " %" SCNu64, &left, &held) == 2) {
                                t->left += left;
                                t->held += held;
                        }
                }
        }
        closedir(d);
}

static void publish(const struct disk_budget *b, const struct tally *own)
{
        char s[64];
        int n = snprintf(s, sizeof(s), "%" PRIu64 " %" PRIu64 "\n", own->left, own->held);
        if (pwrite(b->own, s, (size_t)n, 0) == n)
                (void)!ftruncate(b->own, n);
}

/* After this worker's grants changed; with b->lock held. */
static void republish(const struct disk_budget *b)
{
        struct tally own;
        own_tally(b, &own);
        flock(b->dir_lock, LOCK_EX);
        publish(b, &own);
        flock(b->dir_lock, LOCK_UN);
}

static unsigned long long mib(uint64_t bytes)
{
        return (unsigned long long)((bytes + MIB - 1) / MIB);
}

/* NO_ROOM: it would not fit even if no job ran, because of other files
 * (or a finished job's image still on its way out): it waits too, but
 * lets the jobs behind it try, and fails when the wait is over. */
enum answer { TAKEN, WAIT, NO_ROOM, NEVER };

static const char *twice(const struct disk_ask *ask)
{
        return ask->extra_bytes ? ", twice for the artifact's packed tree" : "";
}

/* The filesystem's free space, total and reserve; with b->lock held. */
static int space(const struct disk_budget *b, uint64_t *avail, uint64_t *total, uint64_t *reserve)
{
        struct statvfs sv;
        if (statvfs(b->work_dir, &sv) < 0)
                return -errno;
        *avail = (uint64_t)sv.f_bavail * sv.f_frsize;
        *total = (uint64_t)sv.f_blocks * sv.f_frsize;
        *reserve = b->reserve_pct < 0 ? b->reserve_bytes : *total / 100 * (unsigned)b->reserve_pct;
        return 0;
}

/* Everything an answer needs; with b->lock and the directory's lock held. */
struct view {
        uint64_t avail, total, reserve;
        struct tally own, others;
};

static int look(const struct disk_budget *b, struct view *v)
{
        own_tally(b, &v->own);
        others_tally(b, &v->others);
        return space(b, &v->avail, &v->total, &v->reserve);
}

int disk_budget_room(struct disk_budget *b, uint64_t *ret_room, uint64_t *ret_avail,
                     uint64_t *ret_reserve)
{
        struct view v = { 0 };
        pthread_mutex_lock(&b->lock);
        flock(b->dir_lock, LOCK_EX);
        int r = look(b, &v);
        flock(b->dir_lock, LOCK_UN);
        pthread_mutex_unlock(&b->lock);
        *ret_avail = v.avail;
        *ret_reserve = v.reserve;
        *ret_room = sub0(sub0(v.avail, v.reserve), v.own.left + v.others.left);
        return r;
}

/* Called with b->lock and the directory's lock held.  On WAIT and
 * NO_ROOM, *lacking is the free space the job would need to start now. */
static enum answer try_take(struct disk_budget *b, const struct disk_ask *ask,
                            struct disk_grant **ret, uint64_t *lacking, char *why, size_t why_len,
                            struct bc_error *err)
{
        struct view v;
        int r = look(b, &v);
        if (r < 0) {
                bc_error_set(err, BC_SANDBOX_SETUP, -r, "statvfs %s: %s", b->work_dir,
                             strerror(-r));
                return NEVER;
        }
        uint64_t avail = v.avail, total = v.total, reserve = v.reserve;
        struct tally own = v.own, others = v.others;
        uint64_t need = ask->image_bytes + ask->extra_bytes;
        uint64_t held = own.held + others.held;
        uint64_t room = sub0(avail + held, reserve);
        uint64_t committed = own.left + others.left;
        *lacking = sub0(committed + need, sub0(avail, reserve));
        if (need > sub0(total, reserve)) {
                bc_error_set(err, BC_SANDBOX_SETUP, ENOSPC,
                             "the job's limits need %llu MiB of disk (limits.disk_mb%s), and "
                             "--work-dir %s is on a filesystem of %llu MiB, %llu MiB of which "
                             "--disk-reserve keeps free",
                             mib(need), twice(ask), b->work_dir, mib(total), mib(reserve));
                return NEVER;
        }
        if (need > room) {
                /* Maybe for a moment: a finished job's image may still be
                 * on its way out (unmounted, its loop device detaching). */
                bc_error_set(err, BC_SANDBOX_SETUP, ENOSPC,
                             "the job's limits need %llu MiB of disk (limits.disk_mb%s), and "
                             "--work-dir %s is on a filesystem with room for at most %llu MiB "
                             "of jobs even with none running (%llu MiB free, %llu MiB held by "
                             "running jobs, %llu MiB kept free by --disk-reserve)",
                             mib(need), twice(ask), b->work_dir, mib(room), mib(avail), mib(held),
                             mib(reserve));
                snprintf(why, why_len, "%s", bc_error_message(err));
                return NO_ROOM;
        }
        if (*lacking) {
                snprintf(
                        why, why_len,
                        "the job's limits need %llu MiB of disk; %llu MiB are free, running jobs "
                        "may still write %llu MiB of them and %llu MiB stay free (--disk-reserve)",
                        mib(need), mib(avail), mib(committed), mib(reserve));
                return WAIT;
        }
        struct disk_grant *g = calloc(1, sizeof(*g));
        if (!g || !(g->image = strdup(ask->image))) {
                free(g);
                bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                return NEVER;
        }
        g->image_bytes = ask->image_bytes;
        g->extra_bytes = ask->extra_bytes;
        g->next = b->grants;
        b->grants = g;
        own.left += need;
        publish(b, &own);
        *ret = g;
        return TAKEN;
}

int disk_budget_take(struct disk_budget *b, const struct disk_ask *ask, int cancel_fd,
                     const _Atomic int *stop, unsigned wait_ms,
                     void (*on_wait)(void *ctx, const char *why), void *ctx,
                     struct disk_grant **ret, struct bc_error *err)
{
        *ret = NULL;
        uint64_t deadline = bc_mono_ms() + wait_ms, next_reclaim = 0;
        bool told = false;
        int r;
        /* Queued from the start, under the lock: jobs that arrive together
         * take in turn on the lock; the queue only orders those that wait. */
        struct waiter me = { 0 };
        pthread_mutex_lock(&b->lock);
        struct waiter **tail = &b->queue;
        while (*tail)
                tail = &(*tail)->next;
        *tail = &me;
        for (;;) {
                if (*stop) {
                        r = -ECANCELED;
                        break;
                }
                char why[512];
                enum answer a = WAIT;
                uint64_t lacking = 0;
                if (my_turn(b, &me)) {
                        flock(b->dir_lock, LOCK_EX);
                        a = try_take(b, ask, ret, &lacking, why, sizeof(why), err);
                        flock(b->dir_lock, LOCK_UN);
                        me.no_room = a == NO_ROOM;
                } else {
                        snprintf(why, sizeof(why),
                                 "the job's limits need %llu MiB of disk; it waits behind an "
                                 "earlier job of this worker that waits for disk",
                                 mib(ask->image_bytes + ask->extra_bytes));
                }
                if (a == TAKEN) {
                        bc_error_clear(err); /* an earlier NO_ROOM's */
                        r = 0;
                        break;
                }
                if (a == NEVER) {
                        r = -ENOSPC;
                        break;
                }
                if (a != NO_ROOM)
                        bc_error_clear(err);
                if (lacking && b->reclaim && bc_mono_ms() >= next_reclaim) {
                        next_reclaim = bc_mono_ms() + RECLAIM_EVERY_MS;
                        pthread_mutex_unlock(&b->lock);
                        uint64_t freed = b->reclaim(b->reclaim_ctx, lacking);
                        pthread_mutex_lock(&b->lock);
                        if (freed)
                                continue; /* look again before waiting */
                }
                if (b->draining) {
                        r = -ESHUTDOWN;
                        break;
                }
                if (bc_mono_ms() >= deadline) {
                        r = a == NO_ROOM ? -ENOSPC : -EAGAIN;
                        break;
                }
                pthread_mutex_unlock(&b->lock);
                if (!told && on_wait) {
                        on_wait(ctx, why);
                        told = true;
                }
                struct pollfd p = { .fd = cancel_fd, .events = POLLIN };
                poll(&p, cancel_fd >= 0 ? 1 : 0, RECHECK_MS);
                pthread_mutex_lock(&b->lock);
        }
        struct waiter **w = &b->queue;
        while (*w != &me)
                w = &(*w)->next;
        *w = me.next;
        pthread_mutex_unlock(&b->lock);
        return r;
}

void disk_budget_set_reclaim(struct disk_budget *b, uint64_t (*reclaim)(void *ctx, uint64_t bytes),
                             void *ctx)
{
        pthread_mutex_lock(&b->lock);
        b->reclaim = reclaim;
        b->reclaim_ctx = ctx;
        pthread_mutex_unlock(&b->lock);
}

void disk_budget_add(struct disk_budget *b, struct disk_grant *g, uint64_t extra_bytes)
{
        if (!b || !g)
                return;
        pthread_mutex_lock(&b->lock);
        g->extra_bytes += extra_bytes;
        republish(b);
        pthread_mutex_unlock(&b->lock);
}

void disk_budget_drain(struct disk_budget *b)
{
        if (b)
                b->draining = true;
}

void disk_budget_give_back(struct disk_budget *b, struct disk_grant *g)
{
        if (!b || !g)
                return;
        pthread_mutex_lock(&b->lock);
        for (struct disk_grant **p = &b->grants; *p; p = &(*p)->next)
                if (*p == g) {
                        *p = g->next;
                        break;
                }
        republish(b);
        pthread_mutex_unlock(&b->lock);
        free(g->image);
        free(g);
}

int disk_budget_open(struct disk_budget **ret, const char *work_dir, uint64_t reserve_bytes,
                     int reserve_pct, struct bc_error *err)
{
        *ret = NULL;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/disk", work_dir) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        int r = bc_mkdir_p(path, 0700, err);
        if (r < 0)
                return r;
        struct disk_budget *b = calloc(1, sizeof(*b));
        if (!b || !(b->work_dir = strdup(work_dir))) {
                free(b);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        pthread_mutex_init(&b->lock, NULL);
        b->dir = b->dir_lock = b->own = -1;
        b->reserve_bytes = reserve_bytes;
        b->reserve_pct = reserve_pct;
        b->dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        b->dir_lock = b->dir < 0 ? -1
                                 : openat(b->dir, "lock",
                                          O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (b->dir_lock < 0) {
                r = bc_error_set(err, BC_CONFIG, errno, "%s/lock: %m", path);
                disk_budget_close(b);
                return r;
        }
        /* Made and locked under the directory's lock: another worker's scan
         * must never find it unheld and take it for a dead worker's. */
        flock(b->dir_lock, LOCK_EX);
        for (int tries = 0; b->own < 0 && tries < 100; tries++) {
                snprintf(b->own_name, sizeof(b->own_name), "w.%08x",
                         (unsigned)(bc_mono_ms() * 2654435761u) ^ (unsigned)getpid() ^
                                 (unsigned)tries);
                b->own = openat(b->dir, b->own_name,
                                O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (b->own < 0 && errno != EEXIST)
                        break;
        }
        int e = errno;
        if (b->own >= 0)
                flock(b->own, LOCK_SH);
        flock(b->dir_lock, LOCK_UN);
        if (b->own < 0) {
                r = bc_error_set(err, BC_CONFIG, e, "%s: cannot make this worker's file: %s", path,
                                 strerror(e));
                disk_budget_close(b);
                return r;
        }
        struct tally none = { 0 };
        publish(b, &none);
        *ret = b;
        return 0;
}

void disk_budget_close(struct disk_budget *b)
{
        if (!b)
                return;
        while (b->grants) {
                struct disk_grant *g = b->grants;
                b->grants = g->next;
                free(g->image);
                free(g);
        }
        if (b->own >= 0) {
                unlinkat(b->dir, b->own_name, 0);
                close(b->own);
        }
        if (b->dir_lock >= 0)
                close(b->dir_lock);
        if (b->dir >= 0)
                close(b->dir);
        pthread_mutex_destroy(&b->lock);
        free(b->work_dir);
        free(b);
}
