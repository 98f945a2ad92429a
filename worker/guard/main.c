/* boxcar-guard: the guard of a --sandbox none job (see proc-internal.h),
 * as a small program the worker starts with posix_spawn.  Forking the
 * worker itself for each guard copied its page tables and, with its slot
 * threads on other CPUs, cost a TLB shootdown per page written after the
 * fork: about 10 ms of CPU per job, most of a no-op job's cost.  Built
 * with no libc where sys_raw.c can (see sys.h), so its exec is cheap too.
 *
 *   boxcar-guard WORKER_PID PASS_FD(0|1) CWD PATH ARGV0 [ARGS...]
 *
 * fd 0-2 are the job's, fd 3 its status pipe (PASS_FD 1) or nothing, fd 4
 * the pipe for the command's struct rusage; the environment is the job's.
 * CWD "" keeps the current directory.  Exit codes 125 (the worker is
 * gone), 126 and 127 as a shell's. */
#include <sys/types.h>

#include "worker/guard/sys.h"
#include "worker/guard/wait.h"

static pid_t parse_pid(const char *s)
{
        long v = 0;
        for (; *s >= '0' && *s <= '9' && v < 1L << 31; s++)
                v = v * 10 + (*s - '0');
        return *s || v >= 1L << 31 ? -1 : (pid_t)v;
}

int main(int argc, char **argv, char **envp)
{
        if (argc < 6)
                return 125;
        pid_t worker = parse_pid(argv[1]);
        int pass_fd = argv[2][0] == '1' && argv[2][1] == '\0';
        const char *cwd = argv[3], *path = argv[4];
        char **job_argv = argv + 5;
        guard_sigset sigs = guard_begin(worker);
        g_close_from(5);
        guard_run(cwd, path, job_argv, envp, pass_fd, sigs);
}
