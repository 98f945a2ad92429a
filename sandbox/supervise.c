/* The supervising side of boxcar-sandbox: clones the child into new
 * namespaces, maps its ids, makes the cgroup (and, as root, the idmap and
 * network namespaces) while the child builds its root, hands them over,
 * then waits on one poll loop for the child's messages, signals (SIGCHLD,
 * and SIGTERM/SIGINT/SIGHUP meaning "cancel") and the wall-clock timer.  The
 * timeout and cancel paths kill the sandbox's init with SIGKILL: the pid
 * namespace then takes every process of the job with it, stopped or not.
 * Afterwards it fills the status.  /workspace is the caller's directory,
 * bound in place: there is nothing to copy back, so the job's time is
 * all there is. */
#include "sandbox/supervise-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "sandbox/netns-internal.h"
#include "sandbox/cgroup-internal.h"
#include "sandbox/child-internal.h"
#include "sandbox/egress-internal.h"

void sbx_sup_fail(struct supervisor *s, enum sbx_step step, int e, const char *path,
                  const char *msg)
{
        if (s->failed)
                return;  /* the first failure is the cause */
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
static int open_ns_of(pid_t pid, const char *ns, char path[static 64])
{
        snprintf(path, 64, "/proc/%d/ns/%s", (int)pid, ns);
        return open(path, O_RDONLY | O_CLOEXEC);
}

static int write_map(pid_t pid, const char *file, const char *data)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
        _cleanup_fd_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, data, strlen(data));
        return n == (ssize_t)strlen(data) ? 0 : (n < 0 ? -errno : -EIO);
}

/* Unprivileged: the job's uid/gid inside map to ours outside, one id each
 * (all an unprivileged process may map); setgroups must be denied first. */
static int map_ids(struct supervisor *s)
{
        char buf[64];
        int r = write_map(s->child, "setgroups", "deny");
        snprintf(buf, sizeof(buf), "%u %u 1\n", (unsigned)s->c->uid, (unsigned)geteuid());
        if (r >= 0)
                r = write_map(s->child, "uid_map", buf);
        snprintf(buf, sizeof(buf), "%u %u 1\n", (unsigned)s->c->gid, (unsigned)getegid());
        if (r >= 0)
                r = write_map(s->child, "gid_map", buf);
        return r;
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
        s->mnt_ns = open_ns_of(s->child, "mnt", p);
}

/* GO hands over what the supervisor made while the child built its root
 * (see prepare_behind): the cgroup's "tasks" files, the network
 * namespace. */
static void on_ready(struct supervisor *s)
{
        if (s->failed)
                return;  /* the cgroup step failed: the child is being killed */
        struct sbx_msg go = { .type = SBX_MSG_GO, .wstatus = s->cg.ops ? SBX_GO_CGROUP : 0 };
        int fds[ELEMENTSOF(s->cg_fds) + 1];
        size_t n = s->n_cg_fds;
        memcpy(fds, s->cg_fds, n * sizeof(int));
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
        hold_mount_ns(s);
}

void sbx_sup_on_message(struct supervisor *s)
{
        struct sbx_msg m;
        int fds[SBX_MSG_FDS_MAX];
        size_t n_fds = 0;
        int r = sbx_msg_recv_fds(s->sock, &m, fds, ELEMENTSOF(fds), &n_fds);
        if (r <= 0) {
                s->sock_eof = true;  /* EOF, or EAGAIN once drained */
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
                        s->egress = sbx_egress_new(s->c, fds, n_fds);
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

/* The idmap namespace's placeholder process, killed when the namespace
 * was made (sbx_sup_make_idmap), once it is gone: flags 0 waits for it. */
static void reap_idmap_child(struct supervisor *s, int flags)
{
        if (s->idmap_child <= 0)
                return;
        pid_t r;
        while ((r = waitpid(s->idmap_child, NULL, flags)) < 0 && errno == EINTR)
                ;
        if (r != 0)
                s->idmap_child = 0;
}

void sbx_sup_on_signal(struct supervisor *s)
{
        struct signalfd_siginfo si;
        while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                if (si.ssi_signo == SIGCHLD) {
                        reap_idmap_child(s, WNOHANG);
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

/* v2 (or a v1 whose tasks files could not be opened): move the child by
 * pid, before it makes its cgroup namespace and forks the job. */
static void attach_by_pid(struct supervisor *s)
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
        s->mnt_ns = open_ns_of(s->child, "mnt", p);
        s->net_ns = s->mnt_ns >= 0 ? open_ns_of(s->child, "net", p) : -1;
        if (s->net_ns < 0) {
                sbx_sup_fail(s, SBX_STEP_INTERNAL, errno, p, "cannot open the sandbox's namespaces");
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
static void move_off_new_childs_cpu(void)
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
                struct child_args a = { .c = s->c, .prog = &s->seccomp, .sock = *sock_child,
                                        .n_cg_fds = s->n_cg_fds,
                                        .job_sock = job_sock_child ? *job_sock_child : -1,
                                        .netns_later = s->netns_later,
                                        .idmap_later = s->idmap_later };
                memcpy(a.cg_fds, s->cg_fds, sizeof(a.cg_fds));
                sbx_child_main(&a);
        }
        s->child = pid;
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
                attach_by_pid(s);
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
                move_off_new_childs_cpu();
        return 0;
}

/* The placeholder child of the idmap namespace below: it only has to
 * exist while its maps are written and the namespace is opened. */
static int idmap_child(void *arg)
{
        (void)arg;
        for (;;)
                pause();
        return 0;
}

/* A user namespace whose only mapping is owner -> the job's ids, for
 * idmapped binds (only its id maps matter: the process that made it is
 * gone when it is used).  Made here, by the single-threaded supervisor.
 * Its placeholder is killed, and reaped later (reap_idmap_child): it
 * has to run to die, and waiting for that here waited ~0.7 ms for a CPU
 * (the other one building the sandbox's root), most of a cold start's
 * idmap step and on its critical path. */
int sbx_sup_make_idmap(struct supervisor *s, uid_t owner, gid_t group)
{
        uid_t uid = s->c->uid;
        gid_t gid = s->c->gid;
        reap_idmap_child(s, 0);
        /* clone(CLONE_VM) instead of fork: the child shares our memory, so
         * no page table is copied (the dearest part of a fork on a
         * virtualised host), and it runs nothing but pause(). */
        static char stack[16384] __attribute__((aligned(16)));
        pid_t pid = clone(idmap_child, stack + sizeof(stack), CLONE_NEWUSER | CLONE_VM | SIGCHLD,
                          NULL);
        if (pid < 0)
                return -errno;
        char map[64];
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)owner, (unsigned)uid);
        int r = write_map(pid, "uid_map", map);
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)group, (unsigned)gid);
        if (r >= 0)
                r = write_map(pid, "gid_map", map);
        int fd = -1;
        if (r >= 0) {
                char path[64];
                fd = open_ns_of(pid, "user", path);
                if (fd < 0)
                        r = -errno;
        }
        kill(pid, SIGKILL);
        s->idmap_child = pid;
        return r < 0 ? r : fd;
}

/* A --workspace or --scratch directory: it must exist, and with
 * --disk-mb lie on a filesystem no larger than that (fail closed: a
 * plain directory cannot be bounded).  Scratch gets its tmp/ and shm/.
 * All of it through one fd: a warm sandbox checks them at every handoff,
 * and each of about ten calls walked the path again. */
static int check_dir(struct supervisor *s, const char *dir, bool is_scratch, struct stat *ret)
{
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_fd_ int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, ret) < 0) {
                sbx_sup_fail(s, SBX_STEP_WORKSPACE, errno, dir, "not a directory");
                return -1;
        }
        /* Bound in place, what the job leaves is on the host as it left
         * it: a set-id file (the job owns its files, and they belong to
         * the directory's owner outside) must not be set-id there. */
        struct statvfs sv;
        if (fstatvfs(fd, &sv) < 0 || !(sv.f_flag & ST_NOSUID)) {
                sbx_sup_fail(s, SBX_STEP_WORKSPACE, EPERM, dir,
                     "must be on a nosuid mount: a set-id file the job makes there would be "
                     "set-id on the host (e.g. mount --bind DIR DIR; mount -o "
                     "remount,bind,nosuid,nodev DIR; the worker mounts each job's nosuid)");
                return -1;
        }
        if (s->c->disk_mb && sandbox_workspace_check_bound(dir, &sv, s->c->disk_mb, &err) < 0) {
                sbx_sup_fail(s, SBX_STEP_WORKSPACE, err.errnum, dir, bc_error_message(&err));
                bc_error_clear(&err);
                return -1;
        }
        if (!is_scratch)
                return 0;
        static const char *const subs[] = { "tmp", "shm" };
        for (size_t i = 0; i < ELEMENTSOF(subs); i++) {
                struct stat st;
                int e = 0;
                /* Most often there already (a reused workspace keeps them). */
                if (fstatat(fd, subs[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        e = errno;
                        if (e == ENOENT && mkdirat(fd, subs[i], 01777) < 0)
                                e = errno;
                        else if (e == ENOENT)
                                e = fstatat(fd, subs[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
                }
                if (!e && !S_ISDIR(st.st_mode))
                        e = ENOTDIR;
                if (!e && (st.st_mode & 07777) != 01777 && fchmodat(fd, subs[i], 01777, 0) < 0)
                        e = errno;
                if (e) {
                        char p[4096];
                        snprintf(p, sizeof(p), "%s/%s", dir, subs[i]);
                        sbx_sup_fail(s, SBX_STEP_WORKSPACE, e, p,
                             "cannot prepare the scratch directory");
                        return -1;
                }
        }
        return 0;
}

/* The user namespace mapping the workspace's owner to the job's ids, or
 * -1 with the failure recorded. */
static int make_workspace_idmap(struct supervisor *s, uid_t owner, gid_t group)
{
        int fd = sbx_sup_make_idmap(s, owner, group);
        if (fd < 0)
                sbx_sup_fail(s, SBX_STEP_WORKSPACE, -fd, NULL,
                             "cannot make the user namespace for the idmapped workspace");
        return fd < 0 ? -1 : fd;
}

int sbx_sup_prepare_dirs(struct supervisor *s, uid_t idmap_owner, gid_t idmap_group, bool later)
{
        const struct helper_config *c = s->c;
        struct stat ws, sc;
        if (c->workspace && check_dir(s, c->workspace, false, &ws) < 0)
                return -1;
        if (c->scratch && check_dir(s, c->scratch, true, &sc) < 0)
                return -1;
        /* As root the job's uid differs from the directory's owner: an
         * idmapped bind gives it the workspace without a chown (and the
         * host keeps the owner).  Unprivileged, the sandbox's own user
         * namespace already maps the job to us, the owner. */
        const struct stat *own = c->workspace ? &ws : c->scratch ? &sc : NULL;
        if (geteuid() != 0 || !own || (own->st_uid == c->uid && own->st_gid == c->gid)) {
                if (s->idmap_fd >= 0)
                        close(s->idmap_fd);  /* made ahead, not needed */
                s->idmap_fd = -1;
                return 0;
        }
        if (s->idmap_fd >= 0 && own->st_uid == idmap_owner && own->st_gid == idmap_group)
                return 0;
        if (s->idmap_fd >= 0)
                close(s->idmap_fd);
        s->idmap_fd = -1;
        if (later) {
                s->idmap_later = true;
                s->idmap_owner = own->st_uid;
                s->idmap_group = own->st_gid;
                return 0;
        }
        s->idmap_fd = make_workspace_idmap(s, own->st_uid, own->st_gid);
        return s->idmap_fd < 0 ? -1 : 0;
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
                int fd = make_workspace_idmap(s, s->idmap_owner, s->idmap_group);
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
        struct cg_limits l = { .memory_mb = c->memory_mb, .cpus = c->cpus,
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
                attach_by_pid(s);
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
        st->cpu_ms = cs.have_cpu ? (cs.cpu_us > s->cpu_base_us ? cs.cpu_us - s->cpu_base_us : 0) / 1000
                                 : s->job_cpu_us / 1000;
        st->max_rss_kb = (uint64_t)ru.ru_maxrss > s->job_rss_kb ? (uint64_t)ru.ru_maxrss : s->job_rss_kb;
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
        reap_idmap_child(s, 0);
        sbx_cgroup_destroy(&s->cg);
        sbx_seccomp_prog_done(&s->seccomp);
        sbx_egress_free(s->egress);  /* the job is over: its connections end */
        s->egress = NULL;
        int *fds[] = { &s->sock, &s->sigfd, &s->timerfd, &s->idmap_fd, &s->job_sock, &s->mnt_ns,
                       &s->net_ns };
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
        ret->wall_ms = bc_mono_ms() - ((uint64_t)s->start.tv_sec * 1000u +
                                   (uint64_t)s->start.tv_nsec / 1000000u);
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
 * move_off_new_childs_cpu).  The clone has its own copy of our fds, and
 * ours is closed first (the clone waits on our CPU until we move off),
 * so its close is the last one; killed, its exit closes it all the same,
 * before we can reap it.  Called after init is reaped; returns the
 * clone's pid, or -1 when there was nothing to release or it was done
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
                move_off_new_childs_cpu();
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
