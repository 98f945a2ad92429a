/* A supervisor (see supervisor-internal.h): what the cold supervisor
 * (supervise.c) and a warm one (warm.c) both run on it.  Failures (the
 * first is the cause), the poll loop over the child's messages, signals
 * (SIGCHLD, and SIGTERM/SIGINT/SIGHUP meaning "cancel") and the
 * wall-clock timer, whose timeout and cancel paths kill the sandbox's
 * init with SIGKILL (the pid namespace then takes every process of the
 * job with it, stopped or not), and the status at the end. */
#include "sandbox/supervisor-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "sandbox/cgroup-internal.h"
#include "sandbox/child-internal.h"
#include "sandbox/egress-internal.h"

void sbx_sup_fail(struct supervisor *s, enum sbx_step step, int e, const char *path,
                  const char *msg)
{
        if (s->failed)
                return; /* the first failure is the cause */
        sbx_msg_error(&s->failure, SBX_MSG_SETUP_ERROR, step, e, path, "%s", msg);
        s->failed = true;
}

int sbx_sup_arm_timer(struct supervisor *s)
{
        if (s->c->timeout_s <= 0)
                return 0;
        double whole;
        double frac = modf(s->c->timeout_s, &whole);
        struct itimerspec it = { .it_value = { (time_t)whole, (long)(frac * 1e9) } };
        if (it.it_value.tv_sec == 0 && it.it_value.tv_nsec == 0)
                it.it_value.tv_nsec = 1;
        return timerfd_settime(s->timerfd, 0, &it, NULL);
}

void sbx_sup_kill(struct supervisor *s)
{
        if (s->child > 0 && !s->reaped)
                kill(s->child, SIGKILL);
}

/* /proc/PID/ns/NS, opened read-only (-1 and errno on failure); its path
 * is left in path for an error message. */
int sbx_sup_open_ns_of(pid_t pid, const char *ns, char path[static 64])
{
        snprintf(path, 64, "/proc/%d/ns/%s", (int)pid, ns);
        return open(path, O_RDONLY | O_CLOEXEC);
}

int sbx_sup_write_map(pid_t pid, const char *file, const char *data)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
        _cleanup_fd_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, data, strlen(data));
        return n == (ssize_t)strlen(data) ? 0 : (n < 0 ? -errno : -EIO);
}

/* Cold, as root: the sandbox's mount namespace, held from GO on so that
 * init's exit does not tear it down.  That teardown (an expedited RCU
 * grace period, then every superblock's shutdown: 0.15-0.3 ms traced)
 * was on the way from the job's exit to our report; release_mount_ns
 * does it beside our own.  Opened after GO, off the way to the job: as
 * root we may open init's namespaces even once it is not dumpable (an
 * unprivileged supervisor may not, and leaves it to init).  ENOENT, init
 * already gone, leaves it to init too. */
static void hold_mount_ns(struct supervisor *s)
{
        if (s->c->warm || s->failed || geteuid() != 0)
                return;
        char p[64];
        s->mnt_ns = sbx_sup_open_ns_of(s->child, "mnt", p);
}

/* GO hands over what the supervisor made while the child built its root
 * (see prepare_behind): the cgroup's "tasks" files, the network
 * namespace. */
static void on_ready(struct supervisor *s)
{
        if (s->failed)
                return; /* the cgroup step failed: the child is being killed */
        struct sbx_msg go = { .type = SBX_MSG_GO, .wstatus = s->cg.ops ? SBX_GO_CGROUP : 0 };
        int fds[ELEMENTSOF(s->cg_fds) + 2];
        size_t n = s->n_cg_fds;
        memcpy(fds, s->cg_fds, n * sizeof(int));
        if (s->job_userns >= 0) {
                fds[n++] = s->job_userns;
                go.wstatus |= SBX_GO_USERNS;
        }
        if (s->net_ns >= 0) {
                fds[n++] = s->net_ns;
                go.wstatus |= SBX_GO_NETNS;
        }
        /* The job's time starts now: setup is not the job's to pay for. */
        clock_gettime(CLOCK_MONOTONIC, &s->start);
        s->ready = true;
        if (sbx_sup_arm_timer(s) < 0 || sbx_msg_send_fds(s->sock, &go, fds, n) < 0) {
                sbx_sup_fail(s, SBX_STEP_INTERNAL, errno, NULL, "cannot start the job");
                sbx_sup_kill(s);
        }
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        s->n_cg_fds = 0;
        s->net_ns = -1;
        s->job_userns = -1;
        hold_mount_ns(s);
}

void sbx_sup_on_message(struct supervisor *s)
{
        struct sbx_msg m;
        int fds[SBX_MSG_FDS_MAX];
        size_t n_fds = 0;
        int r = sbx_msg_recv_fds(s->sock, &m, fds, ELEMENTSOF(fds), &n_fds);
        if (r <= 0) {
                s->sock_eof = true; /* EOF, or EAGAIN once drained */
                return;
        }
        switch (m.type) {
        case SBX_MSG_READY:
                if (!s->ready)
                        on_ready(s);
                break;
        case SBX_MSG_SETUP_ERROR:
                sbx_sup_fail(s, (enum sbx_step)m.step, m.errnum, m.path, m.message);
                break;
        case SBX_MSG_EXEC_ERROR:
                s->exec_failed = true;
                s->failure = m;
                break;
        case SBX_MSG_WARM:
                s->warm_built = true;
                break;
        case SBX_MSG_JOB_STATUS:
                s->job_reported = true;
                s->job_wstatus = m.wstatus;
                s->job_cpu_us = m.cpu_us;
                s->job_rss_kb = m.max_rss_kb;
                break;
        case SBX_MSG_EGRESS:
                /* Once, for a job that asked (the sockets are its rules'). */
                if (s->c->network == SANDBOX_NET_ALLOW && !s->egress) {
                        s->egress = sbx_egress_new(s->c, fds, n_fds, &s->cg);
                        n_fds = 0;
                        if (!s->egress) {
                                sbx_sup_fail(s, SBX_STEP_NETWORK, ENOMEM, NULL,
                                             "cannot start the egress proxy");
                                sbx_sup_kill(s);
                        }
                }
                break;
        default:
                break;
        }
        for (size_t i = 0; i < n_fds; i++)
                close(fds[i]);
}

int sbx_sup_placeholder_main(void *supervisor_pid)
{
        /* Killed with the supervisor: one SIGKILLed between the clone and
         * its kill of the placeholder (chaos's kill -9 found it) left the
         * placeholder paused forever, reparented, as the job's host ids. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
            getppid() != (pid_t)(intptr_t)supervisor_pid)
                _exit(0);
        for (;;)
                pause();
        return 0;
}

/* The idmap namespace's placeholder process, killed when the namespace
 * was made (sbx_sup_make_idmap), once it is gone: flags 0 waits for it. */
void sbx_sup_reap_placeholder(pid_t *pid, int flags)
{
        if (*pid <= 0)
                return;
        pid_t r;
        while ((r = waitpid(*pid, NULL, flags)) < 0 && errno == EINTR)
                ;
        if (r != 0)
                *pid = 0;
}

void sbx_sup_reap_idmap_child(struct supervisor *s, int flags)
{
        sbx_sup_reap_placeholder(&s->idmap_child, flags);
        sbx_sup_reap_placeholder(&s->userns_child, flags);
}

void sbx_sup_on_signal(struct supervisor *s)
{
        struct signalfd_siginfo si;
        while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                if (si.ssi_signo == SIGCHLD) {
                        sbx_sup_reap_idmap_child(s, WNOHANG);
                        if (waitpid(s->child, &s->child_wstatus, WNOHANG) == s->child)
                                s->reaped = true;
                } else {
                        s->cancelled = true;
                        sbx_sup_kill(s);
                }
        }
}

void sbx_sup_on_timer(struct supervisor *s)
{
        uint64_t n;
        if (read(s->timerfd, &n, sizeof(n)) == (ssize_t)sizeof(n)) {
                s->timed_out = true;
                sbx_sup_kill(s);
        }
}

void sbx_sup_loop(struct supervisor *s)
{
        while (!s->reaped) {
                struct pollfd p[3 + EGRESS_MAX_POLL] = {
                        { .fd = s->sock_eof ? -1 : s->sock, .events = POLLIN },
                        { .fd = s->sigfd, .events = POLLIN },
                        { .fd = s->timerfd, .events = POLLIN },
                };
                size_t n_egress = s->egress ? sbx_egress_poll(s->egress, p + 3) : 0;
                if (poll(p, 3 + n_egress, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        sbx_sup_fail(s, SBX_STEP_INTERNAL, errno, NULL, "poll failed");
                        sbx_sup_kill(s);
                        /* Block on the child instead; it is dead or dying. */
                        while (waitpid(s->child, &s->child_wstatus, 0) < 0 && errno == EINTR)
                                ;
                        s->reaped = true;
                        break;
                }
                if (p[0].revents)
                        sbx_sup_on_message(s);
                if (p[1].revents)
                        sbx_sup_on_signal(s);
                if (p[2].revents)
                        sbx_sup_on_timer(s);
                if (s->egress)
                        sbx_egress_dispatch(s->egress, p + 3, n_egress);
        }
        /* Messages sent just before init exited are still queued. */
        fcntl(s->sock, F_SETFL, O_NONBLOCK);
        while (!s->sock_eof)
                sbx_sup_on_message(s);
        if (s->egress)
                sbx_egress_drain(s->egress, EGRESS_DRAIN_MS);
}

/* Child exits, and the cancels (SIGTERM, the worker's parent-death
 * signal among them): read from the signalfd, blocked otherwise. */
static void supervisor_signals(sigset_t *set)
{
        sigemptyset(set);
        int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT };
        for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
                sigaddset(set, sigs[i]);
}

void sbx_sup_block_signals(void)
{
        sigset_t set;
        supervisor_signals(&set);
        sigprocmask(SIG_BLOCK, &set, NULL);
}

int sbx_sup_prepare_signals(struct supervisor *s)
{
        sigset_t set;
        supervisor_signals(&set);
        sigprocmask(SIG_BLOCK, &set, NULL);
        s->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        s->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (s->sigfd < 0 || s->timerfd < 0) {
                sbx_sup_fail(s, SBX_STEP_INTERNAL, errno, NULL, "signalfd/timerfd");
                return -1;
        }
        return 0;
}

int sbx_sup_finish(struct supervisor *s, struct sandbox_status *st)
{
        struct cg_stats cs;
        sbx_cgroup_kill_all(&s->cg);
        sbx_cgroup_stats(&s->cg, &cs);
        struct rusage ru;
        getrusage(RUSAGE_CHILDREN, &ru);
        st->oom_killed = cs.oom_kills > 0;
        st->timed_out = s->timed_out;
        st->cancelled = s->cancelled;
        st->cpu_ms = cs.have_cpu
                             ? (cs.cpu_us > s->cpu_base_us ? cs.cpu_us - s->cpu_base_us : 0) / 1000
                             : s->job_cpu_us / 1000;
        st->max_rss_kb = (uint64_t)ru.ru_maxrss > s->job_rss_kb ? (uint64_t)ru.ru_maxrss
                                                                : s->job_rss_kb;
        if (s->egress)
                sbx_egress_status(s->egress, st);
        if (s->failed) {
                st->setup_failed = true;
                st->setup_errno = s->failure.errnum;
                st->setup_step = strdup(sbx_step_name((enum sbx_step)s->failure.step));
                st->setup_path = s->failure.path[0] ? strdup(s->failure.path) : NULL;
                st->message = strdup(s->failure.message);
                st->exit_code = sbx_step_exit_code((enum sbx_step)s->failure.step);
                return st->exit_code;
        }
        if (s->job_reported && !s->timed_out && !s->cancelled) {
                int w = s->job_wstatus;
                st->signal = WIFSIGNALED(w) ? WTERMSIG(w) : 0;
                st->exit_code = WIFSIGNALED(w) ? 128 + st->signal : WEXITSTATUS(w);
        } else if (!s->job_reported && !s->timed_out && !s->cancelled && !st->oom_killed &&
                   s->reaped && WIFSIGNALED(s->child_wstatus)) {
                /* Init died of a signal that neither we nor a limit sent.
                 * Nothing inside the sandbox can signal its init (the
                 * kernel drops them), so it came from the host: an
                 * operator's kill, a crash.  Not the job's doing. */
                st->sandbox_killed = true;
                st->signal = WTERMSIG(s->child_wstatus);
                st->exit_code = 128 + st->signal;
        } else {
                /* Killed by us (timeout, cancel) or init died (OOM): the
                 * job ended by SIGKILL either way. */
                st->signal = SIGKILL;
                st->exit_code = 128 + SIGKILL;
        }
        if (s->exec_failed) {
                st->exec_failed = true;
                st->setup_errno = s->failure.errnum;
                st->setup_path = strdup(s->failure.path);
                st->message = strdup(s->failure.message);
        }
        return st->exit_code;
}

void sbx_sup_done(struct supervisor *s)
{
        sbx_sup_reap_idmap_child(s, 0);
        sbx_cgroup_destroy(&s->cg);
        sbx_seccomp_prog_done(&s->seccomp);
        sbx_egress_free(s->egress); /* the job is over: its connections end */
        s->egress = NULL;
        int *fds[] = { &s->sock,     &s->sigfd,  &s->timerfd, &s->idmap_fd,
                       &s->job_sock, &s->mnt_ns, &s->net_ns,  &s->job_userns };
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                if (*fds[i] >= 0) {
                        close(*fds[i]);
                        *fds[i] = -1;
                }
        for (size_t i = 0; i < s->n_cg_fds; i++)
                close(s->cg_fds[i]);
        s->n_cg_fds = 0;
}

void sbx_sup_set_wall(const struct supervisor *s, struct sandbox_status *ret)
{
        if (!s->ready)
                return;
        ret->setup_us = (uint64_t)((s->start.tv_sec - s->got_job.tv_sec) * 1000000 +
                                   (s->start.tv_nsec - s->got_job.tv_nsec) / 1000);
        ret->wall_ms = bc_mono_ms() -
                       ((uint64_t)s->start.tv_sec * 1000u + (uint64_t)s->start.tv_nsec / 1000000u);
}
