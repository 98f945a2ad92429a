/* The supervising side of boxcar-sandbox: clones the child into new
 * namespaces, maps its ids, makes the cgroup (and, as root, the idmap and
 * network namespaces) while the child builds its root, hands them over,
 * then waits on one poll loop for the child's messages, signals (SIGCHLD,
 * and SIGTERM/SIGINT/SIGHUP meaning "cancel") and the wall-clock timer.  The
 * timeout and cancel paths kill the sandbox's init with SIGKILL: the pid
 * namespace then takes every process of the job with it, stopped or not.
 * Afterwards it fills the status.  /workspace is the caller's directory,
 * bound in place: there is nothing to copy back, so the job's time is
 * all there is.
 *
 * This file is the cold supervisor's order; the pieces it runs are
 * supervisor.c's (failures, the loop, the status), supervise-start.c's
 * (the clone) and supervise-dirs.c's (the job's directories, the idmap
 * namespace), which warm.c runs in a warm sandbox's order. */
#include "sandbox/supervise-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/cgroup-internal.h"
#include "sandbox/netns-internal.h"
#include "sandbox/supervise-dirs-internal.h"
#include "sandbox/supervise-start-internal.h"
#include "sandbox/supervisor-internal.h"

static int prepare(struct supervisor *s)
{
        /* Made here, the idmap and network namespaces would be made
         * before the child could start on its root; as root we make them
         * meanwhile. */
        if (sbx_sup_prepare_dirs(s, (uid_t)-1, (gid_t)-1, true) < 0)
                return -1;
        sbx_seccomp_builtin(&s->seccomp);
        s->netns_later = geteuid() == 0 && s->c->network == SANDBOX_NET_NONE;
        return sbx_sup_prepare_signals(s);
}

/* While the child builds its root (on another CPU, given one), the
 * idmap namespace (sent at once), the cgroup and, see prepare, the
 * network namespace; the second GO hands those two over (on_ready).  The
 * child moves itself into the cgroup then (cheaper than being moved, see
 * cgroup-internal.h), before anything of the job runs or is written: what
 * its setup wrote into the root's tmpfs, a few pages of /etc, is charged
 * to us. */
static void prepare_behind(struct supervisor *s)
{
        const struct helper_config *c = s->c;
        if (s->idmap_later) {
                /* First: the child needs it as soon as its base root is
                 * built, to attach the workspace. */
                int fd = sbx_sup_make_workspace_idmap(s, s->idmap_owner, s->idmap_group);
                if (fd >= 0) {
                        struct sbx_msg m = { .type = SBX_MSG_GO };
                        if (sbx_msg_send(s->sock, &m, fd) < 0)
                                sbx_sup_fail(s, SBX_STEP_INTERNAL, errno, NULL, "child vanished");
                        close(fd);
                }
                if (s->failed) {
                        sbx_sup_kill(s);
                        return;
                }
        }
        /* The job's user namespace goes with the second GO: init only
         * enters it as it locks down. */
        if (sbx_sup_make_job_userns(s) < 0) {
                sbx_sup_kill(s);
                return;
        }
        if (s->netns_later) {
                int r = sbx_netns_make(&s->net_ns);
                if (r < 0) {
                        sbx_sup_fail(s, SBX_STEP_NETWORK, -r, NULL,
                                     "cannot make the sandbox's network namespace");
                        sbx_sup_kill(s);
                        return;
                }
        }
        struct bc_error err = BC_ERROR_INIT;
        struct cg_limits l = { .memory_mb = c->memory_mb,
                               .cpus = c->cpus,
                               .pids = c->pids ? c->pids + 1 : 0 /* + init */ };
        if (sbx_cgroup_create(&s->cg, &l, c->cgroup_parent, &err) < 0) {
                sbx_sup_fail(s, SBX_STEP_CGROUP, err.errnum, NULL, bc_error_message(&err));
                bc_error_clear(&err);
                sbx_sup_kill(s);
                return;
        }
        int n = sbx_cgroup_self_attach_fds(&s->cg, s->cg_fds, ELEMENTSOF(s->cg_fds));
        s->n_cg_fds = n > 0 ? (size_t)n : 0;
        if (s->cg.ops && s->n_cg_fds == 0)
                sbx_sup_attach_by_pid(s);
}

/* The job's stdout and stderr are this process's own: once the job is
 * over, the worker's pipes must see their EOF now, not after the teardown. */
static void release_job_stdio(void)
{
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null < 0)
                return;
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        close(null);
}

static int release_mount_ns_main(void *fd)
{
        close((int)(intptr_t)fd);
        return 0;
}

/* Drops the mount namespace held since GO (hold_mount_ns) from a clone
 * that shares our memory (no page tables to copy): the last close of it
 * does the namespace's teardown in the process that closes it, that
 * clone, while we read the cgroup and remove it on another CPU (see
 * sbx_sup_move_off_new_childs_cpu).  The clone has its own copy of our
 * fds, and ours is closed first (the clone waits on our CPU until we
 * move off), so its close is the last one; killed, its exit closes it all
 * the same, before we can reap it.  Called after init is reaped; returns
 * the clone's pid, or -1 when there was nothing to release or it was done
 * here.  The clone is not reaped before sbx_sup_finish, whose children's
 * rusage must not count it (it shares our memory). */
static pid_t release_mount_ns(struct supervisor *s)
{
        if (s->mnt_ns < 0)
                return -1;
        static char stack[16384] __attribute__((aligned(16)));
        pid_t pid = clone(release_mount_ns_main, stack + sizeof(stack), CLONE_VM | SIGCHLD,
                          (void *)(intptr_t)s->mnt_ns);
        close(s->mnt_ns);
        s->mnt_ns = -1;
        if (pid > 0)
                sbx_sup_move_off_new_childs_cpu();
        return pid;
}

int sbx_supervise(const struct helper_config *c)
{
        struct sandbox_status st = { 0 }, *ret = &st;
        struct supervisor s = SBX_SUPERVISOR_INIT(c);
        clock_gettime(CLOCK_MONOTONIC, &s.got_job);
        int sp[2] = { -1, -1 };
        if (prepare(&s) >= 0) {
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
                        sbx_sup_fail(&s, SBX_STEP_INTERNAL, errno, NULL, "socketpair");
                } else {
                        s.sock = sp[0];
                        if (sbx_sup_start_child(&s, &sp[1], NULL) >= 0) {
                                prepare_behind(&s);
                                sbx_sup_loop(&s);
                        }
                }
        }
        pid_t releasing = release_mount_ns(&s);
        sbx_sup_set_wall(&s, ret);
        int code = sbx_sup_finish(&s, ret);
        if (sp[1] >= 0)
                close(sp[1]);
        /* Before the report, while the namespace is let go: the report
         * waits for that (the job's mounts, its workspace among them, must
         * be gone by then), and removing the cgroup takes about as long. */
        sbx_cgroup_destroy(&s.cg);
        while (releasing > 0 && waitpid(releasing, NULL, 0) < 0 && errno == EINTR)
                ;
        sbx_report(c->status_fd, STDERR_FILENO, ret);
        sandbox_status_done(ret);
        release_job_stdio();
        sbx_sup_done(&s);
        return code;
}
