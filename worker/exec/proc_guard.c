#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"
#include "worker/guard/wait.h"
#include "worker/exec/proc-internal.h"

/* Everything between fork() and _exit() below runs in a child of a
 * multi-threaded process: only async-signal-safe calls (no malloc, no
 * stdio, no locks another thread may have held at the fork). */


static int setup_fds(const struct proc_request *req, int out_w, int err_w, int usage_w)
{
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(out_w, STDOUT_FILENO) < 0 ||
            dup2(err_w, STDERR_FILENO) < 0)
                return -1;
        /* fd 3 is the job's (a status pipe) when asked for, 4 the guard's. */
        if (dup2(req->pass_fd >= 0 ? req->pass_fd : null, 3) < 0 || dup2(usage_w, 4) < 0)
                return -1;
        /* The fork copied every descriptor of the worker (its database
         * sockets, other jobs' output pipes): keep none of them, or another
         * job would never see the end of its output while this one runs. */
        g_close_from(5);
        return 0;
}

static _Noreturn void guard_main(const struct proc_request *req, const char *path, int out_w,
                                 int err_w, int usage_w, pid_t worker)
{
        guard_sigset guard_sigs = guard_begin(worker);
        if (setup_fds(req, out_w, err_w, usage_w) < 0)
                _exit(125);
        guard_run(req->cwd, path, req->argv, req->envp, req->pass_fd >= 0, guard_sigs);
}

/* boxcar-guard next to the running executable, or NULL (then the guard is
 * a fork of the worker, as before the program existed: a build tree or
 * an install without it still runs jobs, only slower). */
static char guard_exe[4096];
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static void find_guard(void)
{
        char self[4000];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
                return;
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (!slash)
                return;
        *slash = '\0';
        snprintf(guard_exe, sizeof(guard_exe), "%s/boxcar-guard", self);
        if (access(guard_exe, X_OK) != 0)
                guard_exe[0] = '\0';
}

/* A descriptor the spawn dups onto 0-4 must not be one of those targets
 * itself, or an earlier dup2 would overwrite it: moved up (caller closes
 * *tmp when it is not -1). */
static int above_targets(int fd, int *tmp)
{
        *tmp = -1;
        if (fd < 0 || fd > 4)
                return fd;
        *tmp = fcntl(fd, F_DUPFD_CLOEXEC, 5);
        return *tmp;
}

/* posix_spawn (vfork-like: no copy of the worker's address space) of
 * boxcar-guard.  Returns 0 or a negative errno. */
static int spawn_guard_exe(const struct proc_request *req, const char *path, int out_w, int err_w,
                           int usage_w, pid_t worker, pid_t *ret_pid)
{
        size_t argc = 0;
        while (req->argv[argc])
                argc++;
        char **argv = calloc(argc + 6, sizeof(*argv));
        if (!argv)
                return -ENOMEM;
        char pid[16];
        snprintf(pid, sizeof(pid), "%d", (int)worker);
        argv[0] = "boxcar-guard";
        argv[1] = pid;
        argv[2] = req->pass_fd >= 0 ? "1" : "0";
        argv[3] = (char *)(req->cwd ? req->cwd : "");
        argv[4] = (char *)path;
        for (size_t i = 0; i < argc; i++)
                argv[5 + i] = req->argv[i];
        int tmp[4];
        int fds[4] = { above_targets(out_w, &tmp[0]), above_targets(err_w, &tmp[1]),
                       above_targets(req->pass_fd, &tmp[2]), above_targets(usage_w, &tmp[3]) };
        int r = 0;
        for (int i = 0; i < 4; i++)
                if (fds[i] < 0 && (i != 2 || req->pass_fd >= 0))
                        r = -errno;
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fds[0], STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
        if (req->pass_fd >= 0)
                posix_spawn_file_actions_adddup2(&fa, fds[2], 3);
        else
                posix_spawn_file_actions_addopen(&fa, 3, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fds[3], 4);
        /* Its own process group from the start (a kill of the group right
         * after the spawn finds it). */
        bc_spawnattr_own_group(&attr);
        if (r == 0)
                r = -posix_spawn(ret_pid, guard_exe, &fa, &attr, argv, req->envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        for (int i = 0; i < 4; i++)
                if (tmp[i] >= 0)
                        close(tmp[i]);
        free(argv);
        return r;
}

int proc_guard_spawn(const struct proc_request *req, const char *path, int out_w, int err_w,
                     pid_t *ret_pid, int *ret_usage_fd)
{
        int usage[2];
        if (pipe2(usage, O_CLOEXEC) < 0)
                return -errno;
        pid_t worker = getpid();
        pthread_once(&guard_once, find_guard);
        if (guard_exe[0]) {
                int r = spawn_guard_exe(req, path, out_w, err_w, usage[1], worker, ret_pid);
                close(usage[1]);
                if (r < 0) {
                        close(usage[0]);
                        return r;
                }
                *ret_usage_fd = usage[0];
                return 0;
        }
        pid_t pid = fork();
        if (pid < 0) {
                int e = errno;
                close(usage[0]);
                close(usage[1]);
                return -e;
        }
        if (pid == 0)
                guard_main(req, path, out_w, err_w, usage[1], worker);
        close(usage[1]);
        /* Also here, so a kill of the group right after the fork finds it. */
        setpgid(pid, pid);
        *ret_pid = pid;
        *ret_usage_fd = usage[0];
        return 0;
}
