/* The worker's side of a warm sandbox (see warm.c for the helper's):
 * start one, learn when it is ready, hand it a job, or drop it. */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/io.h"
#include "sandbox/helper-internal.h"

int sandbox_warm_start(const char *helper, enum sandbox_network network, const char *cgroup_parent,
                       const char *image, const struct sandbox_warm_limits *limits,
                       struct sandbox_warm *ret, struct bc_error *err)
{
        *ret = (struct sandbox_warm){ .pid = -1, .ctl = -1, .network = network };
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "socketpair: %m");
        /* As sandbox_argv_build writes them: the helper parses back the
         * very values a job's options carry. */
        char mem[24], pids[16], cpus[32];
        char *argv[20];
        size_t n = 0;
        argv[n++] = (char *)helper;
        argv[n++] = "--warm";
        argv[n++] = "--control-fd";
        argv[n++] = "3";
        if (strcmp(sandbox_id_range_get(), SANDBOX_ID_RANGE_DEFAULT) != 0) {
                argv[n++] = "--uid-range";
                argv[n++] = (char *)sandbox_id_range_get();
        }
        argv[n++] = "--network";
        argv[n++] = network == SANDBOX_NET_HOST ? "host" : "none";
        if (limits && limits->memory_mb) {
                snprintf(mem, sizeof(mem), "%llu", (unsigned long long)limits->memory_mb);
                argv[n++] = "--memory-mb";
                argv[n++] = mem;
        }
        if (limits && limits->pids) {
                snprintf(pids, sizeof(pids), "%u", (unsigned)limits->pids);
                argv[n++] = "--pids";
                argv[n++] = pids;
        }
        if (limits && limits->cpus > 0) {
                snprintf(cpus, sizeof(cpus), "%.17g", limits->cpus);
                argv[n++] = "--cpus";
                argv[n++] = cpus;
        }
        if (cgroup_parent) {
                argv[n++] = "--cgroup-parent";
                argv[n++] = (char *)cgroup_parent;
        }
        if (image) {
                argv[n++] = "--image";
                argv[n++] = (char *)image;
        }
        argv[n] = NULL;
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        /* stdio is /dev/null until the job brings its own; what the helper
         * has to say goes over the control socket. */
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, sp[1], 3);
        bc_spawnattr_own_group(&attr);
        char *env[] = { NULL };
        int r = posix_spawn(&ret->pid, helper, &fa, &attr, argv, env);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        close(sp[1]);
        if (r != 0) {
                close(sp[0]);
                ret->pid = -1;
                return bc_error_set(err, BC_SANDBOX_SETUP, r, "cannot start %s: %s", helper,
                                    strerror(r));
        }
        ret->ctl = sp[0];
        clock_gettime(CLOCK_MONOTONIC, &ret->started);
        return 0;
}

static int failure_from(const struct sbx_msg *m, struct bc_error *err)
{
        return bc_error_set(err, BC_SANDBOX_SETUP, m->errnum ? m->errnum : EIO,
                            "warm sandbox setup failed at %s%s%s: %s",
                            sbx_step_name((enum sbx_step)m->step), m->path[0] ? " " : "", m->path,
                            m->message);
}

int sandbox_warm_check(struct sandbox_warm *w, struct bc_error *err)
{
        if (w->ready) {
                /* Ready ones say nothing more unless they die. */
                struct pollfd p = { .fd = w->ctl, .events = POLLIN };
                if (poll(&p, 1, 0) == 0)
                        return 1;
        }
        struct sbx_msg m;
        int fd = -1;
        int r;
        do
                r = recv(w->ctl, &m, 0, MSG_PEEK | MSG_DONTWAIT);
        while (r < 0 && errno == EINTR);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return 0;
        r = sbx_msg_recv(w->ctl, &m, &fd);
        if (fd >= 0)
                close(fd);
        if (r <= 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, r < 0 ? -r : EPIPE,
                                    "warm sandbox exited%s", w->ready ? " while waiting" : "");
        if (m.type == SBX_MSG_WARM && !w->ready) {
                w->ready = true;
                return 1;
        }
        if (m.type == SBX_MSG_SETUP_ERROR)
                return failure_from(&m, err);
        return bc_error_set(err, BC_SANDBOX_SETUP, EBADMSG, "warm sandbox: unexpected message %u",
                            m.type);
}

/* The options travel in a sealed memfd: one fd however long the script or
 * environment, and nobody can change them once sent. */
static int options_memfd(char *const *argv, struct bc_error *err)
{
        size_t total = 0;
        for (char *const *a = argv; *a; a++)
                total += strlen(*a) + 1;
        if (total > SBX_JOB_OPTIONS_MAX)
                return bc_error_set(err, BC_SANDBOX_SETUP, E2BIG,
                                    "job options: larger than %d MiB", SBX_JOB_OPTIONS_MAX >> 20);
        /* One buffer, one write: a job's variables may be many. */
        _cleanup_free_ char *blob = malloc(total ? total : 1);
        if (!blob)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        char *p = blob;
        for (char *const *a = argv; *a; a++)
                p = stpcpy(p, *a) + 1;
        int fd = memfd_create("boxcar-job", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "memfd_create: %m");
        int r = bc_write_all(fd, blob, total);
        if (r >= 0 &&
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                r = -errno;
        if (r < 0) {
                close(fd);
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "job options: %s", strerror(-r));
        }
        return fd;
}

int sandbox_warm_handoff(struct sandbox_warm *w, char *const *argv, int out_w, int err_w,
                         int status_w, int go_fd, struct bc_error *err)
{
        int r = sandbox_warm_check(w, err);
        if (r <= 0)
                return r < 0 ? r
                             : bc_error_set(err, BC_SANDBOX_SETUP, EAGAIN,
                                            "warm sandbox not ready");
        int opts = options_memfd(argv, err);
        if (opts < 0)
                return opts;
        /* No status wanted: it goes nowhere, but the message keeps its shape. */
        int devnull = status_w < 0 ? open("/dev/null", O_WRONLY | O_CLOEXEC) : -1;
        int fds[5] = { opts, out_w, err_w, status_w < 0 ? devnull : status_w, go_fd };
        struct sbx_msg m = { .type = SBX_MSG_JOB };
        r = fds[3] < 0 ? -errno : sbx_msg_send_fds(w->ctl, &m, fds, go_fd < 0 ? 4 : 5);
        close(opts);
        if (devnull >= 0)
                close(devnull);
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "warm sandbox gone at handoff: %s",
                                    strerror(-r));
        /* The control socket has done its work: the sandbox now reports on
         * the status fd and by exiting. */
        close(w->ctl);
        w->ctl = -1;
        /* The supervisor was woken onto our CPU (a unix socket's wakeup
         * is a sync one) and traced, it often waited there ~0.15 ms while
         * we went on, the other CPU idle.  Its handoff is the job's path;
         * what we do next (reading the job's output) is not. */
        sched_yield();
        return 0;
}

void sandbox_warm_discard(struct sandbox_warm *w)
{
        if (w->pid > 0)
                kill(w->pid, SIGTERM); /* it removes its cgroup, then exits */
        if (w->ctl >= 0)
                close(w->ctl);
        w->ctl = -1;
}

bool sandbox_warm_reap(struct sandbox_warm *w, bool force, const char *cgroup_parent)
{
        if (w->pid <= 0)
                return true;
        if (force)
                kill(w->pid, SIGKILL);
        int status = 0;
        pid_t r = waitpid(w->pid, &status, WNOHANG);
        if (r == w->pid && WIFSIGNALED(status))
                sandbox_cgroup_remove_dead(w->pid, cgroup_parent);
        if (r == w->pid || (r < 0 && errno == ECHILD)) {
                w->pid = -1;
                return true;
        }
        return false;
}
