#include "worker/guard/wait.h"

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

void guard_say(const char *msg)
{
        size_t n = 0;
        while (msg[n])
                n++;
        (void)g_write(2, msg, n);
}

_Noreturn void guard_exec_failed(const char *argv0, int e)
{
        guard_say("boxcar: ");
        guard_say(argv0);
        guard_say(e == ENOENT   ? ": not found\n"
                  : e == EACCES ? ": permission denied\n"
                                : ": cannot be executed\n");
        g_exit(e == ENOENT ? 127 : 126);
}

_Noreturn void guard_exec(const char *path, char *const argv[], char *const envp[], int keep_fd3)
{
        for (int sig = 1; sig <= 64; sig++)
                g_sig_default(sig);
        g_sigprocmask(SIG_SETMASK, 0);
        if (!keep_fd3)
                g_close(3);
        g_close(4);
        guard_exec_failed(argv[0], (int)-g_execve(path, argv, envp));
}

guard_sigset guard_begin(pid_t worker)
{
        g_setpgid(0, 0);
        g_prctl(PR_SET_DUMPABLE, 0);
        guard_sigset sigs = GUARD_SIGBIT(SIGTERM) | GUARD_SIGBIT(SIGCHLD);
        g_sigprocmask(SIG_BLOCK, sigs);
        /* Set before the parent check: a worker dying in between is seen
         * by one or the other. */
        if (g_prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || g_getppid() != worker)
                g_exit(125);
        return sigs;
}

/* Ends the guard the way the job ended, so the worker reads the job's own
 * exit code or signal. */
static _Noreturn void exit_like(int status)
{
        if (WIFEXITED(status))
                g_exit(WEXITSTATUS(status));
        int sig = WTERMSIG(status);
        g_sig_default(sig);
        g_sigprocmask(SIG_UNBLOCK, GUARD_SIGBIT(sig));
        g_kill(g_getpid(), sig);
        g_exit(128 + sig);
}

_Noreturn void guard_wait(pid_t job, guard_sigset sigs)
{
        for (;;) {
                long sig = g_sigwait(sigs);
                if (sig < 0)
                        continue;
                if (sig == SIGTERM) {
                        /* The worker is gone: the whole group goes with it. */
                        g_kill(0, SIGKILL);
                        g_exit(128 + SIGKILL);
                }
                int status;
                struct rusage usage;
                if (g_wait4(job, &status, WNOHANG, &usage) == job) {
                        (void)g_write(4, &usage, sizeof(usage));
                        exit_like(status);
                }
        }
}

_Noreturn void guard_run(const char *cwd, const char *path, char *const argv[], char *const envp[],
                         int keep_fd3, guard_sigset sigs)
{
        if (cwd && cwd[0] && g_chdir(cwd) < 0) {
                guard_say("boxcar: cannot enter the working directory\n");
                g_exit(126);
        }
        /* boxcar-guard is small (no libc, a few pages), and the fallback's
         * fork is already a copy of the worker: the fork copies little. */
        pid_t job = g_fork();
        if (job < 0) {
                guard_say("boxcar: fork failed\n");
                g_exit(126);
        }
        if (job == 0)
                guard_exec(path, argv, envp, keep_fd3);
        g_close(0);
        g_close(1);
        g_close(2);
        g_close(3);
        guard_wait(job, sigs);
}
