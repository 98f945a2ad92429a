#include "worker/exec/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/io.h"
#include "worker/exec/proc-internal.h"
#include "worker/exec/proc_reaper.h"

/* The job's PATH, not the worker's, decides what "python3" means. */
static char *resolve_command(const char *name, char *const *envp)
{
        if (strchr(name, '/'))
                return strdup(name);
        const char *path = "/usr/local/bin:/usr/bin:/bin";
        for (char *const *e = envp; *e; e++)
                if (strncmp(*e, "PATH=", 5) == 0)
                        path = *e + 5;
        for (const char *p = path;; p++) {
                size_t len = strcspn(p, ":");
                char *cand = NULL;
                if (len > 0 && asprintf(&cand, "%.*s/%s", (int)len, p, name) >= 0) {
                        if (access(cand, X_OK) == 0)
                                return cand;
                        free(cand);
                }
                p += len;
                if (!*p)
                        break;
        }
        return NULL;
}

static int spawn_child(const struct proc_request *req, const char *path, int out_w, int err_w,
                       pid_t *ret_pid)
{
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, out_w, STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&fa, err_w, STDERR_FILENO);
        if (req->pass_fd >= 0)
                posix_spawn_file_actions_adddup2(&fa, req->pass_fd, 3);
        if (req->cwd)
                posix_spawn_file_actions_addchdir_np(&fa, req->cwd);
        bc_spawnattr_own_group(&attr);
        int r = posix_spawn(ret_pid, path, &fa, &attr, req->argv, req->envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        return -r;
}

static void note(struct tailbuf *t, const char *fmt, const char *arg, int errnum)
{
        char msg[PATH_MAX + 128];
        int n = snprintf(msg, sizeof(msg), fmt, arg, strerror(errnum));
        if (n > 0)
                tailbuf_write(t, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

struct running {
        const struct proc_request *req;
        struct proc_outcome *o;
        pid_t pid;
        int pidfd;
        int out_r, err_r;
        int report_r;  /* -1: none, or at EOF */
        bool reported; /* the report came whole: the child's part is over */
        uint64_t start_ms;
        uint64_t kill_sent_ms; /* 0 until the first kill signal */
        bool exited;
        int status;
        struct rusage usage;
        int usage_r; /* the guard's report of the command's own usage, or -1 */
};

static void drain(struct running *run, int *fd, int stream)
{
        char buf[65536];
        ssize_t n = read(*fd, buf, sizeof(buf));
        if (n > 0) {
                tailbuf_write(stream == 1 ? &run->o->out : &run->o->err, buf, (size_t)n);
                if (run->req->on_output)
                        run->req->on_output(run->req->ctx, stream, buf, (size_t)n);
                return;
        }
        if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                close(*fd);
                *fd = -1;
        }
}

static void read_report(struct running *run)
{
        char buf[4096];
        ssize_t n = read(run->report_r, buf, sizeof(buf));
        if (n > 0) {
                /* Over the cap: the report is cut, and fails to parse. */
                dynbuf_add(run->req->report, buf, (size_t)n);
                return;
        }
        if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                run->report_r = -1; /* the caller's to close */
                /* An empty report is a child that died before writing one:
                 * its exit status says more. */
                run->reported = n == 0 && run->req->report->len > 0;
        }
}

static bool child_done(const struct running *run)
{
        return run->exited || run->reported;
}

static void send_kill(struct running *run, int sig)
{
        /* The group first (the job's own children), then the child itself in
         * case it left the group. */
        kill(-run->pid, sig);
        kill(run->pid, sig);
        if (!run->kill_sent_ms)
                run->kill_sent_ms = bc_mono_ms();
}

static int poll_timeout(const struct running *run, uint64_t now)
{
        const struct proc_request *req = run->req;
        int64_t t = -1;
        if (req->timeout_s > 0 && !run->kill_sent_ms)
                t = (int64_t)(run->start_ms + (uint64_t)(req->timeout_s * 1000)) - (int64_t)now;
        if (run->kill_sent_ms)
                t = (int64_t)(run->kill_sent_ms + (uint64_t)(req->kill_grace_s * 1000)) -
                    (int64_t)now;
        if (child_done(run))
                t = 100; /* stragglers holding the pipes get a moment, then the kill */
        if (req->on_output && (t < 0 || t > 200))
                t = 200; /* the output callback's timer tick */
        if (run->pidfd < 0 && !child_done(run) && (t < 0 || t > 20))
                t = 20; /* no pidfd: look for the exit by polling */
        return t < 0 ? (t == -1 ? -1 : 0) : (int)(t > INT_MAX ? INT_MAX : t);
}

static void check_deadlines(struct running *run, uint64_t now)
{
        const struct proc_request *req = run->req;
        if (!run->kill_sent_ms && req->timeout_s > 0 &&
            now >= run->start_ms + (uint64_t)(req->timeout_s * 1000)) {
                run->o->timed_out = true;
                send_kill(run, req->kill_signal);
        } else if (run->kill_sent_ms && !run->exited &&
                   now >= run->kill_sent_ms + (uint64_t)(req->kill_grace_s * 1000)) {
                send_kill(run, SIGKILL);
        }
}

static void supervise(struct running *run)
{
        const struct proc_request *req = run->req;
        uint64_t exited_ms = 0;
        while (run->out_r >= 0 || run->err_r >= 0 || !child_done(run)) {
                struct pollfd p[5] = {
                        { .fd = run->out_r, .events = POLLIN },
                        { .fd = run->err_r, .events = POLLIN },
                        { .fd = run->exited ? -1 : run->pidfd, .events = POLLIN },
                        { .fd = run->kill_sent_ms ? -1 : req->cancel_fd, .events = POLLIN },
                        { .fd = run->report_r, .events = POLLIN },
                };
                int n = poll(p, 5, poll_timeout(run, bc_mono_ms()));
                if (n < 0 && errno != EINTR)
                        break;
                if (p[0].revents)
                        drain(run, &run->out_r, 1);
                if (p[1].revents)
                        drain(run, &run->err_r, 2);
                if (p[4].revents) {
                        read_report(run);
                        if (run->reported && !exited_ms)
                                exited_ms = bc_mono_ms();
                }
                bool check_exit = p[2].revents || (run->pidfd < 0 && !run->exited);
                if (check_exit &&
                    wait4(run->pid, &run->status, WNOHANG, &run->usage) == run->pid) {
                        run->exited = true;
                        exited_ms = bc_mono_ms();
                }
                if (p[3].revents) {
                        run->o->cancelled = true;
                        send_kill(run, req->kill_signal);
                }
                if (req->on_output)
                        req->on_output(req->ctx, 0, NULL, 0);
                uint64_t now = bc_mono_ms();
                check_deadlines(run, now);
                if (run->exited && now >= exited_ms + 100 &&
                    (run->out_r >= 0 || run->err_r >= 0)) {
                        /* The main process is gone but something it left
                         * behind holds the pipes: end the group. */
                        kill(-run->pid, SIGKILL);
                        exited_ms = now + 60000;
                } else if (!run->exited && run->reported && now >= exited_ms + 100) {
                        /* Reported but the pipes stay open: the child is in
                         * its teardown, which must not be killed; stop
                         * listening instead. */
                        if (run->out_r >= 0)
                                close(run->out_r);
                        if (run->err_r >= 0)
                                close(run->err_r);
                        run->out_r = run->err_r = -1;
                }
        }
        /* Exited before its report was read: the rest is in the pipe. */
        while (run->report_r >= 0)
                read_report(run);
        if (!run->exited && run->reported) {
                /* Its exit (the teardown after the report) is not this
                 * job's time: reaped elsewhere, the group killed then. */
                proc_reaper_adopt(run->pid, run->pidfd, req->on_reaped, req->reaped_ctx);
                run->pidfd = -1;
                run->o->reaped_later = true;
                return;
        }
        if (!run->exited) {
                send_kill(run, SIGKILL);
                wait4(run->pid, &run->status, 0, &run->usage);
        }
        kill(-run->pid, SIGKILL);
        if (req->on_reaped)
                req->on_reaped(req->reaped_ctx, run->pid, run->status);
}

/* Under a guard, wait4 measured the guard, whose resident set counts the
 * worker's pages it shares; the command's own usage comes from the guard. */
static void take_guard_usage(struct running *run)
{
        if (run->usage_r < 0)
                return;
        struct rusage u;
        if (read(run->usage_r, &u, sizeof(u)) == (ssize_t)sizeof(u))
                run->usage = u;
        close(run->usage_r);
        run->usage_r = -1;
}

static void record_exit(struct running *run)
{
        struct proc_outcome *o = run->o;
        o->wall_ms = bc_mono_ms() - run->start_ms;
        if (o->reaped_later)
                return;
        o->cpu_ms = (uint64_t)(run->usage.ru_utime.tv_sec + run->usage.ru_stime.tv_sec) * 1000 +
                    (uint64_t)(run->usage.ru_utime.tv_usec + run->usage.ru_stime.tv_usec) / 1000;
        o->max_rss_kb = (uint64_t)run->usage.ru_maxrss;
        if (WIFEXITED(run->status)) {
                o->exit_code = WEXITSTATUS(run->status);
        } else if (WIFSIGNALED(run->status)) {
                o->signal = WTERMSIG(run->status);
                o->exit_code = 128 + o->signal;
        }
}

static int run_child(const struct proc_request *req, struct proc_outcome *ret, int *child_end,
                     struct bc_error *err)
{
        if (tailbuf_init(&ret->out, req->output_cap) < 0 ||
            tailbuf_init(&ret->err, req->output_cap) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "output buffers: out of memory");
        clock_gettime(CLOCK_REALTIME, &ret->started_at);
        _cleanup_free_ char *path = req->start ? NULL : resolve_command(req->argv[0], req->envp);
        if (!path && !req->start) {
                ret->exit_code = 127;
                note(&ret->err, "boxcar: %s: command not found%.0s\n", req->argv[0], ENOENT);
                return 0;
        }
        int out[2], errp[2];
        if (pipe2(out, O_CLOEXEC) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "pipe: %m");
        if (pipe2(errp, O_CLOEXEC) < 0) {
                int e = errno;
                close(out[0]);
                close(out[1]);
                return bc_error_set(err, BC_SANDBOX_SETUP, e, "pipe: %s", strerror(e));
        }
        struct running run = { .req = req,
                               .o = ret,
                               .out_r = out[0],
                               .err_r = errp[0],
                               .report_r = req->report ? req->report_fd : -1,
                               .pidfd = -1,
                               .usage_r = -1,
                               .start_ms = bc_mono_ms() };
        int r = req->start   ? req->start(req->start_ctx, out[1], errp[1], &run.pid, err)
                : req->guard ? proc_guard_spawn(req, path, out[1], errp[1], &run.pid, &run.usage_r)
                             : spawn_child(req, path, out[1], errp[1], &run.pid);
        close(out[1]);
        close(errp[1]);
        if (*child_end >= 0) {
                close(*child_end);
                *child_end = -1;
        }
        if (r < 0) {
                close(out[0]);
                close(errp[0]);
                if (req->start)
                        return r; /* err says why; nothing ran */
                ret->exit_code = r == -ENOENT ? 127 : 126;
                note(&ret->err, "boxcar: %s: %s\n", req->argv[0], -r);
                return 0;
        }
        ret->spawned = true;
        /* A first tick right away: the caller notes the start after the
         * spawn, not before it, so its bookkeeping costs no pickup time. */
        if (req->on_output)
                req->on_output(req->ctx, 0, NULL, 0);
        /* Without pidfd_open (Linux < 5.3, valgrind) the loop polls waitpid. */
        run.pidfd = (int)syscall(SYS_pidfd_open, run.pid, 0);
        supervise(&run);
        take_guard_usage(&run);
        record_exit(&run);
        if (run.pidfd >= 0)
                close(run.pidfd);
        if (run.out_r >= 0)
                close(run.out_r);
        if (run.err_r >= 0)
                close(run.err_r);
        return 0;
}

int proc_run(const struct proc_request *req, struct proc_outcome *ret, struct bc_error *err)
{
        memset(ret, 0, sizeof(*ret));
        int child_end = req->report ? req->child_end : -1;
        int r = run_child(req, ret, &child_end, err);
        if (child_end >= 0)
                close(child_end);
        return r;
}

void proc_outcome_done(struct proc_outcome *o)
{
        if (!o)
                return;
        tailbuf_done(&o->out);
        tailbuf_done(&o->err);
}
