/* The guard's system calls through glibc (see sys.h). */
#include "worker/guard/sys.h"

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long ret(long r)
{
        return r < 0 ? -errno : r;
}

static sigset_t to_sigset(guard_sigset set)
{
        sigset_t s;
        sigemptyset(&s);
        for (int sig = 1; sig <= 64; sig++)
                if (set & GUARD_SIGBIT(sig))
                        sigaddset(&s, sig);
        return s;
}

long g_setpgid(pid_t pid, pid_t pgid)
{
        return ret(setpgid(pid, pgid));
}
long g_prctl(int option, unsigned long arg)
{
        return ret(prctl(option, arg, 0, 0, 0));
}
pid_t g_getpid(void)
{
        return getpid();
}
pid_t g_getppid(void)
{
        return getppid();
}
long g_kill(pid_t pid, int sig)
{
        return ret(kill(pid, sig));
}
pid_t g_fork(void)
{
        return (pid_t)ret(fork());
}
long g_chdir(const char *path)
{
        return ret(chdir(path));
}
long g_close(int fd)
{
        return ret(close(fd));
}
long g_write(int fd, const void *buf, size_t n)
{
        return ret(write(fd, buf, n));
}
_Noreturn void g_exit(int code)
{
        _exit(code);
}

long g_sigprocmask(int how, guard_sigset set)
{
        sigset_t s = to_sigset(set);
        return ret(sigprocmask(how, &s, NULL));
}

long g_sigwait(guard_sigset set)
{
        sigset_t s = to_sigset(set);
        siginfo_t si;
        return ret(sigwaitinfo(&s, &si));
}

/* The system call, not sigaction(): glibc refuses its internal signals
 * (32, 33), which a posix_spawn leaves ignored in the guard.  All zeros is
 * SIG_DFL with no flags and an empty mask in every architecture's kernel
 * struct sigaction. */
long g_sig_default(int sig)
{
        unsigned long dfl[8] = { 0 };
        return ret(syscall(SYS_rt_sigaction, sig, dfl, NULL, (size_t)(_NSIG - 1) / 8));
}

long g_wait4(pid_t pid, int *status, int options, struct rusage *usage)
{
        return ret(wait4(pid, status, options, usage));
}

long g_execve(const char *path, char *const argv[], char *const envp[])
{
        return ret(execve(path, argv, envp));
}

long g_close_from(int first)
{
        if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0)
                return 0;
        /* A kernel before 5.9: one by one, up to the descriptor limit. */
        struct rlimit rl;
        int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur
                                                                            : 65536;
        for (int fd = first; fd < max; fd++)
                close(fd);
        return 0;
}
