#include "agent/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* PATH when the request's env has none: what execvp(3) of glibc uses,
 * without the current directory. */
#define SPAWN_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* The signals a child resets to SIG_DFL (spawn_init): the ones the agent
 * ignores, since an ignored signal stays ignored across exec and a
 * command must die of SIGPIPE and the rest as usual.  The others need
 * nothing: exec itself resets a caught signal, and the agent catches
 * none. */
static int reset_sigs[NSIG];
static int n_reset;
/* The kernel's size of a signal set (64 signals), rt_sigaction's last
 * argument. */
#define SPAWN_KERNEL_SIGSET_SIZE 8

void spawn_init(void)
{
        n_reset = 0;
        for (int sig = 1; sig < NSIG; sig++) {
                struct sigaction sa;
                /* glibc keeps 32 and 33 for itself and refuses them
                 * (EINVAL) here and in signal(); they can still be
                 * ignored (GNU make 4.3 leaves them so for what it runs),
                 * so they are reset whatever they are. */
                if (sigaction(sig, NULL, &sa) < 0 || sa.sa_handler == SIG_IGN)
                        reset_sigs[n_reset++] = sig;
        }
}

int spawn_pipe(int ret_fds[2], int agent_end)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        /* O_NONBLOCK is per open file description: only the agent's end
         * gets it, the child's end stays blocking as programs expect. */
        if (fcntl(p[agent_end], F_SETFL, O_NONBLOCK) < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        ret_fds[0] = p[0];
        ret_fds[1] = p[1];
        return 0;
}

static const char *env_path(char *const *env)
{
        for (size_t i = 0; env && env[i]; i++)
                if (strncmp(env[i], "PATH=", 5) == 0)
                        return env[i] + 5;
        return SPAWN_DEFAULT_PATH;
}

/* execve through PATH, as execvpe(3) would with the request's env rather
 * than the agent's: the first EACCES is remembered (a later entry may
 * still have the program), ENOENT/ENOTDIR go on to the next entry.
 * Returns the errno to report. */
static int exec_search(char *const *argv, char *const *env)
{
        const char *name = argv[0];
        if (strchr(name, '/')) {
                execve(name, argv, env);
                return errno;
        }
        size_t nlen = strlen(name);
        if (nlen == 0 || nlen >= NAME_MAX)
                return ENOENT;
        bool eacces = false;
        for (const char *p = env_path(env);; p++) {
                const char *end = strchrnul(p, ':');
                size_t dlen = (size_t)(end - p);
                char path[PATH_MAX];
                if (dlen + 1 + nlen < sizeof(path)) {
                        /* An empty entry is the current directory. */
                        memcpy(path, dlen ? p : ".", dlen ? dlen : 1);
                        size_t at = dlen ? dlen : 1;
                        path[at] = '/';
                        memcpy(path + at + 1, name, nlen + 1);
                        execve(path, argv, env);
                        if (errno == EACCES)
                                eacces = true;
                        else if (errno != ENOENT && errno != ENOTDIR)
                                return errno;
                }
                if (*end == '\0')
                        break;
                p = end;
        }
        return eacces ? EACCES : ENOENT;
}

/* The child below runs between vfork and exec, on the agent's stack and
 * in its memory (see spawn_start): it calls nothing but syscall wrappers
 * (no malloc, no stdio, no locks, no atexit: _exit), writes nothing of
 * the agent's but the report and errno (which the agent does not read
 * after a vfork that worked), and never returns. */

static _Noreturn void child_fail(volatile struct spawn_report *rep, char step, int err)
{
        rep->step = step;
        rep->err = err;
        _exit(err == ENOENT ? 127 : 126);
}

/* The plan's fds become 0 .. n-1.  A plan fd that is itself one of
 * 0 .. n-1 could be overwritten by an earlier dup2: only those are first
 * copied above n-1 (the agent's pipes normally are already).  dup2's
 * copies are not close-on-exec; the plan's fds and those copies are. */
static int place_fds(const struct spawn_plan *plan)
{
        int n = plan->n_fds;
        int src[SPAWN_FDS_MAX];
        for (int i = 0; i < n; i++) {
                src[i] = plan->fds[i];
                if (src[i] < n) {
                        src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, n);
                        if (src[i] < 0)
                                return errno;
                }
        }
        for (int i = 0; i < n; i++)
                if (dup2(src[i], i) < 0)
                        return errno;
        return 0;
}

static _Noreturn void child(const struct spawn_plan *plan, volatile struct spawn_report *rep)
{
        /* The agent blocks SIGCHLD (it reads it from a signalfd); a
         * command starts with nothing blocked. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* The raw syscall, which takes 32 and 33 too; all zeros is
         * SIG_DFL with no flags in any ABI's struct sigaction. */
        static const unsigned long dfl[8];
        for (int i = 0; i < n_reset; i++)
                syscall(SYS_rt_sigaction, reset_sigs[i], dfl, NULL, SPAWN_KERNEL_SIGSET_SIZE);
        if (setsid() < 0)
                child_fail(rep, SPAWN_STEP_EXEC, errno);
        int err = place_fds(plan);
        if (err)
                child_fail(rep, SPAWN_STEP_EXEC, err);
        if (plan->cwd && plan->cwd[0] && chdir(plan->cwd) < 0)
                child_fail(rep, SPAWN_STEP_CHDIR, errno);
        child_fail(rep, SPAWN_STEP_EXEC, exec_search(plan->argv, plan->env));
}

int spawn_start(const struct spawn_plan *plan, pid_t *ret_pid, struct spawn_report *ret_report)
{
        /* vfork, not fork: the child borrows the agent's memory instead of
         * a copy of its page tables, so neither process then takes a
         * copy-on-write fault for every page it writes, and the child's
         * failure comes back in memory instead of a pipe.  The agent is
         * held until the child's exec (a fraction of a millisecond: the
         * exec's own cost), which is as long as other jobs' output waits.
         * Safe because the child keeps to child()'s rules and the agent
         * has no signal handler a signal could run in the child (main.c);
         * hence the two NOLINTs, whose checks allow nothing but exec or
         * _exit after a vfork.  A child that stalls before its exec (one
         * a job stops, say) holds the agent, but a job can stop the agent
         * itself just as well (README.md, Trust).  volatile: written by
         * the child, read here after it. */
        volatile struct spawn_report rep = { .step = SPAWN_STEP_NONE };
        pid_t pid = vfork(); /* NOLINT(clang-analyzer-security.insecureAPI.vfork) */
        if (pid == 0)
                child(plan, &rep); /* NOLINT(clang-analyzer-unix.Vfork) */
        if (pid < 0)
                return -errno;
        *ret_pid = pid;
        *ret_report = (struct spawn_report){ .step = rep.step, .err = rep.err };
        return 0;
}
