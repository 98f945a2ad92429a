/* Starting the sandbox (see supervise-start-internal.h): the clone into
 * new namespaces, the ids mapped, the first GO. */
#include "sandbox/supervise-start-internal.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/securebits.h>

#include "sandbox/cgroup-internal.h"
#include "sandbox/child-internal.h"

/* Unprivileged: the job's uid/gid inside map to ours outside, one id each
 * (all an unprivileged process may map); setgroups must be denied first. */
static int map_ids(struct supervisor *s)
{
        char buf[64];
        int r = sbx_sup_write_map(s->child, "setgroups", "deny");
        snprintf(buf, sizeof(buf), "%u %u 1\n", (unsigned)s->c->uid, (unsigned)geteuid());
        if (r >= 0)
                r = sbx_sup_write_map(s->child, "uid_map", buf);
        snprintf(buf, sizeof(buf), "%u %u 1\n", (unsigned)s->c->gid, (unsigned)getegid());
        if (r >= 0)
                r = sbx_sup_write_map(s->child, "gid_map", buf);
        return r;
}

/* Runs clone(CLONE_NEWUSER) as the job's host ids, so that they own the
 * namespace: the kernel charges what the job's processes count per user
 * (processes, inotify instances, ...) in a namespace to its owner's
 * counters in the parent namespace too.  Made by root, every job's would
 * add up in root's.  SECBIT_NO_SETUID_FIXUP keeps our capabilities over
 * the switch (to come back, and for distributions that restrict user
 * namespaces to privileged callers).  The namespace is opened before we
 * come back: as the placeholder's own uid we need no CAP_SYS_PTRACE (the
 * worker's unit does not grant it).  What a uid change resets besides
 * (dumpable, the parent-death signal) is put back.  Returns the
 * placeholder's pid (*ret_fd: its namespace, or -1 with errno), or -1. */
static pid_t clone_as(struct supervisor *s, uid_t uid, gid_t gid, int *ret_fd)
{
        static char stack[16384] __attribute__((aligned(16)));
        int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
        int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
        pid_t parent = getppid();
        *ret_fd = -1;
        if (bits < 0 || prctl(PR_SET_SECUREBITS, bits | SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0)
                return -1;
        uid_t ru, eu, su;
        gid_t rg, eg, sg;
        if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0)
                return -1;
        sbx_sup_reap_placeholder(&s->userns_child, 0);
        pid_t pid = -1;
        int e = 0;
        if (setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0) {
                e = errno;
        } else {
                /* The uid change made us (and the placeholder, which
                 * shares our memory) not dumpable: its /proc files would
                 * be root's again. */
                (void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
                pid = clone(sbx_sup_placeholder_main, stack + sizeof(stack),
                            CLONE_NEWUSER | CLONE_VM | SIGCHLD, (void *)(intptr_t)getpid());
                e = errno;
                char path[64];
                if (pid > 0 && (*ret_fd = sbx_sup_open_ns_of(pid, "user", path)) < 0)
                        e = errno;
        }
        /* Not coming back to root would leave this supervisor unable to
         * tear the sandbox down. */
        if (setresuid(ru, eu, su) < 0 || setresgid(rg, eg, sg) < 0)
                abort();
        (void)prctl(PR_SET_SECUREBITS, bits, 0, 0, 0);
        (void)prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0);
        if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0 || getppid() != parent)
                kill(getpid(), SIGTERM); /* blocked: read as a cancel */
        errno = e;
        return pid;
}

int sbx_sup_make_job_userns(struct supervisor *s)
{
        const struct helper_config *c = s->c;
        if (!c->host.own)
                return 0;
        int fd = -1;
        pid_t pid = clone_as(s, c->host.uid, c->host.gid, &fd);
        int r = pid < 0 || fd < 0 ? -errno : 0;
        /* Exactly the job's ids, nothing else: root and every other id of
         * the host stay unmapped (the overflow id) inside.  setgroups is
         * denied, so no process in it can ever drop a group. */
        char map[64];
        if (r >= 0)
                r = sbx_sup_write_map(pid, "setgroups", "deny");
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)c->uid, (unsigned)c->host.uid);
        if (r >= 0)
                r = sbx_sup_write_map(pid, "uid_map", map);
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)c->gid, (unsigned)c->host.gid);
        if (r >= 0)
                r = sbx_sup_write_map(pid, "gid_map", map);
        if (pid > 0) {
                kill(pid, SIGKILL);
                s->userns_child = pid;
        }
        if (r < 0) {
                if (fd >= 0)
                        close(fd);
                sbx_sup_fail(s, SBX_STEP_USERNS, -r, NULL,
                             "cannot make the user namespace of the job's host ids");
                return -1;
        }
        s->job_userns = fd;
        return 0;
}

/* v2 (or a v1 whose tasks files could not be opened): move the child by
 * pid, before it makes its cgroup namespace and forks the job. */
void sbx_sup_attach_by_pid(struct supervisor *s)
{
        struct bc_error err = BC_ERROR_INIT;
        if (sbx_cgroup_attach(&s->cg, s->child, &err) < 0) {
                sbx_sup_fail(s, SBX_STEP_CGROUP, err.errnum, NULL, bc_error_message(&err));
                bc_error_clear(&err);
                sbx_sup_kill(s);
        }
}

/* A warm supervisor attaches the job's trees itself, from inside the
 * sandbox's mount namespace, and sets up an allow-list in its network
 * namespace: opened now, while init is still ours to open (once locked
 * down it is not dumpable). */
static int open_namespaces(struct supervisor *s)
{
        char p[64];
        s->mnt_ns = sbx_sup_open_ns_of(s->child, "mnt", p);
        s->net_ns = s->mnt_ns >= 0 ? sbx_sup_open_ns_of(s->child, "net", p) : -1;
        if (s->net_ns < 0) {
                sbx_sup_fail(s, SBX_STEP_INTERNAL, errno, p,
                             "cannot open the sandbox's namespaces");
                sbx_sup_kill(s);
                return -1;
        }
        return 0;
}

/* A new child is queued on its parent's CPU, and a cold supervisor has
 * its own work to do meanwhile (prepare_behind): traced, the child
 * waited for that CPU (median 0.54 ms: an idle CPU does not pull a task
 * that just ran), then shared it with us while the other CPU idled, and
 * even a wakeup from it kept us on its CPU.  So we move ourselves to
 * another allowed CPU, then allow all of them again (which moves
 * nothing).  The child's own affinity, the job's, is not touched. */
void sbx_sup_move_off_new_childs_cpu(void)
{
        cpu_set_t allowed, others;
        if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0 || CPU_COUNT(&allowed) < 2)
                return;
        int cpu = sched_getcpu();
        if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed))
                return;
        others = allowed;
        CPU_CLR(cpu, &others);
        if (sched_setaffinity(0, sizeof(others), &others) == 0)
                (void)sched_setaffinity(0, sizeof(allowed), &allowed);
}

int sbx_sup_start_child(struct supervisor *s, int *sock_child, int *job_sock_child)
{
        unsigned long flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | SIGCHLD;
        if (s->c->network != SANDBOX_NET_HOST && !s->netns_later)
                flags |= CLONE_NEWNET;
        bool userns = geteuid() != 0;
        if (userns)
                flags |= CLONE_NEWUSER;
        /* Raw clone: fork semantics (same stack, copy-on-write) plus new
         * namespaces in one step; the helper is single-threaded. */
        pid_t pid = (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, 0);
        if (pid < 0) {
                sbx_sup_fail(s, SBX_STEP_CLONE, errno, NULL, strerror(errno));
                return -1;
        }
        if (pid == 0) {
                close(s->sock);
                close(s->sigfd);
                close(s->timerfd);
                struct child_args a = { .c = s->c,
                                        .prog = &s->seccomp,
                                        .sock = *sock_child,
                                        .n_cg_fds = s->n_cg_fds,
                                        .job_sock = job_sock_child ? *job_sock_child : -1,
                                        .netns_later = s->netns_later,
                                        .idmap_later = s->idmap_later,
                                        .userns = s->job_userns };
                memcpy(a.cg_fds, s->cg_fds, sizeof(a.cg_fds));
                sbx_child_main(&a);
        }
        s->child = pid;
        if (s->job_userns >= 0) {
                close(s->job_userns); /* the child's copy is the one used */
                s->job_userns = -1;
        }
        bool self_attaching = s->n_cg_fds > 0;
        for (size_t i = 0; i < s->n_cg_fds; i++)
                close(s->cg_fds[i]);
        s->n_cg_fds = 0;
        close(*sock_child);
        *sock_child = -1;
        if (job_sock_child) {
                close(*job_sock_child);
                *job_sock_child = -1;
        }
        if (userns && map_ids(s) < 0) {
                sbx_sup_fail(s, SBX_STEP_USERNS, errno, "/proc/self/uid_map", "cannot map ids");
                sbx_sup_kill(s);
                return 0;
        }
        if (s->c->warm && open_namespaces(s) < 0)
                return 0;
        /* Only a warm sandbox has its cgroup by now (a cold one's is made
         * behind the clone, see prepare_behind); its init never waits for
         * a second GO, so it is moved in before the first. */
        if (s->cg.ops && !self_attaching)
                sbx_sup_attach_by_pid(s);
        struct sbx_msg go = { .type = SBX_MSG_GO };
        if (!s->failed && sbx_msg_send(s->sock, &go, -1) < 0) {
                sbx_sup_fail(s, SBX_STEP_INTERNAL, errno, NULL, "child vanished");
                sbx_sup_kill(s);
                return 0;
        }
        /* Setup gets the job's timeout too: a hung bind source must not
         * hang the worker's slot forever. */
        if (sbx_sup_arm_timer(s) < 0)
                sbx_sup_fail(s, SBX_STEP_INTERNAL, errno, NULL, "timerfd_settime");
        if (!s->c->warm)
                sbx_sup_move_off_new_childs_cpu();
        return 0;
}
