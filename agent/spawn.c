#include "agent/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

/* PATH when the request's env has none: what execvp(3) of glibc uses,
 * without the current directory. */
#define SPAWN_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
/* The child moves its fds above this before placing them, so a plan's fd
 * that is already one of 0 .. SPAWN_FDS_MAX-1 is not overwritten first. */
#define SPAWN_FD_STAGE 16

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

static void child_fail(int report_fd, char step, int err)
{
        struct spawn_report rep = { .step = step, .err = err };
        /* A short write leaves the agent with no report: it then says
         * the command exited 126/127, which is still the truth. */
        ssize_t n = write(report_fd, &rep, sizeof(rep));
        (void)n;
        _exit(err == ENOENT ? 127 : 126);
}

static void child(const struct spawn_plan *plan, int report_fd)
{
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* An ignored signal stays ignored across exec: the agent ignores
         * SIGPIPE, whoever started it may have ignored more, and a command
         * must die of them as usual. */
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        signal(sig, SIG_DFL);
        /* Out of the way of 0 .. n_fds-1 first, like the plan's fds. */
        int moved = fcntl(report_fd, F_DUPFD_CLOEXEC, SPAWN_FD_STAGE);
        if (moved < 0)
                _exit(126);
        report_fd = moved;
        if (setsid() < 0)
                child_fail(report_fd, SPAWN_STEP_EXEC, errno);
        int staged[SPAWN_FDS_MAX];
        for (int i = 0; i < plan->n_fds; i++) {
                staged[i] = fcntl(plan->fds[i], F_DUPFD_CLOEXEC, SPAWN_FD_STAGE);
                if (staged[i] < 0)
                        child_fail(report_fd, SPAWN_STEP_EXEC, errno);
        }
        for (int i = 0; i < plan->n_fds; i++)
                if (dup2(staged[i], i) < 0) /* dup2's copy is not CLOEXEC */
                        child_fail(report_fd, SPAWN_STEP_EXEC, errno);
        if (plan->cwd && plan->cwd[0] && chdir(plan->cwd) < 0)
                child_fail(report_fd, SPAWN_STEP_CHDIR, errno);
        child_fail(report_fd, SPAWN_STEP_EXEC, exec_search(plan->argv, plan->env));
}

int spawn_start(const struct spawn_plan *plan, pid_t *ret_pid, int *ret_report_fd)
{
        int rep[2] = { -1, -1 };
        int r = spawn_pipe(rep, 0);
        if (r < 0)
                return r;
        pid_t pid = fork();
        if (pid < 0) {
                r = -errno;
                close(rep[0]);
                close(rep[1]);
                return r;
        }
        if (pid == 0) {
                close(rep[0]);
                child(plan, rep[1]);
        }
        close(rep[1]);
        *ret_pid = pid;
        *ret_report_fd = rep[0];
        return 0;
}

int spawn_read_report(int *fd, struct spawn_report *ret)
{
        struct spawn_report rep;
        ssize_t n = *fd >= 0 ? read(*fd, &rep, sizeof(rep)) : -1;
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
        if (n != (ssize_t)sizeof(rep))
                return 0;
        *ret = rep;
        return 1;
}
