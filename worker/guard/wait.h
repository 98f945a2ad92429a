/* The guard's parts shared by boxcar-guard and the worker's fork fallback
 * (proc_guard.c): start, report a failed exec, wait for the job and end
 * like it.  Only the calls of sys.h: boxcar-guard has no libc. */
#ifndef BC_WORKER_GUARD_WAIT_H
#define BC_WORKER_GUARD_WAIT_H

#include <sys/types.h>

#include "worker/guard/sys.h"

/* The guard's first part: leads its own process group, no core file (it
 * re-raises a job's crash), SIGTERM and SIGCHLD blocked (returned), and
 * SIGTERM when the worker dies; exits 125 when the worker is already
 * gone. */
guard_sigset guard_begin(pid_t worker);

/* Writes msg to stderr. */
void guard_say(const char *msg);
/* Says on stderr that argv0 could not be executed (error e, positive), as
 * a shell would, and exits 127 (not found) or 126. */
_Noreturn void guard_exec_failed(const char *argv0, int e);

/* In the job's process: every signal at its default and none blocked (a
 * posix_spawn leaves glibc's internal signals 32 and 33 ignored, and an
 * exec keeps what is ignored), fd 3 closed unless keep_fd3, fd 4 closed,
 * then the exec; if that fails, says so as guard_exec_failed does. */
_Noreturn void guard_exec(const char *path, char *const argv[], char *const envp[], int keep_fd3);

/* The guard's second part, with the job's descriptors in place (0-2, 3
 * and 4 as boxcar-guard's usage says): enters cwd (NULL or "" keeps the
 * current one), forks the job (guard_exec), closes stdio and fd 3, and
 * waits for it (guard_wait).  Never returns. */
_Noreturn void guard_run(const char *cwd, const char *path, char *const argv[], char *const envp[],
                         int keep_fd3, guard_sigset sigs);

/* With stdio and fd 3 closed and sigs (SIGTERM, SIGCHLD) blocked: waits
 * for job; writes its struct rusage to fd 4 and exits the way it did
 * (its code, or re-raising its signal).  SIGTERM (the worker is gone)
 * kills the whole process group.  Never returns. */
_Noreturn void guard_wait(pid_t job, guard_sigset sigs);

#endif
