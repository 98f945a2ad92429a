/* The sandboxed side: the child cloned into the new namespaces.  It is
 * pid 1 of its pid namespace; it builds the root, waits to be put in the
 * cgroup, drops its privileges and loads the seccomp filters, then starts
 * the job (pid 2, inheriting both) and stays as a minimal init that
 * reaps orphans and reports the job's status.  When the job exits, init
 * exits, and the kernel kills whatever the job left behind (double-forked,
 * setsid'd, stopped: a pid namespace dies with its init).
 *
 * A warm sandbox does all of that before there is a job: init locks down
 * and starts the job's process, which waits, locked down too, on its own
 * socket.  The job's trees are attached by the supervisor (warm.c), so
 * nothing in the sandbox holds a privilege once it is warm, and the job
 * only has to exec when it comes. */
#include "sandbox/child-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/cgroup-internal.h"
#include "sandbox/egress-internal.h"
#include "sandbox/netns-internal.h"
#include "sandbox/privs-internal.h"
#include "sandbox/rootfs-internal.h"
#include "sandbox/seccomp-internal.h"
#include "sandbox/setup-internal.h"

static void report_and_exit(int sock, struct setup_ctx *x) __attribute__((noreturn));
static void report_and_exit(int sock, struct setup_ctx *x)
{
        struct sbx_msg m;
        sbx_msg_error(&m, SBX_MSG_SETUP_ERROR, x->step, x->err.errnum, x->path, "%s",
                      bc_error_message(&x->err));
        (void)sbx_msg_send(sock, &m, -1);
        _exit(sbx_step_exit_code(x->step));
}

static void reset_signals(void)
{
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* SIG_IGN survives execve: whatever the worker ignored (SIGPIPE,
         * typically) must not be ignored by the job. */
        struct sigaction sa = { .sa_handler = SIG_DFL };
        for (int s = 1; s < NSIG; s++)
                if (s != SIGKILL && s != SIGSTOP)
                        (void)sigaction(s, &sa, NULL);
}

/* A GO; with ret_fd, one that carries an fd (the idmap namespace). */
static int wait_go(int sock, int *ret_fd)
{
        struct sbx_msg m;
        int r = sbx_msg_recv(sock, &m, ret_fd);
        return r == 1 && m.type == SBX_MSG_GO && (!ret_fd || *ret_fd >= 0) ? 0 : -EPIPE;
}

/* A cold sandbox's second GO: SBX_GO_CGROUP in wstatus when the job is in
 * a cgroup; with it the cgroup's "tasks" files to move ourselves in (v1;
 * none when the supervisor moved us), and, with SBX_GO_NETNS, the network
 * namespace the supervisor made meanwhile, last.  Returns whether we are
 * in a cgroup. */
static bool take_go(int sock, struct setup_ctx *x, int *ret_userns)
{
        struct sbx_msg m;
        int fds[6];
        size_t n = 0;
        if (sbx_msg_recv_fds(sock, &m, fds, ELEMENTSOF(fds), &n) != 1 || m.type != SBX_MSG_GO)
                _exit(SBX_EXIT_INTERNAL);
        bool netns = m.wstatus & SBX_GO_NETNS;
        bool userns = m.wstatus & SBX_GO_USERNS;
        if (n < (size_t)netns + (size_t)userns)
                _exit(SBX_EXIT_INTERNAL);
        size_t n_cg = n - (size_t)netns - (size_t)userns;
        *ret_userns = userns ? fds[n_cg] : -1;
        x->step = SBX_STEP_CGROUP;
        if (sbx_cgroup_self_attach(fds, n_cg) < 0) {
                setup_fail(x, errno, "tasks", "move into cgroup");
                report_and_exit(sock, x);
        }
        if (netns) {
                x->step = SBX_STEP_NETWORK;
                if (setns(fds[n - 1], CLONE_NEWNET) < 0) {
                        setup_fail(x, errno, NULL, "setns: the sandbox's network namespace");
                        report_and_exit(sock, x);
                }
                close(fds[n - 1]);
        }
        return m.wstatus & SBX_GO_CGROUP;
}

/* What the sandbox's network namespace and hostname need (the root's
 * files already name the host). */
static int setup_uts_net(struct setup_ctx *x, bool own_netns)
{
        x->step = SBX_STEP_NETWORK;
        if (sethostname(x->c->hostname, strlen(x->c->hostname)) < 0)
                return setup_fail(x, errno, "hostname", "sethostname");
        int r = own_netns ? sbx_loopback_up() : 0;
        return r < 0 ? setup_fail(x, -r, "lo", "bring the loopback up") : 0;
}

/* --network allow: the routes and sockets of the job's rules, handed to
 * the supervisor, which serves them (egress-internal.h). */
static int send_egress(int sock, struct setup_ctx *x)
{
        int fds[EGRESS_MAX_FDS];
        int n = sbx_egress_setup(x, fds);
        if (n < 0)
                return n;
        struct sbx_msg m = { .type = SBX_MSG_EGRESS };
        int r = sbx_msg_send_fds(sock, &m, fds, (size_t)n);
        for (int i = 0; i < n; i++)
                close(fds[i]);
        return r < 0 ? setup_fail(x, -r, NULL, "cannot hand the egress sockets over") : 0;
}

/* Cold: the job's trees are cloned here, before anything is mounted over
 * SBX_NEWROOT, then the whole root is built and entered.  With
 * idmap_later, the read-write ones are idmapped once the supervisor has
 * sent their idmap namespace, made while the base root was built. */
static int setup_namespaces(struct setup_ctx *x, int sock, bool idmap_later, bool own_netns)
{
        struct rootfs_trees t;
        rootfs_trees_init(&t);
        int r = rootfs_capture_job(x, -1, &t);
        if (r >= 0)
                r = rootfs_build_base(x);
        if (r >= 0 && idmap_later) {
                _cleanup_fd_ int idmap = -1;
                if (wait_go(sock, &idmap) < 0)
                        _exit(SBX_EXIT_INTERNAL);
                r = rootfs_idmap_trees(x, &t, idmap);
        }
        if (r >= 0)
                r = rootfs_attach_job(x, &t);
        rootfs_trees_close(&t);
        if (r >= 0)
                r = setup_uts_net(x, own_netns);
        if (r >= 0)
                r = rootfs_pivot(x);
        return r < 0 ? r : rootfs_seal(x);
}

static const char *env_path(char *const *env)
{
        for (size_t i = 0; env && env[i]; i++)
                if (strncmp(env[i], "PATH=", 5) == 0)
                        return env[i] + 5;
        return "/usr/local/bin:/usr/bin:/bin";
}

/* execvpe() searches the PATH of the current environment, not of the one
 * it is given: search the job's PATH ourselves.  Returns errno. */
static int exec_command(char *const *argv, char *const *env)
{
        const char *cmd = argv[0];
        if (strchr(cmd, '/')) {
                execve(cmd, argv, env);
                return errno;
        }
        int best = ENOENT;
        const char *p = env_path(env);
        while (*p) {
                size_t len = strcspn(p, ":");
                char full[4096];
                if (len == 0)
                        snprintf(full, sizeof(full), "%s", cmd);
                else
                        snprintf(full, sizeof(full), "%.*s/%s", (int)len, p, cmd);
                execve(full, argv, env);
                if (errno != ENOENT && errno != ENOTDIR)
                        best = errno;
                p += len;
                if (*p == ':')
                        p++;
        }
        return best;
}

/* Init's last setup step, before it starts the job, which inherits all of
 * it: the job's identity, no capabilities, no parent-death escape, and
 * the seccomp filters (loaded once for both: each load is a BPF
 * translation and JIT).  Init runs no untrusted code, but it is as
 * locked down as the job, and not dumpable: the job can neither ptrace
 * it nor open its /proc files (its socket to the supervisor). */
static void lock_down(const struct helper_config *c, const struct sbx_seccomp_prog *prog, int sock,
                      int userns)
{
        struct setup_ctx x = { .c = c, .step = SBX_STEP_USERNS, .err = BC_ERROR_INIT };
        /* Root: into the job's own user namespace, where c->uid and c->gid
         * are the host ids this sandbox holds, and nothing else is mapped.
         * Every namespace and mount was made before, by root: they belong
         * to the host's user namespace, and nothing in the job's holds a
         * capability over them. */
        if (c->host.own && userns < 0) {
                setup_fail(&x, EINVAL, NULL, "no user namespace for the job's ids");
                report_and_exit(sock, &x);
        }
        /* The groups first, while we may: the namespace denies setgroups,
         * and root's own supplementary groups must not follow the job. */
        if (userns >= 0 && setgroups(1, &c->host.gid) < 0) {
                setup_fail(&x, errno, NULL, "setgroups: the job's host group");
                report_and_exit(sock, &x);
        }
        if (userns >= 0 && setns(userns, CLONE_NEWUSER) < 0) {
                setup_fail(&x, errno, NULL, "setns: the job's user namespace");
                report_and_exit(sock, &x);
        }
        if (userns >= 0)
                close(userns);
        x.step = SBX_STEP_PRIVILEGES;
        if (sbx_drop_privileges(c->uid, c->gid, &x.err) < 0)
                report_and_exit(sock, &x);
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
                setup_fail(&x, errno, NULL, "PR_SET_DUMPABLE");
                report_and_exit(sock, &x);
        }
        /* A uid change clears the parent-death signal: set it again, then
         * make sure the supervisor did not die in between (its end of the
         * socket would have hung up). */
        struct pollfd p = { .fd = sock, .events = POLLIN };
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || poll(&p, 1, 0) != 0)
                _exit(SBX_EXIT_INTERNAL);
        x.step = SBX_STEP_SECCOMP;
        if (sbx_seccomp_apply(prog, &x.err) < 0)
                report_and_exit(sock, &x);
}

/* The job's own setup, all it can do before its workspace is there
 * (init's privileges and filters are already its own, and every call
 * below is on the allow-list): its own session, its limits, and no fds
 * but 0-2 past the exec. */
static void job_prepare(struct setup_ctx *x, int sock, bool in_cgroup)
{
        x->step = SBX_STEP_PRIVILEGES;
        if (setsid() < 0) {
                setup_fail(x, errno, NULL, "setsid");
                report_and_exit(sock, x);
        }
        x->step = SBX_STEP_RLIMIT;
        if (sbx_set_rlimits(x->c, in_cgroup, &x->err) < 0)
                report_and_exit(sock, x);
        x->step = SBX_STEP_PRIVILEGES;
        if (sbx_cloexec_from(3, &x->err) < 0)
                report_and_exit(sock, x);
        umask(022);
}

static void job_exec(const struct helper_config *c, int sock) __attribute__((noreturn));
static void job_exec(const struct helper_config *c, int sock)
{
        int e = exec_command(c->argv, c->env);
        struct sbx_msg m;
        sbx_msg_error(&m, SBX_MSG_EXEC_ERROR, SBX_STEP_EXEC, e, c->argv[0], "exec %s: %s",
                      c->argv[0], strerror(e));
        (void)sbx_msg_send(sock, &m, -1);
        _exit(e == ENOENT ? SBX_EXIT_NOT_FOUND : SBX_EXIT_CANNOT_EXEC);
}

/* pid 1: reap everything, report the job, exit (killing the rest). */
static void init_main(int sock, pid_t job) __attribute__((noreturn));
static void init_main(int sock, pid_t job)
{
        for (;;) {
                int st;
                pid_t w = wait4(-1, &st, 0, NULL);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        _exit(SBX_EXIT_INTERNAL);
                if (w != job)
                        continue;
                struct rusage ru;
                getrusage(RUSAGE_CHILDREN, &ru);
                struct sbx_msg m = { .type = SBX_MSG_JOB_STATUS, .wstatus = st };
                m.cpu_us = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
                           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
                m.max_rss_kb = (uint64_t)ru.ru_maxrss;
                (void)sbx_msg_send(sock, &m, -1);
                _exit(0);
        }
}

/* Only the socket, a warm sandbox's job socket and its job's user
 * namespace (each -1 when absent) survive into the sandbox: the status
 * fd, the host id's lock and anything else the worker passed stay
 * outside. */
static void close_other_fds(int a, int b, int c)
{
        int keep[3] = { a, b, c };
        /* Sorted, absent ones (-1) first. */
        for (int i = 1; i < 3; i++)
                for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
                        int t = keep[j];
                        keep[j] = keep[j - 1];
                        keep[j - 1] = t;
                }
        unsigned from = 3;
        for (int i = 0; i < 3; i++) {
                if (keep[i] < 0)
                        continue;
                if ((unsigned)keep[i] > from)
                        syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0);
                from = (unsigned)keep[i] + 1;
        }
        syscall(SYS_close_range, from, ~0u, 0);
}

/* Reads a job's options (a sealed memfd) into a buffer that lives as long
 * as the process: the config points into it. */
static int read_job_options(int fd, struct helper_config *jc, struct setup_ctx *x)
{
        x->step = SBX_STEP_OPTIONS;
        char *blob = NULL, **argv = NULL;
        return helper_config_read_fd(fd, &blob, &argv, jc, &x->err);
}

/* The job's stdout and stderr are the worker's pipes, sent with the job;
 * stdin stays /dev/null (the helper was started with it). */
static int take_stdio(int out, int err, struct setup_ctx *x)
{
        x->step = SBX_STEP_INTERNAL;
        if (dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
                return setup_fail(x, errno, NULL, "dup2");
        return 0;
}

/* A warm sandbox's job process: init's identity and filters are already
 * its own.  It waits for its job (options, stdout, stderr; the cgroup
 * flag as in GO), which the supervisor sends as soon as it has it, and
 * takes it in while the supervisor attaches the job's trees (off the
 * handoff's path when the other CPU is free); then for START, which comes
 * once the root is sealed and the claim held.  Nothing it runs before
 * START is the job's: a sandbox whose setup fails is killed before it. */
static void job_wait(int sock, int job_sock) __attribute__((noreturn));
static void job_wait(int sock, int job_sock)
{
        /* WARM from here, not from init: init is held until this process
         * execs (lock_down_and_spawn). */
        struct sbx_msg m = { .type = SBX_MSG_WARM };
        if (sbx_msg_send(sock, &m, -1) < 0)
                _exit(SBX_EXIT_INTERNAL);
        /* The pages its handoff's parse touches, faulted in now rather
         * than one at a time on the handoff's path (30-45 us at p50,
         * traced from this process's wake-up to its execve: 133 us
         * without, 85-101 with). */
        helper_config_warm_up();
        struct setup_ctx x = { .step = SBX_STEP_INTERNAL, .err = BC_ERROR_INIT };
        int fds[3];
        size_t n = 0;
        if (sbx_msg_recv_fds(job_sock, &m, fds, ELEMENTSOF(fds), &n) != 1 ||
            m.type != SBX_MSG_JOB || n != ELEMENTSOF(fds))
                _exit(SBX_EXIT_INTERNAL); /* the supervisor is gone or confused */
        struct helper_config jc;
        if (read_job_options(fds[0], &jc, &x) < 0)
                report_and_exit(sock, &x);
        x.c = &jc;
        if (take_stdio(fds[1], fds[2], &x) < 0)
                report_and_exit(sock, &x);
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        job_prepare(&x, sock, m.wstatus & SBX_GO_CGROUP);
        int fd = -1;
        if (sbx_msg_recv(job_sock, &m, &fd) != 1 || m.type != SBX_MSG_START || fd >= 0)
                _exit(SBX_EXIT_INTERNAL); /* the supervisor is gone or confused */
        close(job_sock);
        x.step = SBX_STEP_PIVOT_ROOT;
        if (chdir("/workspace") < 0) {
                setup_fail(&x, errno, "/workspace", "chdir");
                report_and_exit(sock, &x);
        }
        job_exec(&jc, sock);
}

/* The job's process runs on a stack of its own in init's memory until it
 * execs (lock_down_and_spawn). */
#define JOB_STACK_BYTES (256 * 1024)

/* AddressSanitizer cannot follow a process onto a stack of its own (its
 * no-return check warns, and in the sandbox cannot even write where the
 * warning goes): a sanitized build forks the job's process instead. */
#if defined(__SANITIZE_ADDRESS__)
#define JOB_SPAWN_FORKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JOB_SPAWN_FORKS 1
#endif
#endif

struct job_start {
        struct setup_ctx *x; /* x->c: the job's options */
        int sock, job_sock;
        bool in_cgroup;
};

static int warm_job_main(void *arg)
{
        const struct job_start *j = arg;
        job_wait(j->sock, j->job_sock);
}

static int cold_job_main(void *arg)
{
        const struct job_start *j = arg;
        job_prepare(j->x, j->sock, j->in_cgroup);
        job_exec(j->x->c, j->sock);
}

/* The cgroup namespace (rooted at our cgroup: we are in it by now), the
 * lock-down, then the job's process, running fn: its pid, once it has
 * exec'd or exited.  It shares init's memory (CLONE_VM) while init waits
 * for its exec (CLONE_VFORK, as posix_spawn does): a fork's copy of init's
 * page tables, and the exec's teardown of that copy on the job's path (an
 * exit_mmap with a TLB shootdown, about 0.1 ms traced), are not made at
 * all.  The job's own memory is the exec's new one, as after a fork. */
static pid_t lock_down_and_spawn(const struct job_start *j, const struct sbx_seccomp_prog *prog,
                                 int userns, int (*fn)(void *))
{
        struct setup_ctx *x = j->x;
        x->step = SBX_STEP_CGROUP;
        if (unshare(CLONE_NEWCGROUP) < 0) {
                setup_fail(x, errno, NULL, "unshare(CLONE_NEWCGROUP)");
                report_and_exit(j->sock, x);
        }
        lock_down(x->c, prog, j->sock, userns);
        x->step = SBX_STEP_CLONE;
#ifdef JOB_SPAWN_FORKS
        pid_t job = fork();
        if (job == 0)
                _exit(fn((void *)j));
        if (job < 0) {
                setup_fail(x, errno, NULL, "fork: the job's process");
                report_and_exit(j->sock, x);
        }
        return job;
#else
        /* Its lowest page is a guard: an overflow faults rather than
         * writing over init's memory. */
        void *stack = mmap(NULL, JOB_STACK_BYTES, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED || mprotect(stack, 4096, PROT_NONE) < 0) {
                setup_fail(x, errno, NULL, "mmap: the job's stack");
                report_and_exit(j->sock, x);
        }
        pid_t job = clone(fn, (char *)stack + JOB_STACK_BYTES, CLONE_VM | CLONE_VFORK | SIGCHLD,
                          (void *)j);
        if (job < 0) {
                setup_fail(x, errno, NULL, "clone: the job's process");
                report_and_exit(j->sock, x);
        }
        munmap(stack, JOB_STACK_BYTES);
        return job;
#endif
}

/* A warm sandbox: the root without the job, entered; the cgroup is ours
 * already (the supervisor attaches a warm child before GO).  Init locks
 * down and starts the job's process, which says WARM and waits; init
 * goes on once that process has exec'd its job (or died). */
static void warm_child(int sock, int job_sock, int userns, struct setup_ctx *x,
                       const struct sbx_seccomp_prog *prog) __attribute__((noreturn));
static void warm_child(int sock, int job_sock, int userns, struct setup_ctx *x,
                       const struct sbx_seccomp_prog *prog)
{
        x->step = SBX_STEP_MOUNT;
        if (rootfs_build_base(x) < 0 || setup_uts_net(x, x->c->network != SANDBOX_NET_HOST) < 0 ||
            rootfs_pivot(x) < 0)
                report_and_exit(sock, x);
        struct job_start j = { .x = x, .sock = sock, .job_sock = job_sock };
        pid_t job = lock_down_and_spawn(&j, prog, userns, warm_job_main);
        close(job_sock);
        init_main(sock, job);
}

void sbx_child_main(const struct child_args *a)
{
        const struct helper_config *c = a->c;
        const struct sbx_seccomp_prog *prog = a->prog;
        int sock = a->sock;
        reset_signals();
        struct setup_ctx x = { .c = c, .step = SBX_STEP_CGROUP, .err = BC_ERROR_INIT };
        if (sbx_cgroup_self_attach(a->cg_fds, a->n_cg_fds) < 0) {
                setup_fail(&x, errno, "tasks", "move into cgroup");
                report_and_exit(sock, &x);
        }
        close_other_fds(sock, a->job_sock, a->userns);
        /* Dies with the supervisor; the check after it closes the race of
         * a supervisor that died before the prctl (the GO never comes). */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || wait_go(sock, NULL) < 0)
                _exit(SBX_EXIT_INTERNAL);
        if (c->warm)
                warm_child(sock, a->job_sock, a->userns, &x, prog);
        x.step = SBX_STEP_MOUNT;
        if (setup_namespaces(&x, sock, a->idmap_later,
                             c->network != SANDBOX_NET_HOST && !a->netns_later) < 0)
                report_and_exit(sock, &x);
        if (c->network == SANDBOX_NET_ALLOW && send_egress(sock, &x) < 0)
                report_and_exit(sock, &x);
        /* Here, not in lock_down: the supervisor is still making the
         * cgroup and network namespace, after GO it is the job's wait. */
        x.step = SBX_STEP_PRIVILEGES;
        if (sbx_drop_bounding_set(&x.err) < 0)
                report_and_exit(sock, &x);
        struct sbx_msg m = { .type = SBX_MSG_READY };
        if (sbx_msg_send(sock, &m, -1) < 0)
                _exit(SBX_EXIT_INTERNAL);
        /* We move into the cgroup (or were moved), then the cgroup
         * namespace is made, so it is rooted at our cgroup. */
        int userns = -1;
        bool in_cgroup = take_go(sock, &x, &userns);
        struct job_start j = { .x = &x, .sock = sock, .job_sock = -1, .in_cgroup = in_cgroup };
        init_main(sock, lock_down_and_spawn(&j, prog, userns, cold_job_main));
}
