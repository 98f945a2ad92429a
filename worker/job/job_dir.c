/* A job's directory under --work-dir/jobs: made and locked at the start,
 * with boxcar's files (meta/) and the workdir in its workspace before the
 * run; its workspace filesystem handed back to the pool (or removed) at
 * the end. */
#include "worker/job/job-internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/io.h"
#include "sandbox/sandbox.h"
#include "worker/metrics/wmetrics.h"
#include "worker/workdir/dir_bin.h"
#include "worker/workdir/disk_budget.h"
#include "worker/log/log.h"
#include "worker/workdir/ws_pool.h"
#include "worker/workdir/wsfile.h"

/* At the job's end: its workspace filesystem goes back to the pool (to be
 * wiped or discarded there, off this slot's path), the rest is emptied
 * and kept for a later job with its lock (dir_bin.h), or removed and its
 * lock released.  The mount table is read only when a filesystem may still be
 * mounted there (the namespace backend, not taken back by the pool). */
void job_dir_release(const struct job_services *svc, const char *dir, int lock)
{
        _cleanup_free_ char *img = NULL, *fs = NULL;
        bool mounted = svc->cfg->sandbox == BACKEND_NAMESPACE;
        if (mounted && svc->ws_pool && asprintf(&img, "%s/ws.img", dir) >= 0 &&
            asprintf(&fs, "%s/fs", dir) >= 0)
                mounted = !ws_pool_release(svc->ws_pool, img, fs);
        if (!mounted && dir_bin_keep(svc->dirs, dir, lock))
                return;
        if (mounted)
                sandbox_workspace_remove_dir(dir);
        else
                sandbox_workspace_remove_tree(dir);
        close(lock);
}

/* How often a new run looks whether its attempt's leftover directory is
 * gone or unlocked: the janitor empties it in a few milliseconds. */
#define LEFTOVER_POLL_US 2000

/* jobs/<id>.<attempt>, one per attempt: a rescued attempt's leftovers
 * never meet the next one's. */
static int job_dir_path(const struct worker_config *cfg, const struct claimed_job *job,
                        const char *leaf, char **ret)
{
        return asprintf(ret, "%s/jobs/%s.%d%s", cfg->work_dir, job->id, job->attempt, leaf);
}

struct disk_wait {
        const struct job_services *svc;
        const struct claimed_job *job;
        bool waited;
};

static void disk_wait_event(void *ctx, const char *why)
{
        struct disk_wait *w = ctx;
        w->waited = true;
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "message", why);
        _cleanup_free_ char *details = cJSON_PrintUnformatted(d);
        cJSON_Delete(d);
        w->svc->event(w->svc->ctx, w->job, "disk_wait", details);
        log_event(LOG_WARN, "job.disk_wait", "job_id", w->job->id, "queue", w->job->queue,
                  "detail", why, NULL);
}

int job_dir_take_disk(const struct job_services *svc, const struct claimed_job *job,
                      const struct job_spec *spec, int cancel_fd, const _Atomic int *stop,
                      struct disk_grant **ret, struct bc_error *err)
{
        *ret = NULL;
        if (!svc->disk)
                return 0;
        _cleanup_free_ char *image = NULL;
        if (job_dir_path(svc->cfg, job, "/ws.img", &image) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        uint64_t bytes = spec->limits.disk_mb << 20;
        struct disk_ask ask = { .image = image,
                                .image_bytes = bytes,
                                .extra_bytes = spec->artifact_storage ? bytes : 0 };
        struct disk_wait w = { svc, job, false };
        int r = disk_budget_take(svc->disk, &ask, cancel_fd, stop,
                                 (unsigned)(svc->cfg->disk_wait_s * 1000), disk_wait_event, &w,
                                 ret, err);
        if (w.waited)
                wmetrics_disk_wait(svc->metrics, r == 0         ? "started"
                                                 : r == -ENOSPC ? "failed"
                                                 : r == -ECANCELED && *stop == JOB_STOP_CANCEL
                                                         ? "cancelled"
                                                         : "released");
        return r;
}

/* Whether the lock file at path is still the one open as fd. */
static bool still_there(int fd, const char *path)
{
        struct stat a, b;
        return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino &&
               a.st_dev == b.st_dev;
}

/* A new job directory at dir, its lock file (lock) made and held: the
 * lock's fd, or a negative errno. */
static int make_locked_dir(const char *dir, const char *lock, struct bc_error *err)
{
        if (mkdir(dir, 0700) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "create %s: %m", dir);
        int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || flock(fd, LOCK_EX) < 0) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                return bc_error_set(err, BC_SANDBOX_SETUP, e, "lock %s: %s", lock, strerror(e));
        }
        return fd;
}

void job_dirs_cleanup(const char *work_dir)
{
        _cleanup_free_ char *jobs = NULL;
        if (asprintf(&jobs, "%s/jobs", work_dir) >= 0)
                bc_remove_unlocked_dirs(jobs, sandbox_workspace_remove_dir);
}

/* Under the namespace backend the workspace is ws.img mounted at fs/ (see
 * sandbox_workspace_make): fs/ws is /workspace, fs/scratch holds /tmp and
 * /dev/shm, all within limits.disk_mb and limits.files (see ws_pool.h for
 * the ready ones). */
int job_dir_make(const struct job_services *svc, const struct claimed_job *job,
                 const struct job_spec *spec, char **ret_dir, char **ret_ws, char **ret_scratch,
                 int *ret_lock, struct bc_error *err)
{
        const struct worker_config *cfg = svc->cfg;
        _cleanup_free_ char *dir = NULL, *ws = NULL, *img = NULL, *fs = NULL, *sc = NULL,
                            *lock = NULL;
        bool bounded = cfg->sandbox == BACKEND_NAMESPACE;
        if (job_dir_path(cfg, job, "", &dir) < 0 || asprintf(&lock, "%s/lock", dir) < 0 ||
            asprintf(&img, "%s/ws.img", dir) < 0 || asprintf(&fs, "%s/fs", dir) < 0 ||
            asprintf(&ws, bounded ? "%s/fs/ws" : "%s/workspace", dir) < 0 ||
            (bounded && asprintf(&sc, "%s/fs/scratch", dir) < 0))
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        /* A leftover of this attempt: from a crashed run (rare: the mount
         * table is only read when there is one), or a released run whose
         * directory the janitor still holds, locked, until it is gone or
         * kept for a later job (renamed away with its lock still held). */
        if (access(dir, F_OK) == 0) {
                _cleanup_fd_ int held = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
                while (held >= 0 && flock(held, LOCK_EX | LOCK_NB) < 0 && still_there(held, lock))
                        usleep(LEFTOVER_POLL_US);
                sandbox_workspace_remove_dir(dir);
        }
        int fd = dir_bin_take(svc->dirs, dir);
        bool kept = fd >= 0;
        if (!kept && (fd = make_locked_dir(dir, lock, err)) < 0)
                return fd;
        *ret_lock = fd;
        *ret_dir = steal_pointer(&dir);
        if (bounded) {
                char why[128];
                if (!sandbox_workspace_available(why, sizeof(why)))
                        return bc_error_set(err, BC_SANDBOX_SETUP, ENOTSUP,
                                            "this worker cannot make bounded workspaces: %s "
                                            "(see boxcar sandbox detect)",
                                            why);
                int r = ws_pool_acquire(svc->ws_pool, img, fs, spec->limits.disk_mb,
                                        spec->limits.files, err);
                if (r < 0)
                        return r;
        } else if (mkdir(ws, 0755) < 0 && !(kept && errno == EEXIST)) {
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "create %s: %m", ws);
        }
        *ret_ws = steal_pointer(&ws);
        *ret_scratch = steal_pointer(&sc);
        return 0;
}

/* A session's meta directory outlives its jobs: an earlier job's file of
 * the same name goes first, then the new one is created, never followed. */
static int write_file(const char *path, const char *text, struct bc_error *err)
{
        if (unlink(path) < 0 && errno != ENOENT)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "remove %s: %m", path);
        _cleanup_fd_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                                   0644);
        if (fd < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "create %s: %m", path);
        int r = bc_write_all(fd, text, strlen(text));
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "write %s: %s", path, strerror(-r));
        return 0;
}

/* Made for every job, a plain process's too: it holds the job's
 * progress FIFO (job_progress.c) besides its scripts (a sandbox mounts it
 * at /run/boxcar). */
int job_dir_prepare_meta(const struct job_spec *spec, const char *meta, struct bc_error *err)
{
        /* A kept directory (dir_bin.h) has it, empty. */
        if (mkdir(meta, 0755) < 0 && errno != EEXIST)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "create %s: %m", meta);
        _cleanup_free_ char *script = NULL, *startup = NULL;
        if (asprintf(&script, "%s/script.sh", meta) < 0 ||
            asprintf(&startup, "%s/startup.sh", meta) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        int r = spec->mode == SPEC_SCRIPT ? write_file(script, spec->script, err) : 0;
        if (r >= 0 && spec->startup_script)
                r = write_file(startup, spec->startup_script, err);
        return r;
}

/* The workdir must exist before the job enters it.  Made after the
 * artifact base is in place (an overlay would hide it), so a component
 * may come from the base: each is opened without following a symlink (a
 * base's `w -> /etc` must not lead the worker out of the workspace), and
 * one that is not a directory is the job's own error, not retried.  What
 * is made belongs to the workspace's owner (wsfile_adopt). */
int job_dir_make_workdir(const struct job_spec *spec, const char *ws, struct bc_error *err)
{
        const char *rest = spec->workdir + strlen("/workspace");
        if (strncmp(spec->workdir, "/workspace", 10) != 0 || *rest != '/')
                return 0;
        _cleanup_free_ char *path = strdup(rest + 1);
        if (!path)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        struct stat st;
        int fd = open(ws, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                return bc_error_set(err, BC_SANDBOX_SETUP, e, "workspace %s: %s", ws, strerror(e));
        }
        char *save = NULL;
        for (char *c = strtok_r(path, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                int r = mkdirat(fd, c, 0755) == 0 ? wsfile_adopt(&st, fd, c)
                        : errno == EEXIST         ? 0
                                                  : -errno;
                int sub = r < 0 ? -1
                                : openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (r >= 0 && sub < 0)
                        r = -errno;
                close(fd);
                fd = sub;
                if (r == -ENOTDIR || r == -ELOOP)
                        return bc_error_set(err, BC_BAD_SPEC, -r,
                                            "workdir %s: %s in the workspace "
                                            "is not a directory (a symlink is never followed)",
                                            spec->workdir, c);
                if (r < 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, -r, "workdir %s: %s",
                                            spec->workdir, strerror(-r));
        }
        close(fd);
        return 0;
}
