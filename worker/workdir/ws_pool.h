/* Ready workspace filesystems (issue 11/12): a pool of formatted, mounted
 * job filesystems (see sandbox_workspace_make) of the worker's default
 * size, made by a background thread, so that a job's pickup path costs a
 * mount move instead of mke2fs + loop + mount (~16 ms).  A job's
 * filesystem that was used little is wiped on that thread and made ready
 * again; any other is unmounted and deleted there, off the slot's path.
 *
 * Layout: <work-dir>/pool/<pid>/lock (held while the worker lives) and
 * <work-dir>/pool/<pid>/<k>/{ws.img,fs/} per filesystem, fs/ws and
 * fs/scratch made.  All mounts live in the worker's private mount
 * namespace (sandbox_workspace_private_mounts): a killed worker leaves
 * files only, which ws_pool_cleanup() removes at the next start. */
#ifndef BC_WORKER_WORKDIR_WS_POOL_H
#define BC_WORKER_WORKDIR_WS_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

struct metrics;
struct ws_pool;

/* Filesystems kept ready beyond those in use, once demand is known. */
#define WS_POOL_PREFETCH 2

struct ws_pool_options {
        const char *work_dir;
        unsigned max_ready;      /* --warm-workspaces: at most this many ready */
        unsigned concurrency;    /* the first minute keeps this + prefetch ready */
        uint64_t disk_mb, files; /* the size the pool makes (the spec defaults) */
        struct metrics *metrics; /* or NULL */
};

/* Starts the pool's thread (signals must be blocked in the caller).  With
 * o->max_ready 0 the pool has no thread and keeps nothing ready: every
 * workspace is made when its job starts (and counted as cold). */
int ws_pool_start(struct ws_pool **ret, const struct ws_pool_options *o, struct bc_error *err);

/* Stops the thread and unmounts and deletes every filesystem it holds.
 * NULL-safe.  Filesystems still taken by jobs are theirs to release. */
void ws_pool_stop(struct ws_pool *p);

/* At worker start: removes what a killed worker's pool left under
 * work_dir/pool (directories whose lock no live process holds). */
void ws_pool_cleanup(const char *work_dir);

/* Puts a workspace filesystem of exactly (disk_mb, files) at mountpoint,
 * its image at image, with mountpoint/ws and mountpoint/scratch made: a
 * ready one moved into place when the pool has one, else
 * a new one made now.  p may be NULL (always made now). */
int ws_pool_acquire(struct ws_pool *p, const char *image, const char *mountpoint, uint64_t disk_mb,
                    uint64_t files, struct bc_error *err);

/* After the job (no process of its sandbox left): takes the filesystem at
 * mountpoint (image at image) away from the job directory, to be wiped
 * and made ready again or discarded by the pool's thread.  When it cannot
 * (p NULL, not one of the pool's, a failure), it leaves it where it is for
 * the caller's usual unmount and removal, and returns false. */
bool ws_pool_release(struct ws_pool *p, const char *image, const char *mountpoint);

#endif
