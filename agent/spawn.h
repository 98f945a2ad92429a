/* Starting one program for the agent: a command of SW_RUN or a kept
 * interpreter.  The child gets its own session and process group
 * (setsid: a kill of the group reaches all it forks, and none of it can
 * signal the agent's group), the fds of the plan as 0, 1, 2, …, default
 * signal handling, the request's env and cwd; PATH (the request env's) is
 * searched when argv[0] has no '/'.  Setup failures come back through the
 * plan's report pipe. */
#ifndef BC_AGENT_SPAWN_H
#define BC_AGENT_SPAWN_H

#include <sys/types.h>

#define SPAWN_FDS_MAX 5

struct spawn_plan {
        char *const *argv;
        char *const *env;
        const char *cwd; /* "" or NULL: the agent's */
        /* The child's fds 0 .. n_fds-1; the agent's copies stay its own. */
        int fds[SPAWN_FDS_MAX];
        int n_fds;
};

/* What a child that could not exec writes to its report pipe before it
 * exits (127 when the program is not there, 126 otherwise): which step
 * failed and its errno.  A report pipe that closes with nothing on it
 * means the exec happened. */
enum spawn_step { SPAWN_STEP_EXEC = 'e', SPAWN_STEP_CHDIR = 'c' };
struct spawn_report {
        char step; /* enum spawn_step */
        int err;
};

/* Forks the child of plan.  *ret_report_fd: the read end of the report
 * pipe (O_CLOEXEC, O_NONBLOCK; read it once the child is reaped, with
 * spawn_read_report).  0 or a negative errno; the plan's fds stay the
 * caller's either way. */
int spawn_start(const struct spawn_plan *plan, pid_t *ret_pid, int *ret_report_fd);

/* Reads a reaped child's report: 1 with *ret filled (it did not exec), 0
 * when it exec'd.  Closes *fd. */
int spawn_read_report(int *fd, struct spawn_report *ret);

/* A pipe for a child: the agent's end (agent_end: 0 read, 1 write) is
 * O_NONBLOCK, both are O_CLOEXEC. */
int spawn_pipe(int ret_fds[2], int agent_end);

#endif
