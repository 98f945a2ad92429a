/* Escape attempts for the security suite, one per subcommand.  Each prints
 * "RAN <name>" first (so a test can tell "blocked" from "never ran"), then
 * one line per attempt: "BLOCKED <what> <errno-name>" when the attempt
 * failed, "ESCAPED <what>" when it worked.  Built by tests/security/run.sh
 * and run inside boxcar-sandbox (and, as controls, outside it). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static void result(const char *what, long r)
{
        if (r >= 0)
                printf("ESCAPED %s\n", what);
        else
                printf("BLOCKED %s %s\n", what, strerrorname_np(errno) ? strerrorname_np(errno) : "?");
        fflush(stdout);
}

static int write_file(const char *path)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
                return -1;
        ssize_t n = write(fd, "x\n", 2);
        close(fd);
        return n == 2 ? 0 : -1;
}

static int cmd_write(int argc, char **argv)
{
        for (int i = 2; i < argc; i++)
                result(argv[i], write_file(argv[i]));
        return 0;
}

static int cmd_remount(int argc, char **argv)
{
        for (int i = 2; i < argc; i++) {
                char what[512];
                snprintf(what, sizeof(what), "remount-rw %s", argv[i]);
                result(what, mount(NULL, argv[i], NULL, MS_REMOUNT | MS_BIND, NULL));
                snprintf(what, sizeof(what), "bind-over %s", argv[i]);
                result(what, mount("/workspace", argv[i], NULL, MS_BIND, NULL));
                snprintf(what, sizeof(what), "umount %s", argv[i]);
                result(what, umount2(argv[i], MNT_DETACH));
        }
        return 0;
}

static int cmd_mknod(void)
{
        result("mknod-char /workspace/null", mknod("/workspace/null", S_IFCHR | 0666, makedev(1, 3)));
        result("mknod-block /tmp/sda", mknod("/tmp/sda", S_IFBLK | 0666, makedev(8, 0)));
        return 0;
}

/* TIOCSTI on a pty that is our controlling terminal: allowed by the kernel
 * (dev.tty.legacy_tiocsti=1), so only the filter can stop it. */
static int cmd_tiocsti(void)
{
        int m = posix_openpt(O_RDWR | O_NOCTTY);
        if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0) {
                printf("SETUP-FAILED openpt %s\n", strerrorname_np(errno));
                return 1;
        }
        pid_t p = fork();
        if (p == 0) {
                setsid();
                int s = open(ptsname(m), O_RDWR);
                if (s < 0 || ioctl(s, TIOCSCTTY, 0) < 0) {
                        printf("SETUP-FAILED ctty %s\n", strerrorname_np(errno));
                        _exit(1);
                }
                struct winsize ws;
                result("control TIOCGWINSZ", ioctl(s, TIOCGWINSZ, &ws));
                char c = 'x';
                result("TIOCSTI", ioctl(s, TIOCSTI, &c));
                unsigned long high = 0x100000000ul | TIOCSTI;
                result("TIOCSTI-highbit", syscall(SYS_ioctl, s, high, &c));
                _exit(0);
        }
        int st;
        waitpid(p, &st, 0);
        return 0;
}

static int cmd_fds(void)
{
        for (int fd = 3; fd < 1024; fd++)
                if (fcntl(fd, F_GETFD) >= 0)
                        printf("OPENFD %d\n", fd);
        printf("FDS-DONE\n");
        return 0;
}

static int cmd_kill(int argc, char **argv)
{
        /* Its result says nothing (ESRCH when alone): the suite checks
         * that the host process it would have hit is still alive. */
        int r = kill(-1, SIGKILL);
        printf("DID kill -1 = %d\n", r);
        for (int i = 2; i < argc; i++) {
                char what[64];
                snprintf(what, sizeof(what), "kill %s", argv[i]);
                result(what, kill(atoi(argv[i]), SIGKILL));
        }
        return 0;
}

static int cmd_ptrace(void)
{
        result("ptrace-attach-init", ptrace(PTRACE_ATTACH, 1, 0, 0));
        pid_t p = fork();
        if (p == 0) {
                pause();
                _exit(0);
        }
        /* Same uid, our own child: only seccomp can refuse this. */
        result("ptrace-attach-child", ptrace(PTRACE_ATTACH, p, 0, 0));
        char buf[8], dst[8];
        struct iovec l = { dst, sizeof(dst) }, r = { buf, sizeof(buf) };
        result("process_vm_readv-child", process_vm_readv(p, &l, 1, &r, 1, 0));
        result("process_vm_writev-child", process_vm_writev(p, &l, 1, &r, 1, 0));
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
        return 0;
}

static int cmd_forkbomb(void)
{
        int n = 0;
        for (;;) {
                pid_t p = fork();
                if (p < 0) {
                        printf("FORKS %d\n", n);
                        result("fork-bomb", -1);
                        return 0;
                }
                if (p == 0) {
                        pause();
                        _exit(0);
                }
                if (++n >= 5000) {
                        printf("FORKS %d\n", n);
                        result("fork-bomb", 0);
                        return 0;
                }
        }
}

static int cmd_tcp(const char *port)
{
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        result("tcp-loopback", s < 0 ? -1 : connect(s, (struct sockaddr *)&a, sizeof(a)));
        return 0;
}

static int cmd_abstract(const char *name)
{
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        size_t n = strlen(name);
        memcpy(a.sun_path + 1, name, n);
        result("abstract-unix", s < 0 ? -1 : connect(s, (struct sockaddr *)&a,
                                                      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)));
        return 0;
}

static int cmd_sockets(void)
{
        result("netlink-route", socket(AF_NETLINK, SOCK_RAW, 0));
        result("vsock", socket(AF_VSOCK, SOCK_STREAM, 0));
        result("packet", socket(AF_PACKET, SOCK_RAW, 0));
        result("io_uring_setup", syscall(SYS_io_uring_setup, 1, NULL));
        result("control unix-socket", socket(AF_UNIX, SOCK_STREAM, 0));
        return 0;
}

static int cmd_namespaces(void)
{
        result("unshare-user", unshare(CLONE_NEWUSER));
        result("unshare-mount", unshare(CLONE_NEWNS));
        result("unshare-net", unshare(CLONE_NEWNET));
        result("clone-newuser", syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0) == 0 ? (_exit(0), 0) : -1);
        result("mount-tmpfs", mount("tmpfs", "/tmp", "tmpfs", 0, NULL));
        int fd = open("/proc/self/ns/net", O_RDONLY);
        result("setns-net", fd < 0 ? -1 : setns(fd, 0));
        result("chroot", chroot("/tmp"));
        return 0;
}

/* Invalid arguments on purpose: the kernel would answer EINVAL/EFAULT/
 * EBADF, so EPERM can only come from the filter. */
static int cmd_syscalls(void)
{
        result("keyctl", syscall(SYS_keyctl, 9999, 0, 0, 0, 0));
        result("add_key", syscall(SYS_add_key, NULL, NULL, NULL, 0, 0));
        result("bpf", syscall(SYS_bpf, 9999, NULL, 0));
        result("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
        result("userfaultfd", syscall(SYS_userfaultfd, ~0u));
        result("open_by_handle_at", syscall(SYS_open_by_handle_at, -1, NULL, 0));
        result("setns", syscall(SYS_setns, -1, 0));
        result("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, ~0ul));
        result("init_module", syscall(SYS_init_module, NULL, 0, NULL));
        result("finit_module", syscall(SYS_finit_module, -1, NULL, 0));
        result("process_vm_readv", syscall(SYS_process_vm_readv, 0, NULL, 0, NULL, 0, ~0ul));
        result("ptrace", syscall(SYS_ptrace, ~0l, 0, 0, 0));
        result("mount_setattr", syscall(SYS_mount_setattr, -1, NULL, 0, NULL, 0));
        result("open_tree", syscall(SYS_open_tree, -1, NULL, ~0u));
        return 0;
}

static int cmd_x32(void)
{
        printf("RAN-X32\n");
        fflush(stdout);
        long r = syscall(0x40000000 | SYS_getpid);
        printf("SURVIVED x32 %ld\n", r);
        return 0;
}

static int cmd_int80(void)
{
        printf("RAN-INT80\n");
        fflush(stdout);
        long r;
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");  /* i386 getpid */
        printf("SURVIVED int80 %ld\n", r);
        return 0;
}

static int cmd_euid(void)
{
        printf("EUID %d\n", (int)geteuid());
        return 0;
}

static int cmd_spin(const char *secs)
{
        struct timespec s, n;
        clock_gettime(CLOCK_MONOTONIC, &s);
        volatile unsigned long x = 0;
        do {
                for (int i = 0; i < 1000000; i++)
                        x += (unsigned long)i;
                clock_gettime(CLOCK_MONOTONIC, &n);
        } while (n.tv_sec - s.tv_sec < atoi(secs));
        return 0;
}

int main(int argc, char **argv)
{
        if (argc < 2)
                return 2;
        const char *c = argv[1];
        printf("RAN %s\n", c);
        fflush(stdout);
        if (!strcmp(c, "write")) return cmd_write(argc, argv);
        if (!strcmp(c, "remount")) return cmd_remount(argc, argv);
        if (!strcmp(c, "mknod")) return cmd_mknod();
        if (!strcmp(c, "tiocsti")) return cmd_tiocsti();
        if (!strcmp(c, "fds")) return cmd_fds();
        if (!strcmp(c, "kill")) return cmd_kill(argc, argv);
        if (!strcmp(c, "ptrace")) return cmd_ptrace();
        if (!strcmp(c, "forkbomb")) return cmd_forkbomb();
        if (!strcmp(c, "tcp") && argc > 2) return cmd_tcp(argv[2]);
        if (!strcmp(c, "abstract") && argc > 2) return cmd_abstract(argv[2]);
        if (!strcmp(c, "sockets")) return cmd_sockets();
        if (!strcmp(c, "namespaces")) return cmd_namespaces();
        if (!strcmp(c, "syscalls")) return cmd_syscalls();
        if (!strcmp(c, "x32")) return cmd_x32();
        if (!strcmp(c, "int80")) return cmd_int80();
        if (!strcmp(c, "euid")) return cmd_euid();
        if (!strcmp(c, "spin") && argc > 2) return cmd_spin(argv[2]);
        if (!strcmp(c, "segv")) return *(volatile int *)8;
        return 2;
}
