/* Wiping a used workspace filesystem so that a later job may have it (see
 * ws_pool.c for why that is safe): everything the job could reach is
 * removed, and the filesystem is checked to be back to its state when it
 * was made. */
#ifndef BC_WORKER_WORKDIR_WS_WIPE_H
#define BC_WORKER_WORKDIR_WS_WIPE_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Removes fs/ws and fs/scratch with all they hold (never following a
 * symlink, never entering another filesystem than dev, at most
 * WS_WIPE_MAX_DEPTH levels) and makes them anew, 0755: ws empty, scratch
 * with its tmp and shm (ws_make_scratch_subdirs).  Returns 0
 * when the filesystem mounted at fs is dev, holds only lost+found, ws and
 * scratch at its root, is writable, and uses exactly base_inodes inodes
 * and about base_blocks blocks again (waiting up to 200 ms for the
 * counts: a dead sandbox's mounts may hold the old directories a moment
 * longer); negative errno otherwise (the caller discards it then). */
int ws_wipe(const char *fs, dev_t dev, uint64_t base_inodes, uint64_t base_blocks);

/* Makes scratch/tmp and scratch/shm, 01777, under the workspace
 * filesystem's root (the fd root): what a sandbox binds at /tmp and
 * /dev/shm.  Made with the filesystem and at each wipe, off the job's
 * path; a sandbox given a scratch without them makes them itself at the
 * handoff (six calls of it).  0 or a negative errno. */
int ws_make_scratch_subdirs(int root);

/* For ws_wipe_dir: given an entry of the directory (its statx, with the
 * fields asked for), 1 to keep it (a directory is emptied), 0 to remove
 * it, a negative errno to stop there with it. */
typedef int (*ws_wipe_keep)(void *ctx, const char *name, const struct statx *st);

/* Removes what is under the directory dfd (which stays open), but for the
 * entries of dfd itself that keep says to keep (mask: the statx fields it
 * needs besides the type): never following a symlink, never entering a
 * mount (another device than dev, or a mount's root on dev), at most
 * WS_WIPE_MAX_DEPTH levels.  Returns 0 or a negative errno (-EXDEV: a
 * mount is in the way). */
int ws_wipe_dir(int dfd, dev_t dev, unsigned mask, ws_wipe_keep keep, void *ctx);

#define WS_WIPE_MAX_DEPTH 128

#endif
