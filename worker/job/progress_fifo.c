/* The progress channel's FIFO (progress_fifo.h). */
#include "worker/job/progress_fifo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/workdir/dir_bin.h"

/* A FIFO made ahead at path (in a kept job directory, dir_bin.h): ours,
 * one link, still JOB_DIR_PROGRESS_MODE, which a FIFO a job had is not
 * (opened, it is made writable for the job's user below). */
static bool made_ahead_fifo(const char *path, struct stat *st)
{
        return lstat(path, st) == 0 && S_ISFIFO(st->st_mode) && st->st_uid == geteuid() &&
               st->st_nlink == 1 && (st->st_mode & 07777) == JOB_DIR_PROGRESS_MODE;
}

int progress_fifo_open(const char *dir, const char *name, struct progress_fifo *ret,
                       struct bc_error *err)
{
        ret->rfd = ret->wfd = -1;
        ret->path = NULL;
        if (asprintf(&ret->path, "%s/%s", dir, name) < 0) {
                ret->path = NULL;
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        }
        struct stat ahead;
        bool made_ahead = made_ahead_fifo(ret->path, &ahead);
        if (!made_ahead && unlink(ret->path) < 0 && errno != ENOENT)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "remove %s: %m", ret->path);
        if (!made_ahead && mkfifo(ret->path, JOB_DIR_PROGRESS_MODE) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "mkfifo %s: %m", ret->path);
        /* O_NONBLOCK: the read end opens without a writer, and reads never
         * wait.  O_NOFOLLOW, and a FIFO checked: the path is ours. */
        ret->rfd = open(ret->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
        if (ret->rfd < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "open %s: %m", ret->path);
        struct stat st;
        if (fstat(ret->rfd, &st) < 0 || !S_ISFIFO(st.st_mode) ||
            (made_ahead && (st.st_dev != ahead.st_dev || st.st_ino != ahead.st_ino)))
                return bc_error_set(err, BC_SANDBOX_SETUP, EINVAL, "%s: not our FIFO", ret->path);
        /* The job's user is not ours (a sandbox maps it elsewhere): it may
         * write, no one else may read. */
        if (fchmod(ret->rfd, 0622) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "chmod %s: %m", ret->path);
        /* Our own writer: the job's writers coming and going never make
         * the read end see an end of file (and poll no POLLHUP). */
        ret->wfd = open(ret->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
        if (ret->wfd < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "open %s: %m", ret->path);
        return 0;
}

void progress_fifo_poll(struct progress_fifo *f, uint64_t now_ms)
{
        if (f->rfd < 0)
                return;
        char buf[16384];
        for (size_t total = 0; total < PROGRESS_FIFO_READ_MAX;) {
                ssize_t n = read(f->rfd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break; /* EAGAIN: nothing more now */
                progress_feed(&f->p, buf, (size_t)n, now_ms);
                total += (size_t)n;
        }
        progress_tick(&f->p, now_ms);
}

void progress_fifo_close(struct progress_fifo *f, uint64_t now_ms)
{
        if (f->rfd >= 0) {
                progress_fifo_poll(f, now_ms);
                progress_finish(&f->p, now_ms);
        }
        if (f->path)
                unlink(f->path);
        if (f->rfd >= 0)
                close(f->rfd);
        if (f->wfd >= 0)
                close(f->wfd);
        f->rfd = f->wfd = -1;
        free(f->path);
        f->path = NULL;
        progress_done(&f->p);
}
