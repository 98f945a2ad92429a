#include "worker/guard/wait.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

void guard_say(const char *msg)
{
        ssize_t w = write(STDERR_FILENO, msg, strlen(msg));
        (void)w;
}

_Noreturn void guard_exec_failed(const char *argv0, int e)
{
        guard_say("boxcar: ");
        guard_say(argv0);
        guard_say(e == ENOENT ? ": not found\n" : e == EACCES ? ": permission denied\n"
                                                        : ": cannot be executed\n");
        _exit(e == ENOENT ? 127 : 126);
}

void guard_begin(pid_t worker, sigset_t *ret_sigs)
{
        setpgid(0, 0);
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        sigemptyset(ret_sigs);
        sigaddset(ret_sigs, SIGTERM);
        sigaddset(ret_sigs, SIGCHLD);
        sigprocmask(SIG_BLOCK, ret_sigs, NULL);
        /* Set before the parent check: a worker dying in between is seen
         * by one or the other. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0 || getppid() != worker)
                _exit(125);
}

/* Ends the guard the way the job ended, so the worker reads the job's own
 * exit code or signal. */
static _Noreturn void exit_like(int status)
{
        if (WIFEXITED(status))
                _exit(WEXITSTATUS(status));
        int sig = WTERMSIG(status);
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        sigaction(sig, &dfl, NULL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        kill(getpid(), sig);
        _exit(128 + sig);
}

_Noreturn void guard_wait(pid_t job, const sigset_t *sigs)
{
        for (;;) {
                siginfo_t si;
                if (sigwaitinfo(sigs, &si) < 0)
                        continue;
                if (si.si_signo == SIGTERM) {
                        /* The worker is gone: the whole group goes with it. */
                        kill(0, SIGKILL);
                        _exit(128 + SIGKILL);
                }
                int status;
                struct rusage usage;
                if (wait4(job, &status, WNOHANG, &usage) == job) {
                        ssize_t w = write(4, &usage, sizeof(usage));
                        (void)w;
                        exit_like(status);
                }
        }
}
