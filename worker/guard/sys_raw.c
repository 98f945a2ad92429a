/* The guard's system calls as raw x86-64 system calls (see sys.h), and
 * the program's entry point: boxcar-guard is linked with no libc. */
#include "worker/guard/sys.h"

#include <asm/unistd.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>

#if !defined(__x86_64__)
#error "sys_raw.c is x86-64 only: build the guard with sys_libc.c"
#endif

/* The kernel's struct sigaction on x86-64 (not glibc's). */
struct kernel_sigaction {
        void (*handler)(int);
        unsigned long flags;
        void (*restorer)(void);
        guard_sigset mask;
};

static long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
        register long r10 __asm__("r10") = d;
        register long r8 __asm__("r8") = e;
        register long r9 __asm__("r9") = f;
        long r;
        __asm__ volatile("syscall"
                         : "=a"(r)
                         : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
        return r;
}

#define SYS(nr, a, b, c, d) sys6((nr), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

long g_setpgid(pid_t pid, pid_t pgid)
{
        return SYS(__NR_setpgid, pid, pgid, 0, 0);
}
long g_prctl(int option, unsigned long arg)
{
        return SYS(__NR_prctl, option, arg, 0, 0);
}
pid_t g_getpid(void)
{
        return (pid_t)SYS(__NR_getpid, 0, 0, 0, 0);
}
pid_t g_getppid(void)
{
        return (pid_t)SYS(__NR_getppid, 0, 0, 0, 0);
}
long g_kill(pid_t pid, int sig)
{
        return SYS(__NR_kill, pid, sig, 0, 0);
}
long g_chdir(const char *path)
{
        return SYS(__NR_chdir, path, 0, 0, 0);
}
long g_close(int fd)
{
        return SYS(__NR_close, fd, 0, 0, 0);
}
long g_write(int fd, const void *buf, size_t n)
{
        return SYS(__NR_write, fd, buf, n, 0);
}

long g_sigprocmask(int how, guard_sigset set)
{
        return SYS(__NR_rt_sigprocmask, how, &set, 0, sizeof(set));
}

long g_sigwait(guard_sigset set)
{
        siginfo_t si;
        return SYS(__NR_rt_sigtimedwait, &set, &si, 0, sizeof(set));
}

long g_sig_default(int sig)
{
        struct kernel_sigaction dfl = { .handler = SIG_DFL };
        return SYS(__NR_rt_sigaction, sig, &dfl, 0, sizeof(dfl.mask));
}

long g_wait4(pid_t pid, int *status, int options, struct rusage *usage)
{
        return SYS(__NR_wait4, pid, status, options, usage);
}

pid_t g_fork(void)
{
        return (pid_t)SYS(__NR_clone, SIGCHLD, 0, 0, 0);
}

long g_execve(const char *path, char *const argv[], char *const envp[])
{
        return SYS(__NR_execve, path, argv, envp, 0);
}

long g_close_from(int first)
{
        if (SYS(__NR_close_range, first, ~0U, 0, 0) == 0)
                return 0;
        /* A kernel before 5.9: one by one, up to the descriptor limit. */
        struct rlimit rl;
        long max = SYS(__NR_prlimit64, 0, RLIMIT_NOFILE, 0, &rl) == 0 && rl.rlim_cur < 65536
                           ? (long)rl.rlim_cur
                           : 65536;
        for (long fd = first; fd < max; fd++)
                g_close((int)fd);
        return 0;
}

_Noreturn void g_exit(int code)
{
        for (;;)
                SYS(__NR_exit_group, code, 0, 0, 0);
}

/* What the compiler may call for a structure's initialisation or copy.
 * Volatile: else it may make these very loops into calls of themselves. */
void *memset(void *dst, int c, size_t n);
void *memcpy(void *restrict dst, const void *restrict src, size_t n);

void *memset(void *dst, int c, size_t n)
{
        volatile unsigned char *d = dst;
        while (n--)
                *d++ = (unsigned char)c;
        return dst;
}

void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
        volatile unsigned char *d = dst;
        const unsigned char *s = src;
        while (n--)
                *d++ = *s++;
        return dst;
}

int main(int argc, char **argv, char **envp);
_Noreturn void guard_start(long *sp);

/* The stack at entry: argc, argv[0..argc-1], NULL, envp..., NULL. */
_Noreturn void guard_start(long *sp)
{
        int argc = (int)sp[0];
        char **argv = (char **)(sp + 1);
        g_exit(main(argc, argv, argv + argc + 1));
}

/* The ABI's entry: the stack pointer as the argument, the stack aligned to
 * 16 bytes for the call. */
__asm__(".text\n"
        ".globl _start\n"
        ".type _start, @function\n"
        "_start:\n"
        "        xor %rbp, %rbp\n"
        "        mov %rsp, %rdi\n"
        "        and $-16, %rsp\n"
        "        call guard_start\n"
        "        hlt\n");
