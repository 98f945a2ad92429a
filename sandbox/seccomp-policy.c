/* The job's seccomp policy: Docker's default allow-list (moby
 * profiles/seccomp/default.json, the entries a process without
 * capabilities gets), tightened: no io_uring (its ring bypasses syscall
 * filtering entirely), no ptrace/process_vm_* (a job needs neither, and
 * they are the classic cross-process primitives), no name_to_handle_at,
 * no modify_ldt, no mount/namespace/keyring/bpf/perf/userfaultfd/module
 * calls, sockets only for unix/inet/inet6.  Anything not listed fails
 * with EPERM (never kills: programs probe syscalls and must see an error);
 * a syscall of another ABI (i386 via int 0x80, x32) kills the process,
 * since no rule here was written with those numbers in mind.
 *
 * This file is the policy's source of truth, compiled by libseccomp.  It
 * runs at build time (sandbox/tools/seccomp-gen.c embeds its BPF in the
 * helper, see seccomp.c) and in the tests that check the embedded copy
 * is exactly what it produces. */
#include "sandbox/seccomp-internal.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"

BC_DEFINE_CLEANUP(scmp_filter_ctx, seccomp_release)

static const char *const allowed[] = {
        "accept",
        "accept4",
        "access",
        "adjtimex",
        "alarm",
        "arch_prctl",
        "bind",
        "brk",
        "cachestat",
        "capget",
        "capset",
        "chdir",
        "chmod",
        "chown",
        "clock_adjtime",
        "clock_getres",
        "clock_gettime",
        "clock_nanosleep",
        "close",
        "close_range",
        "connect",
        "copy_file_range",
        "creat",
        "dup",
        "dup2",
        "dup3",
        "epoll_create",
        "epoll_create1",
        "epoll_ctl",
        "epoll_pwait",
        "epoll_pwait2",
        "epoll_wait",
        "eventfd",
        "eventfd2",
        "execve",
        "execveat",
        "exit",
        "exit_group",
        "faccessat",
        "faccessat2",
        "fadvise64",
        "fallocate",
        "fanotify_mark",
        "fchdir",
        "fchmod",
        "fchmodat",
        "fchmodat2",
        "fchown",
        "fchownat",
        "fcntl",
        "fdatasync",
        "fgetxattr",
        "flistxattr",
        "flock",
        "fork",
        "fremovexattr",
        "fsetxattr",
        "fstat",
        "fstatfs",
        "fsync",
        "ftruncate",
        "futex",
        "futex_waitv",
        "futex_wake",
        "futex_wait",
        "futex_requeue",
        "futimesat",
        "getcpu",
        "getcwd",
        "getdents",
        "getdents64",
        "getegid",
        "geteuid",
        "getgid",
        "getgroups",
        "getitimer",
        "getpeername",
        "getpgid",
        "getpgrp",
        "getpid",
        "getppid",
        "getpriority",
        "getrandom",
        "getresgid",
        "getresuid",
        "getrlimit",
        "get_robust_list",
        "getrusage",
        "getsid",
        "getsockname",
        "getsockopt",
        "get_thread_area",
        "gettid",
        "gettimeofday",
        "getuid",
        "getxattr",
        "inotify_add_watch",
        "inotify_init",
        "inotify_init1",
        "inotify_rm_watch",
        "io_cancel",
        "ioctl",
        "io_destroy",
        "io_getevents",
        "io_pgetevents",
        "ioprio_get",
        "ioprio_set",
        "io_setup",
        "io_submit",
        "kill",
        "landlock_add_rule",
        "landlock_create_ruleset",
        "landlock_restrict_self",
        "lchown",
        "lgetxattr",
        "link",
        "linkat",
        "listen",
        "listxattr",
        "llistxattr",
        "lremovexattr",
        "lseek",
        "lsetxattr",
        "lstat",
        "madvise",
        "map_shadow_stack",
        "membarrier",
        "memfd_create",
        "mincore",
        "mkdir",
        "mkdirat",
        "mknod",
        "mknodat",
        "mlock",
        "mlock2",
        "mlockall",
        "mmap",
        "mprotect",
        "mq_getsetattr",
        "mq_notify",
        "mq_open",
        "mq_timedreceive",
        "mq_timedsend",
        "mq_unlink",
        "mremap",
        "mseal",
        "msgctl",
        "msgget",
        "msgrcv",
        "msgsnd",
        "msync",
        "munlock",
        "munlockall",
        "munmap",
        "nanosleep",
        "newfstatat",
        "open",
        "openat",
        "openat2",
        "pause",
        "pidfd_open",
        "pidfd_send_signal",
        "pipe",
        "pipe2",
        "pkey_alloc",
        "pkey_free",
        "pkey_mprotect",
        "poll",
        "ppoll",
        "prctl",
        "pread64",
        "preadv",
        "preadv2",
        "prlimit64",
        "process_mrelease",
        "pselect6",
        "pwrite64",
        "pwritev",
        "pwritev2",
        "read",
        "readahead",
        "readlink",
        "readlinkat",
        "readv",
        "recvfrom",
        "recvmmsg",
        "recvmsg",
        "remap_file_pages",
        "removexattr",
        "rename",
        "renameat",
        "renameat2",
        "restart_syscall",
        "rmdir",
        "rseq",
        "rt_sigaction",
        "rt_sigpending",
        "rt_sigprocmask",
        "rt_sigqueueinfo",
        "rt_sigreturn",
        "rt_sigsuspend",
        "rt_sigtimedwait",
        "rt_tgsigqueueinfo",
        "sched_getaffinity",
        "sched_getattr",
        "sched_getparam",
        "sched_get_priority_max",
        "sched_get_priority_min",
        "sched_getscheduler",
        "sched_rr_get_interval",
        "sched_setaffinity",
        "sched_setattr",
        "sched_setparam",
        "sched_setscheduler",
        "sched_yield",
        "seccomp",
        "select",
        "semctl",
        "semget",
        "semop",
        "semtimedop",
        "sendfile",
        "sendmmsg",
        "sendmsg",
        "sendto",
        "setfsgid",
        "setfsuid",
        "setgid",
        "setgroups",
        "setitimer",
        "setpgid",
        "setpriority",
        "setregid",
        "setresgid",
        "setresuid",
        "setreuid",
        "setrlimit",
        "set_robust_list",
        "setsid",
        "setsockopt",
        "set_thread_area",
        "set_tid_address",
        "setuid",
        "setxattr",
        "shmat",
        "shmctl",
        "shmdt",
        "shmget",
        "shutdown",
        "sigaltstack",
        "signalfd",
        "signalfd4",
        "splice",
        "stat",
        "statfs",
        "statx",
        "symlink",
        "symlinkat",
        "sync",
        "sync_file_range",
        "syncfs",
        "sysinfo",
        "tee",
        "tgkill",
        "time",
        "timer_create",
        "timer_delete",
        "timer_getoverrun",
        "timer_gettime",
        "timer_settime",
        "timerfd_create",
        "timerfd_gettime",
        "timerfd_settime",
        "times",
        "tkill",
        "truncate",
        "umask",
        "uname",
        "unlink",
        "unlinkat",
        "utime",
        "utimensat",
        "utimes",
        "vfork",
        "vmsplice",
        "wait4",
        "waitid",
        "write",
        "writev",
};

/* Syscalls newer than libseccomp 2.5.4's tables, by x86_64 number: glibc
 * 2.39+ uses fchmodat2, and denying the futex2 calls breaks runtimes. */
#if defined(__x86_64__)
static const struct {
        const char *name;
        int nr;
} late[] = {
        { "cachestat", 451 },  { "fchmodat2", 452 },  { "map_shadow_stack", 453 },
        { "futex_wake", 454 }, { "futex_wait", 455 }, { "futex_requeue", 456 },
        { "mseal", 462 },
};
#endif

static int resolve(const char *name)
{
        int nr = seccomp_syscall_resolve_name(name);
#if defined(__x86_64__)
        if (nr == __NR_SCMP_ERROR)
                for (size_t i = 0; i < ELEMENTSOF(late); i++)
                        if (strcmp(late[i].name, name) == 0)
                                return late[i].nr;
#endif
        return nr;
}

#define NS_FLAGS                                                                       \
        (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | \
         CLONE_NEWPID | CLONE_NEWNET)

/* libseccomp's SCMP_A0_64(SCMP_CMP_EQ, x) leaves datum_b unset, which
 * clang's -Wmissing-field-initializers refuses. */
static struct scmp_arg_cmp arg0_eq(scmp_datum_t value)
{
        return (struct scmp_arg_cmp){ .arg = 0,
                                      .op = SCMP_CMP_EQ,
                                      .datum_a = value,
                                      .datum_b = 0 };
}

static int add_conditional(scmp_filter_ctx ctx)
{
        int r = 0;
        /* Threads and fork, never a new namespace. */
        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                             SCMP_A0_64(SCMP_CMP_MASKED_EQ, NS_FLAGS, 0));
        /* clone3 passes its flags in memory, which seccomp cannot read:
         * ENOSYS makes glibc fall back to clone, which we can check. */
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        static const int families[] = { AF_UNIX, AF_INET, AF_INET6 };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(families); i++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                                     arg0_eq((scmp_datum_t)families[i]));
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1,
                                     arg0_eq((scmp_datum_t)AF_UNIX));
        /* personality: the harmless values Docker allows (query, PER_LINUX,
         * UNAME26, ADDR_NO_RANDOMIZE); never READ_IMPLIES_EXEC and the like. */
        static const scmp_datum_t personas[] = { 0, 8, 0x20000, 0x20008, 0xffffffff };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(personas); i++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(personality), 1,
                                     arg0_eq(personas[i]));
        return r;
}

static int build_allow_list(scmp_filter_ctx ctx)
{
        int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        /* A binary tree of syscall numbers instead of a linear list: the
         * same verdicts, but O(log n) per syscall, and far cheaper to load:
         * at attach time the kernel runs the filter once per syscall
         * number to build its allow cache. */
        if (r >= 0)
                r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(allowed); i++) {
                int nr = resolve(allowed[i]);
                if (nr == __NR_SCMP_ERROR || nr < 0)
                        continue; /* not a syscall of this architecture */
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
        }
        return r >= 0 ? add_conditional(ctx) : r;
}

/* A second filter for what the allow-list cannot say: ioctl(fd, TIOCSTI)
 * pushes bytes into the terminal's input (a sandbox escape when the
 * terminal is shared); TIOCLINUX can paste the console selection.  The
 * kernel reads the command as 32 bits, so it is compared masked to 32
 * bits: 0x100005412 is TIOCSTI too.  The kernel applies the strictest
 * verdict of all filters, so EPERM here beats the allow-list's ALLOW. */
static int build_ioctl_filter(scmp_filter_ctx ctx)
{
        int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        static const scmp_datum_t denied[] = { TIOCSTI, TIOCLINUX };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(denied); i++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                                     SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffu, denied[i]));
        return r;
}

/* libseccomp 2.5 exports BPF only to an fd: a memfd, read back. */
static int export_bpf(scmp_filter_ctx ctx, struct sock_fprog *ret)
{
        _cleanup_fd_ int fd = memfd_create("boxcar-seccomp", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return r;
        off_t size = lseek(fd, 0, SEEK_END);
        /* The kernel takes at most BPF_MAXINSNS instructions. */
        if (size <= 0 || size % (off_t)sizeof(struct sock_filter) ||
            size > (off_t)(BPF_MAXINSNS * sizeof(struct sock_filter)))
                return -E2BIG;
        struct sock_filter *f = malloc((size_t)size);
        if (!f)
                return -ENOMEM;
        if (pread(fd, f, (size_t)size, 0) != (ssize_t)size) {
                free(f);
                return -EIO;
        }
        ret->filter = f;
        ret->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
        return 0;
}

int sbx_seccomp_compile(struct sbx_seccomp_prog *ret, struct bc_error *err)
{
        _cleanup_(seccomp_releasep) scmp_filter_ctx ioctls = seccomp_init(SCMP_ACT_ALLOW);
        _cleanup_(seccomp_releasep) scmp_filter_ctx allow = seccomp_init(SCMP_ACT_ERRNO(EPERM));
        if (!ioctls || !allow)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "seccomp_init failed");
        int r = build_ioctl_filter(ioctls);
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "seccomp ioctl rules: %s",
                                    strerror(-r));
        r = build_allow_list(allow);
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "seccomp allow-list: %s",
                                    strerror(-r));
        struct sbx_seccomp_prog p = { .owned = true };
        r = export_bpf(ioctls, &p.filters[0]);
        if (r >= 0)
                r = export_bpf(allow, &p.filters[1]);
        if (r < 0) {
                sbx_seccomp_prog_done(&p);
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "seccomp export: %s", strerror(-r));
        }
        *ret = p;
        return 0;
}

int sbx_seccomp_install(struct bc_error *err)
{
        struct sbx_seccomp_prog p;
        int r = sbx_seccomp_compile(&p, err);
        if (r < 0)
                return r;
        r = sbx_seccomp_apply(&p, err);
        sbx_seccomp_prog_done(&p);
        return r;
}
