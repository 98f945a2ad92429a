/* The disk of --work-dir, shared by the jobs' workspaces.
 *
 * A workspace image is sparse: it takes host disk as its job writes, up
 * to limits.disk_mb, and an artifact job's packed tree takes about as
 * much again before its upload.  Jobs whose limits add up to more than
 * the filesystem's free space could fill it, and with it the host's
 * (PostgreSQL's WAL, logs, other programs).  So a job starts only when
 * what every running job may still write (its limits minus what its
 * image already holds) and its own limits fit in the free space above a
 * reserve (--disk-reserve).  A job that does not fit waits for running
 * ones to give their disk back, in order of arrival; one that could not
 * fit even with no job running fails (at once when the filesystem is too
 * small, after the wait when other files fill it).
 *
 * Workers that share a --work-dir share the budget: each writes what its
 * jobs may still write to <work-dir>/disk/w.XXXXXX, which it holds locked
 * while it lives (a dead worker's file is ignored and removed), and asks
 * under <work-dir>/disk/lock.  Workers on the same filesystem with
 * different work dirs each count only their own jobs. */
#ifndef BC_WORKER_WORKDIR_DISK_BUDGET_H
#define BC_WORKER_WORKDIR_DISK_BUDGET_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/error.h"

struct disk_budget;
struct disk_grant;

/* What a job asks for: its image (which may not exist yet) of
 * image_bytes, and extra_bytes it may write beside it (a packed tree). */
struct disk_ask {
        const char *image;
        uint64_t image_bytes, extra_bytes;
};

/* reserve_pct percent of the filesystem, or reserve_bytes when
 * reserve_pct < 0, stays free of jobs. */
int disk_budget_open(struct disk_budget **ret, const char *work_dir, uint64_t reserve_bytes,
                     int reserve_pct, struct bc_error *err);
void disk_budget_close(struct disk_budget *b);

/* Where disk can be found when a job does not fit: reclaim(ctx, bytes)
 * gives back what it can of `bytes` (the worker's caches evict entries no
 * job holds) and returns what it freed.  Called without the budget's
 * lock, by the first job waiting, when it starts to wait and then at
 * most once a second. */
void disk_budget_set_reclaim(struct disk_budget *b, uint64_t (*reclaim)(void *ctx, uint64_t bytes),
                             void *ctx);

/* What a job could take now (*ret_room), of *ret_avail free, with
 * *ret_reserve kept free.  0, or -errno when the filesystem cannot be
 * read. */
int disk_budget_room(struct disk_budget *b, uint64_t *ret_room, uint64_t *ret_avail,
                     uint64_t *ret_reserve);

/* Takes what ask needs, waiting up to wait_ms for running jobs to give
 * disk back while *stop stays 0 (cancel_fd becomes readable when it
 * changes), after asking the reclaimer for the disk it lacks.
 * on_wait(ctx, why) is called once if it has to wait.  0 with
 * *ret set; -EAGAIN after wait_ms; -ECANCELED when stopped; -ESHUTDOWN
 * when the worker drains (disk_budget_drain) and it would have to wait;
 * or -ENOSPC with BC_SANDBOX_SETUP in err: at once when it is larger than
 * the filesystem above its reserve, after wait_ms when it still would not
 * fit with no job running (other files fill the filesystem). */
int disk_budget_take(struct disk_budget *b, const struct disk_ask *ask, int cancel_fd,
                     const _Atomic int *stop, unsigned wait_ms,
                     void (*on_wait)(void *ctx, const char *why), void *ctx,
                     struct disk_grant **ret, struct bc_error *err);

/* What a job already started may write besides, once known: an artifact
 * job over an overlay packs its base with its changes.  Counted at once,
 * without waiting (the job holds its slot and its image). */
void disk_budget_add(struct disk_budget *b, struct disk_grant *g, uint64_t extra_bytes);

/* The worker is draining: jobs that wait for disk stop waiting.
 * NULL-safe. */
void disk_budget_drain(struct disk_budget *b);

/* Once the job's image and packed tree are gone.  NULL-safe. */
void disk_budget_give_back(struct disk_budget *b, struct disk_grant *g);

#endif
