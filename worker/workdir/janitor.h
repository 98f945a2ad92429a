/* Work that follows a job but is not part of its result: unmounting its
 * workspace and overlay, releasing cache entries, giving the filesystem
 * back to the pool.  The slot records the result and is free at once; a
 * thread of the worker does this afterwards, in the order given. */
#ifndef BC_WORKER_WORKDIR_JANITOR_H
#define BC_WORKER_WORKDIR_JANITOR_H

/* Runs fn(arg) on the janitor's thread, or right here when that thread
 * cannot be had (so it always runs, exactly once). */
void janitor_run_later(void (*fn)(void *arg), void *arg);

/* Waits until everything handed over so far has run.  For the worker's
 * stop: before the workspace pool and the caches go. */
void janitor_drain(void);

#endif
