/* A warm sandbox's supervisor (boxcar-sandbox --warm).  Everything that
 * does not depend on the job is done before there is one: the cgroup
 * (without limits), the namespaces, the root with the system binds, /etc,
 * /dev and /proc, pivot_root, the idmap namespace for root-owned
 * workspaces (warm-build.c); then the sandbox's init locks down
 * (identity, no capabilities, seccomp) and starts the job's process, which
 * waits on its own socket, locked down too.  Then it says WARM on the
 * control socket and waits.
 *
 * The job comes as one message: a memfd holding its options (the same
 * argv as a cold run, without --status-fd), and the job's stdout, stderr
 * and status fds, and maybe a go fd: the worker hands the job over while
 * the database commits its claim, and the job's process starts only once
 * that fd is readable (the claim held; else the worker's SIGTERM ends the
 * sandbox with nothing of the job run).  The supervisor passes the
 * options and stdio on to the waiting process at once, which takes them
 * in meanwhile; it checks the options, writes the limits into the
 * cgroup, clones the job's trees from the host (open_tree), enters the
 * sandbox's mount namespace to attach them (move_mount) and seal the root
 * read-only, and its network namespace for an allow-list's routes and
 * sockets, comes back, and tells the waiting process to start, which only
 * has to exec.  No privilege is dropped, no filter loaded and nothing
 * forked on the job's path.
 *
 * The trees are attached by the supervisor, not by the sandbox's init,
 * so that init can lock down before there is a job: nothing inside a
 * warm sandbox holds a privilege.  The supervisor enters the sandbox's
 * namespaces only before the job's process has run anything, and only
 * to attach what it cloned.  Detached mounts rather than mount
 * propagation from a per-sandbox host directory: nothing is shared
 * between the host's mount namespace and the sandbox's at any time (a
 * propagation peer would be a standing channel into every warm sandbox),
 * and the trees are cloned with their attributes (read-only, nosuid,
 * nodev, idmap) already set, in the supervisor, before the sandbox can
 * see them.
 *
 * One sandbox, one job: the process exits after it, like a cold one. */
#include "sandbox/warm-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/child-internal.h"
#include "sandbox/egress-internal.h"
#include "sandbox/mount-internal.h"
#include "sandbox/rootfs-internal.h"
#include "sandbox/setup-internal.h"
#include "sandbox/supervise-dirs-internal.h"
#include "sandbox/supervise-start-internal.h"
#include "sandbox/supervisor-internal.h"

static void reap(struct supervisor *s)
{
        sbx_sup_kill(s);
        while (!s->reaped) {
                int st;
                pid_t w = waitpid(s->child, &st, 0);
                if (w == s->child || (w < 0 && errno != EINTR))
                        s->reaped = true;
        }
}

/* Tells the worker why this sandbox never became (or stopped being)
 * usable; it replaces it. */
static int report_warm_failure(struct warm *w)
{
        struct supervisor *s = &w->s;
        if (!s->failed)
                sbx_sup_fail(s, SBX_STEP_INTERNAL, EPIPE, NULL,
                             "the sandbox's init exited before its job");
        (void)sbx_msg_send(w->ctl, &s->failure, -1);
        return sbx_step_exit_code((enum sbx_step)s->failure.step);
}

/* Waits for the job: 1 with fds[0..3] = options, stdout, stderr, status
 * and w->go_fd; 0 when the sandbox died meanwhile; -1 when the worker
 * dropped us. */
static int wait_job(struct warm *w, int fds[4])
{
        struct supervisor *s = &w->s;
        for (;;) {
                struct pollfd p[3] = {
                        { .fd = w->ctl, .events = POLLIN },
                        { .fd = s->sock, .events = POLLIN },
                        { .fd = s->sigfd, .events = POLLIN },
                };
                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                if (p[2].revents) {
                        sbx_sup_on_signal(s);
                        if (s->cancelled || s->reaped)
                                return s->cancelled ? -1 : 0;
                }
                if (p[1].revents) {
                        sbx_sup_on_message(s);
                        if (s->failed || s->sock_eof)
                                return 0;
                }
                if (p[0].revents) {
                        struct sbx_msg m;
                        size_t n = 0;
                        int got[SBX_MSG_FDS_MAX];
                        int r = sbx_msg_recv_fds(w->ctl, &m, got, ELEMENTSOF(got), &n);
                        if (r <= 0)
                                return -1;
                        if (m.type == SBX_MSG_JOB && (n == 4 || n == 5)) {
                                memcpy(fds, got, sizeof(int) * 4);
                                w->go_fd = n == 5 ? got[4] : -1;
                                return 1;
                        }
                        for (size_t i = 0; i < n; i++)
                                close(got[i]);
                }
        }
}

static int read_options(struct warm *w, int fd)
{
        struct bc_error err = BC_ERROR_INIT;
        if (helper_config_read_fd(fd, &w->blob, &w->job_argv, &w->job, &err) < 0) {
                sbx_sup_fail(&w->s, SBX_STEP_OPTIONS, err.errnum, NULL, bc_error_message(&err));
                bc_error_clear(&err);
                return -1;
        }
        w->have_job = true;
        return 0;
}

static bool same_str(const char *a, const char *b)
{
        return a == b || (a && b && strcmp(a, b) == 0);
}

/* What was fixed when the sandbox was made must be what the job asks. */
static int check_fits(struct warm *w)
{
        const struct helper_config *j = &w->job, *c = w->wc;
        /* An allow-list is set up at handoff in the sandbox's own network
         * namespace, which a "none" sandbox has. */
        bool net_fits = j->network == c->network ||
                        (j->network == SANDBOX_NET_ALLOW && c->network == SANDBOX_NET_NONE);
        /* A limit set while the sandbox was made is changed at the
         * handoff, never lifted (the cgroup code writes limits, it does
         * not remove them): the worker's jobs always have all three. */
        const struct cg_limits jl = sbx_warm_limits_of(j);
        bool lifts = (w->preset.memory_mb && !jl.memory_mb) || (w->preset.pids && !jl.pids) ||
                     (w->preset.cpus > 0 && !(jl.cpus > 0));
        if (lifts) {
                sbx_sup_fail(&w->s, SBX_STEP_OPTIONS, EINVAL, NULL,
                             "the job lifts a limit the warm sandbox has (--memory-mb, --pids "
                             "or --cpus)");
                return -1;
        }
        const char *what = !net_fits                                       ? "--network"
                           : j->uid != c->uid || j->gid != c->gid          ? "--uid/--gid"
                           : !same_str(j->hostname, c->hostname)           ? "--hostname"
                           : !same_str(j->cgroup_parent, c->cgroup_parent) ? "--cgroup-parent"
                           : !same_str(j->image, c->image)                 ? "--image"
                                                                           : NULL;
        if (!what)
                return 0;
        char msg[160];
        snprintf(msg, sizeof(msg), "the job's %s differs from the warm sandbox's", what);
        sbx_sup_fail(&w->s, SBX_STEP_OPTIONS, EINVAL, NULL, msg);
        return -1;
}

static int apply_limits(struct warm *w)
{
        struct supervisor *s = &w->s;
        struct cg_limits l = sbx_warm_limits_of(&w->job);
        struct bc_error err = BC_ERROR_INIT;
        bool wanted = l.memory_mb || l.pids || l.cpus > 0;
        if (wanted && w->cg_error[0]) {
                sbx_sup_fail(s, SBX_STEP_CGROUP, EPERM, NULL, w->cg_error);
                return -1;
        }
        /* Only the limits the sandbox does not have already: six cgroup
         * files on v1 took ~0.15 ms of the handoff.  (check_fits made
         * sure that none of the preset ones is to be lifted.) */
        if (w->have_preset) {
                if (l.memory_mb == w->preset.memory_mb)
                        l.memory_mb = 0;
                if (l.pids == w->preset.pids)
                        l.pids = 0;
                if (l.cpus == w->preset.cpus)
                        l.cpus = 0;
        }
        if (sbx_cgroup_limit(&s->cg, &l, &err) < 0) {
                sbx_sup_fail(s, SBX_STEP_CGROUP, err.errnum, NULL, bc_error_message(&err));
                bc_error_clear(&err);
                return -1;
        }
        return 0;
}

/* Runs fn in the namespace ns (CLONE_NEWNS or CLONE_NEWNET, fd ns_fd)
 * and comes back.  Not coming back is fatal: this process would go on
 * inside the sandbox. */
static int in_namespace(struct warm *w, int nstype, int ns_fd, int (*fn)(struct warm *, void *),
                        void *arg)
{
        struct supervisor *s = &w->s;
        int home = nstype == CLONE_NEWNS ? w->home_mnt : w->home_net;
        if (setns(ns_fd, nstype) < 0) {
                int e = errno;
                char msg[200];
                /* EPERM on the mount namespace: CAP_SYS_CHROOT, which a
                 * hand-trimmed capability set may leave out. */
                snprintf(msg, sizeof(msg), "cannot enter the sandbox's %s namespace: %s%s",
                         nstype == CLONE_NEWNS ? "mount" : "network", strerror(e),
                         e == EPERM && nstype == CLONE_NEWNS
                                 ? " (the worker needs CAP_SYS_CHROOT besides CAP_SYS_ADMIN)"
                                 : "");
                sbx_sup_fail(s, SBX_STEP_INTERNAL, e, NULL, msg);
                return -1;
        }
        int r = fn(w, arg);
        if (setns(home, nstype) < 0 || fchdir(w->home_cwd) < 0) {
                fprintf(stderr, "boxcar-sandbox: cannot leave the sandbox's namespace: %m\n");
                sbx_sup_kill(s);
                _exit(SBX_EXIT_INTERNAL);
        }
        return r;
}

static int fail_setup(struct warm *w, struct setup_ctx *x)
{
        sbx_sup_fail(&w->s, x->step, x->err.errnum, x->path[0] ? x->path : NULL,
                     bc_error_message(&x->err));
        bc_error_clear(&x->err);
        return -1;
}

/* In the sandbox's mount namespace (at its root): the job's trees in
 * place, the root sealed. */
static int attach_trees(struct warm *w, void *arg)
{
        struct setup_ctx x = { .c = &w->job, .step = SBX_STEP_MOUNT, .err = BC_ERROR_INIT };
        sbx_mount_set_entered(true);
        int r = rootfs_attach_job(&x, arg);
        if (r >= 0)
                r = rootfs_seal(&x);
        sbx_mount_set_entered(false);
        return r < 0 ? fail_setup(w, &x) : 0;
}

/* In the sandbox's network namespace: an allow-list's routes and the
 * sockets the proxy serves (egress-internal.h). */
static int setup_egress(struct warm *w, void *arg)
{
        (void)arg;
        struct supervisor *s = &w->s;
        struct setup_ctx x = { .c = &w->job, .step = SBX_STEP_NETWORK, .err = BC_ERROR_INIT };
        int fds[EGRESS_MAX_FDS];
        int n = sbx_egress_setup(&x, fds);
        if (n < 0)
                return fail_setup(w, &x);
        s->egress = sbx_egress_new(&w->job, fds, (size_t)n, &s->cg);
        if (!s->egress) {
                for (int i = 0; i < n; i++)
                        close(fds[i]);
                sbx_sup_fail(s, SBX_STEP_NETWORK, ENOMEM, NULL, "cannot start the egress proxy");
                return -1;
        }
        return 0;
}

/* With a go fd: waits until it is readable (0), or until the sandbox is
 * cancelled (SIGTERM: the claim did not hold), dies or times out (-1). */
static int wait_go(struct warm *w)
{
        struct supervisor *s = &w->s;
        while (w->go_fd >= 0) {
                struct pollfd p[3] = {
                        { .fd = w->go_fd, .events = POLLIN },
                        { .fd = s->sigfd, .events = POLLIN },
                        { .fd = s->timerfd, .events = POLLIN },
                };
                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        sbx_sup_fail(s, SBX_STEP_INTERNAL, errno, NULL, "poll failed");
                        return -1;
                }
                if (p[1].revents)
                        sbx_sup_on_signal(s);
                if (p[2].revents)
                        sbx_sup_on_timer(s);
                if (s->cancelled || s->reaped || s->failed || s->timed_out)
                        return -1;
                if (p[0].revents & POLLIN)
                        break;
                if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL)) {
                        sbx_sup_fail(s, SBX_STEP_INTERNAL, EPIPE, NULL,
                                     "the worker's go fd failed before the job started");
                        return -1;
                }
        }
        return 0;
}

/* A send to the job's process failed (errno e): it is gone.  What it
 * reported before it exited (queued by now) is the cause. */
static int job_process_gone(struct supervisor *s, int e)
{
        struct pollfd p = { .fd = s->sock, .events = POLLIN };
        if (poll(&p, 1, 0) == 1)
                sbx_sup_on_message(s);
        sbx_sup_fail(s, SBX_STEP_INTERNAL, e, NULL, "the sandbox's job process is gone");
        return -1;
}

/* The job's options and stdio go to its waiting process first, which
 * takes them in while the setup below runs (child.c, job_wait). */
static int send_job(struct warm *w, const int fds[4])
{
        struct supervisor *s = &w->s;
        struct sbx_msg m = { .type = SBX_MSG_JOB, .wstatus = s->cg.ops ? SBX_GO_CGROUP : 0 };
        return sbx_msg_send_fds(s->job_sock, &m, fds, 3) < 0 ? job_process_gone(s, errno) : 0;
}

/* Clones the job's trees, attaches them inside the sandbox, then tells
 * the job's process, which has its job by now, to start it. */
static int start_job(struct warm *w)
{
        struct supervisor *s = &w->s;
        struct setup_ctx x = { .c = &w->job, .step = SBX_STEP_WORKSPACE, .err = BC_ERROR_INIT };
        struct rootfs_trees t;
        rootfs_trees_init(&t);
        int r = rootfs_capture_job(&x, s->idmap_fd, &t);
        if (r < 0)
                r = fail_setup(w, &x);
        if (r >= 0)
                r = in_namespace(w, CLONE_NEWNS, s->mnt_ns, attach_trees, &t);
        rootfs_trees_close(&t);
        if (r >= 0 && w->job.network == SANDBOX_NET_ALLOW)
                r = in_namespace(w, CLONE_NEWNET, s->net_ns, setup_egress, NULL);
        /* Held, they would keep the sandbox's mounts (the job's workspace
         * among them) alive after its last process. */
        close(s->mnt_ns);
        close(s->net_ns);
        s->mnt_ns = s->net_ns = -1;
        if (r >= 0)
                r = wait_go(w);
        if (r < 0)
                return -1;
        struct sbx_msg m = { .type = SBX_MSG_START };
        /* The job's time starts now: setup is not the job's to pay for. */
        clock_gettime(CLOCK_MONOTONIC, &s->start);
        s->ready = true;
        if (sbx_sup_arm_timer(s) < 0 || sbx_msg_send(s->job_sock, &m, -1) < 0)
                return job_process_gone(s, errno);
        return 0;
}

static int run_job(struct warm *w, int fds[4])
{
        struct supervisor *s = &w->s;
        clock_gettime(CLOCK_MONOTONIC, &s->got_job);
        w->status_fd = fds[3];
        int r = send_job(w, fds);
        if (r >= 0)
                r = read_options(w, fds[0]);
        if (r >= 0)
                r = check_fits(w);
        if (r >= 0) {
                w->job.host = w->wc->host; /* held since it was made */
                s->c = &w->job;
                /* The namespace made ahead, if any, maps 0:0. */
                r = sbx_sup_prepare_dirs(s, 0, 0, false);
        }
        if (r >= 0)
                r = apply_limits(w);
        /* The job's timeout covers its setup too, as in the cold path. */
        if (r >= 0 && sbx_sup_arm_timer(s) < 0)
                r = -1;
        if (r >= 0)
                r = start_job(w);
        /* The job's copies are in the sandbox now; stderr is kept for what
         * the helper itself has to say there, as a cold helper does. */
        close(fds[0]);
        close(fds[1]);
        if (r < 0)
                sbx_sup_kill(s);
        sbx_sup_loop(s);
        struct sandbox_status st = { 0 };
        sbx_sup_set_wall(s, &st);
        int code = sbx_sup_finish(s, &st);
        sbx_report(w->status_fd, fds[2], &st);
        w->status_fd = -1;
        close(fds[2]);
        sandbox_status_done(&st);
        return code;
}

/* Where in_namespace comes back to.  Every job enters the mount
 * namespace: a sandbox that cannot come back is not usable at all. */
static int open_home(struct warm *w)
{
        w->home_mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (w->home_mnt >= 0)
                w->home_net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        if (w->home_net >= 0)
                w->home_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (w->home_cwd >= 0)
                return 0;
        sbx_sup_fail(&w->s, SBX_STEP_INTERNAL, errno, NULL,
                     "cannot open the supervisor's own namespaces to come back to");
        return -1;
}

int sbx_supervise_warm(const struct helper_config *c)
{
        struct warm w = { .s = SBX_SUPERVISOR_INIT(c),
                          .wc = c,
                          .ctl = c->control_fd,
                          .status_fd = -1,
                          .go_fd = -1,
                          .home_mnt = -1,
                          .home_net = -1,
                          .home_cwd = -1 };
        struct supervisor *s = &w.s;
        int sp[2] = { -1, -1 }, jp[2] = { -1, -1 };
        int code = 0, fds[4];
        if (sbx_warm_prepare(&w) < 0) {
                code = report_warm_failure(&w);
        } else if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0 ||
                   socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, jp) < 0) {
                sbx_sup_fail(s, SBX_STEP_INTERNAL, errno, NULL, "socketpair");
                code = report_warm_failure(&w);
        } else {
                s->sock = sp[0];
                s->job_sock = jp[0];
                int r = sbx_sup_start_child(s, &sp[1], &jp[1]);
                if (r >= 0)
                        sbx_warm_make_idmap_ahead(&w);
                r = r < 0 ? 0 : sbx_warm_wait_built(&w);
                /* Still at the build's lower priority. */
                if (r > 0 && open_home(&w) < 0)
                        r = 0;
                if (r > 0 && sbx_warm_restore_priority(&w) < 0)
                        r = 0;
                if (r > 0)
                        sbx_warm_note_cpu_base(&w);
                struct sbx_msg ready = { .type = SBX_MSG_WARM };
                if (r > 0 && sbx_msg_send(w.ctl, &ready, -1) < 0)
                        r = -1;
                if (r > 0)
                        r = wait_job(&w, fds);
                if (r > 0)
                        code = run_job(&w, fds);
                else if (r == 0)
                        code = report_warm_failure(&w);
                reap(s); /* dropped before a job: nothing to report */
        }
        if (sp[1] >= 0)
                close(sp[1]);
        if (s->sock < 0 && sp[0] >= 0)
                close(sp[0]);
        if (jp[1] >= 0)
                close(jp[1]);
        if (s->job_sock < 0 && jp[0] >= 0)
                close(jp[0]);
        int *owned[] = { &w.status_fd, &w.go_fd, &w.home_mnt, &w.home_net, &w.home_cwd };
        for (size_t i = 0; i < ELEMENTSOF(owned); i++)
                bc_closep(owned[i]);
        sbx_sup_done(s);
        if (w.have_job)
                helper_config_done(&w.job);
        free(w.job_argv);
        free(w.blob);
        return code;
}
