/* Job directories kept for the next job instead of removed: a finished
 * job's directory is emptied back to what a new one holds (its lock file
 * and its empty workspace, fs and meta directories) and renamed into the
 * next job's place, so that no inode is made on the pickup path nor freed
 * after the job.  On ext4 without a journal every inode allocation skips
 * the inodes freed in the last minutes (they may not be reused yet), so
 * making and removing directories per job grows slower with the job rate.
 *
 * A kept directory stays under --work-dir/jobs as free-<pid>-<n>, its lock
 * held by the worker all along: another worker's start-up cleanup leaves
 * it alone, and after the worker dies it is an unlocked leftover that the
 * next start removes like any other. */
#ifndef BC_WORKER_WORKDIR_DIR_BIN_H
#define BC_WORKER_WORKDIR_DIR_BIN_H

#include <stdbool.h>

/* A job directory's meta directory, and in it the progress channel's
 * FIFO (worker/job/progress_fifo.h): a kept directory gets a fresh one
 * made ahead, so that its next job's pickup makes no inode for it. */
#define JOB_DIR_META "meta"
#define JOB_DIR_PROGRESS "progress"
/* The FIFO's mode until it is opened for a job (which makes it writable
 * for the job's user): one of this mode, ours, is taken as made ahead. */
#define JOB_DIR_PROGRESS_MODE 0600

struct dir_bin;

/* A bin of up to cap directories under work_dir/jobs; NULL when cap is 0
 * or memory is short (then every directory is made and removed). */
struct dir_bin *dir_bin_new(const char *work_dir, unsigned cap);

/* Removes every kept directory.  NULL-safe. */
void dir_bin_free(struct dir_bin *b);

/* Renames a kept directory to path (which must not exist) and returns its
 * lock, held; -1 when there is none (or b is NULL): make a new one. */
int dir_bin_take(struct dir_bin *b, const char *path);

/* After the job, nothing mounted under path any more: empties path back
 * to a new job directory's state and keeps it, lock (held) included,
 * with a new progress FIFO in its meta directory.
 * Returns false, having changed nothing the caller's removal would not,
 * when the bin is full or b NULL, or anything there is not what a job
 * directory holds (a mount, a foreign owner or mode, a special file): the
 * caller removes path and closes lock as before. */
bool dir_bin_keep(struct dir_bin *b, const char *path, int lock);

#endif
