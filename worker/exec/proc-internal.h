/* Shared between proc.c and proc_guard.c only. */
#ifndef BC_WORKER_EXEC_PROC_INTERNAL_H
#define BC_WORKER_EXEC_PROC_INTERNAL_H

#include <sys/types.h>

#include "worker/exec/proc.h"

/* Starts req's command (at path, already resolved) under a guard process:
 * a child of the calling thread that leads the job's process group, runs
 * the command as its own child, and ends with the command's exit status or
 * signal.  When the worker dies (kill -9 included) the kernel tells the
 * guard (PR_SET_PDEATHSIG) and the guard kills the whole group, so no job
 * process outlives its worker.  *ret_usage_fd gets a pipe from which the
 * command's own struct rusage can be read once the guard has exited (the
 * guard's usage would count the worker's pages it shares).  Returns 0 or a
 * negative errno (fork failed). */
int proc_guard_spawn(const struct proc_request *req, const char *path, int out_w, int err_w,
                     pid_t *ret_pid, int *ret_usage_fd);

#endif
