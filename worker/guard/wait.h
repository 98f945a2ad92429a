/* The guard's last part, shared by boxcar-guard and the worker's fork
 * fallback (proc_guard.c): wait for the job and end like it. */
#ifndef BC_WORKER_GUARD_WAIT_H
#define BC_WORKER_GUARD_WAIT_H

#include <signal.h>
#include <sys/types.h>

/* The guard's first part: leads its own process group, no core file (it
 * re-raises a job's crash), SIGTERM and SIGCHLD blocked into *ret_sigs,
 * and SIGTERM when the worker dies; _exit(125) when the worker is already
 * gone. */
void guard_begin(pid_t worker, sigset_t *ret_sigs);

/* Writes msg to stderr (async-signal-safe: a forked child's words). */
void guard_say(const char *msg);
/* Says on stderr that argv0 could not be executed (errno e), as a shell
 * would, and exits 127 (not found) or 126.  Async-signal-safe. */
_Noreturn void guard_exec_failed(const char *argv0, int e);

/* With stdio and fd 3 closed and sigs (SIGTERM, SIGCHLD) blocked: waits
 * for job; writes its struct rusage to fd 4 and exits the way it did
 * (its code, or re-raising its signal).  SIGTERM (the worker is gone)
 * kills the whole process group.  Never returns. */
_Noreturn void guard_wait(pid_t job, const sigset_t *sigs);

#endif
