/* Reaps children whose exit no one waits for: a sandbox helper that has
 * reported its job's end and is still removing its cgroup and namespaces.
 * The slot that ran the job is free by then; this thread waits for the
 * exit, kills what is left of the child's process group, and collects it,
 * so no zombie stays behind and a helper stuck in its teardown is killed. */
#ifndef BC_WORKER_EXEC_PROC_REAPER_H
#define BC_WORKER_EXEC_PROC_REAPER_H

#include <stdbool.h>
#include <sys/types.h>

/* Takes pid (our child, leading its process group) and pidfd (-1 when the
 * kernel has none: then polled), which it closes; on_reaped (or NULL) is
 * called with ctx and its wait status once collected.  Never fails:
 * without a thread or memory, it waits for the exit right here. */
void proc_reaper_adopt(pid_t pid, int pidfd, void (*on_reaped)(void *ctx, pid_t pid, int wstatus),
                       void *ctx);

/* Waits up to timeout_s for every adopted child to exit, then kills the
 * rest and collects them.  Returns how many had to be killed.  For the
 * worker's exit: a helper killed by our death would leave its cgroup. */
unsigned proc_reaper_drain(double timeout_s);

#endif
