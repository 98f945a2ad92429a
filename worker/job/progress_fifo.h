/* A job's progress channel: a FIFO in a directory of the worker's that
 * the job sees read-only (its meta directory, at /run/boxcar in a
 * sandbox, cold, warm or a session's), named to the job by
 * BOXCAR_PROGRESS.  The same in the three paths: the job opens a path;
 * no fd has to travel through boxcar-sandbox, the warm handoff or the
 * session's agent.
 *
 * Why it cannot hurt the worker or reach the host:
 *  - the directory is read-only to the job: it can open the FIFO (a FIFO
 *    is writable on a read-only mount) but create, replace or remove
 *    nothing; the FIFO leads only to this worker's reader;
 *  - the worker opens the read end non-blocking and keeps a write end of
 *    its own, so a job that opens, writes and closes again and again
 *    never makes it see an end, and a reader never waits on the job;
 *  - it is read on the job's timer ticks (at least every 200 ms, at most
 *    PROGRESS_FIFO_READ_MAX bytes a tick), and what is read is checked
 *    line by line with a cap (progress.h), never buffered whole;
 *  - the job's write never waits long: the pipe holds 64 KiB; when it is
 *    full (a job writing faster than the worker drains it), a blocking
 *    write waits for the next tick and an O_NONBLOCK one fails with
 *    EAGAIN; once the job has ended, the channel is closed and removed,
 *    and what is still writing to it gets EPIPE (SIGPIPE), what opens the
 *    path again ENOENT. */
#ifndef BC_WORKER_JOB_PROGRESS_FIFO_H
#define BC_WORKER_JOB_PROGRESS_FIFO_H

#include <stdint.h>

#include "common/error.h"
#include "worker/job/progress.h"

/* Read per tick at most: a job that writes without end costs the worker
 * this much copying per tick, no more. */
#define PROGRESS_FIFO_READ_MAX (1024 * 1024)

struct progress_fifo {
        int rfd, wfd; /* -1: closed */
        char *path;   /* the FIFO's host path, removed at close */
        struct progress p;
};

/* Makes the FIFO dir/name (an old one of that name is replaced; one made
 * ahead, worker/workdir/dir_bin.h, is taken) and opens it; p
 * (progress_init'ed by the caller into ret->p afterwards) gets what is
 * read.  Fills *ret (rfd, wfd -1 first) in every case: close it with
 * progress_fifo_close. */
int progress_fifo_open(const char *dir, const char *name, struct progress_fifo *ret,
                       struct bc_error *err);
/* Reads what the job wrote so far (bounded) into f->p, and ticks it. */
void progress_fifo_poll(struct progress_fifo *f, uint64_t now_ms);
/* The job ended: a last read, progress_finish, and the FIFO closed and
 * removed.  Safe on a closed or never opened one. */
void progress_fifo_close(struct progress_fifo *f, uint64_t now_ms);

#endif
