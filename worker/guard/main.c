/* boxcar-guard: the guard of a --sandbox none job (see proc-internal.h),
 * as a small program the worker starts with posix_spawn.  Forking the
 * worker itself for each guard copied its page tables and, with its slot
 * threads on other CPUs, cost a TLB shootdown per page written after the
 * fork: about 10 ms of CPU per job, most of a no-op job's cost.  Linked
 * with libc only, so its exec is cheap too.
 *
 *   boxcar-guard WORKER_PID PASS_FD(0|1) CWD PATH ARGV0 [ARGS...]
 *
 * fd 0-2 are the job's, fd 3 its status pipe (PASS_FD 1) or nothing, fd 4
 * the pipe for the command's struct rusage; the environment is the job's.
 * CWD "" keeps the current directory.  Exit codes 125 (the worker is
 * gone), 126 and 127 as a shell's. */
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "worker/guard/wait.h"

extern char **environ;



int main(int argc, char **argv)
{
        if (argc < 6)
                return 125;
        pid_t worker = (pid_t)atol(argv[1]);
        bool pass_fd = strcmp(argv[2], "1") == 0;
        const char *cwd = argv[3], *path = argv[4];
        char **job_argv = argv + 5;
        sigset_t guard_sigs;
        guard_begin(worker, &guard_sigs);
        syscall(SYS_close_range, 5U, ~0U, 0);
        if (cwd[0] && chdir(cwd) < 0) {
                guard_say("boxcar: cannot enter the working directory\n");
                _exit(126);
        }
        /* posix_spawn: vfork-like, nothing of the guard is copied. */
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        if (!pass_fd)
                posix_spawn_file_actions_addclose(&fa, 3);
        posix_spawn_file_actions_addclose(&fa, 4);
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        sigset_t none;
        sigemptyset(&none);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
        pid_t job;
        int e = posix_spawn(&job, path, &fa, &attr, job_argv, environ);
        if (e != 0)
                guard_exec_failed(job_argv[0], e);
        close(STDIN_FILENO);
        close(STDOUT_FILENO);
        close(STDERR_FILENO);
        close(3);
        guard_wait(job, &guard_sigs);
}
