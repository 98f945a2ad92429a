/* A warm sandbox's build, before there is a job (see warm.c): the
 * cgroup with the warm options' limits, the job's user namespace and the
 * idmap one made ahead, the wait for the sandbox's init to report it
 * built, and what is set once it is: the worker's priority back, and the
 * CPU time the build used, which is not the job's. */
#include "sandbox/warm-internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/supervise-dirs-internal.h"
#include "sandbox/supervise-start-internal.h"

/* A warm sandbox that is not built by then is stuck (a hung bind source,
 * an overloaded host): it fails rather than holding a pool slot. */
#define WARM_SETUP_TIMEOUT_S 30

int sbx_warm_prepare(struct warm *w)
{
        struct supervisor *s = &w->s;
        struct bc_error err = BC_ERROR_INIT;
        sbx_seccomp_builtin(&s->seccomp);
        if (sbx_cgroup_create_unlimited(&s->cg, w->wc->cgroup_parent, &err) < 0) {
                snprintf(w->cg_error, sizeof(w->cg_error), "%s", bc_error_message(&err));
                bc_error_clear(&err);
        }
        /* Before any process is in it.  Should it fail, the job's handoff
         * writes them, and fails the way a cold start would. */
        w->preset = sbx_warm_limits_of(w->wc);
        if (!w->cg_error[0])
                w->have_preset = sbx_cgroup_limit(&s->cg, &w->preset, &err) == 0;
        bc_error_clear(&err);
        int n = sbx_cgroup_self_attach_fds(&s->cg, s->cg_fds, ELEMENTSOF(s->cg_fds));
        s->n_cg_fds = n > 0 ? (size_t)n : 0;
        /* Before the clone: the child inherits it, to enter as it locks down. */
        return sbx_sup_make_job_userns(s) < 0 ? -1 : sbx_sup_prepare_signals(s);
}

/* The worker's job directories are root's: the namespace that maps root
 * to the job's ids is made now (a fork), not at handoff.  After the
 * clone, which hands s->idmap_fd to a cold child and closes it. */
void sbx_warm_make_idmap_ahead(struct warm *w)
{
        struct supervisor *s = &w->s;
        if (geteuid() != 0)
                return;
        s->idmap_fd = sbx_sup_make_idmap(s, 0, 0);
        if (s->idmap_fd < 0)
                s->idmap_fd = -1; /* made at handoff instead, or the job fails there */
}

/* Waits until the child has built its root (1), or failed or died (0);
 * or the worker dropped us (-1: SIGTERM, or the control socket closed). */
int sbx_warm_wait_built(struct warm *w)
{
        struct supervisor *s = &w->s;
        struct itimerspec it = { .it_value = { WARM_SETUP_TIMEOUT_S, 0 } };
        timerfd_settime(s->timerfd, 0, &it, NULL);
        while (!s->warm_built && !s->failed && !s->reaped && !s->sock_eof) {
                struct pollfd p[4] = {
                        { .fd = s->sock, .events = POLLIN },
                        { .fd = s->sigfd, .events = POLLIN },
                        { .fd = s->timerfd, .events = POLLIN },
                        { .fd = w->ctl, .events = 0 },
                };
                if (poll(p, 4, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        sbx_sup_fail(s, SBX_STEP_INTERNAL, errno, NULL, "poll failed");
                        return 0;
                }
                if (p[0].revents)
                        sbx_sup_on_message(s);
                if (p[1].revents) {
                        sbx_sup_on_signal(s);
                        if (s->cancelled)
                                return -1;
                }
                if (p[2].revents) {
                        sbx_sup_fail(s, SBX_STEP_INTERNAL, ETIMEDOUT, NULL,
                                     "the warm sandbox was not ready in time");
                        return 0;
                }
                if (p[3].revents & (POLLHUP | POLLERR))
                        return -1;
        }
        struct itimerspec off = { 0 };
        timerfd_settime(s->timerfd, 0, &off, NULL);
        return s->warm_built && !s->failed ? 1 : 0;
}

/* The job's CPU time starts once the sandbox is built: the warm-up is not
 * its.  Read then, not at the handoff (two cgroup files on v1, ~40 us of
 * it): the init and the job's process are asleep by then, or a few
 * microseconds from it, until the job. */
void sbx_warm_note_cpu_base(struct warm *w)
{
        struct cg_stats cs;
        sbx_cgroup_stats(&w->s.cg, &cs);
        w->s.cpu_base_us = cs.have_cpu ? cs.cpu_us : 0;
}

/* The worker's pool made this sandbox at a lower priority (background
 * work, worker/exec/sandbox_pool.c); once it is built, it waits at the
 * worker's: the handoff that wakes it, and the job after, must not queue
 * behind the pool making the next sandbox (one traced handoff waited
 * 2.3 ms for a CPU that way).  This process group is ours (the worker
 * spawns us in our own): it holds the sandbox's init and the job's
 * process, which has not made its own session yet, all asleep now. */
int sbx_warm_restore_priority(struct warm *w)
{
        errno = 0;
        int nice = getpriority(PRIO_PROCESS, (id_t)getppid());
        if (nice == -1 && errno) {
                sbx_sup_fail(&w->s, SBX_STEP_INTERNAL, errno, NULL,
                             "getpriority: the job's priority (the worker's)");
                return -1;
        }
        /* Made at the worker's own (a pool without CAP_SYS_NICE does not
         * lower it): nothing to put back, and without that capability
         * the init's and job process's (another uid) could not be set. */
        errno = 0;
        int own = getpriority(PRIO_PROCESS, 0);
        if (own == nice && !errno)
                return 0;
        if (setpriority(PRIO_PGRP, 0, nice) < 0) {
                sbx_sup_fail(&w->s, SBX_STEP_INTERNAL, errno, NULL,
                             "setpriority: the job's priority (the worker's)");
                return -1;
        }
        return 0;
}
