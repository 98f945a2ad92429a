/* Starting one program for the agent: a command of SW_RUN or a kept
 * interpreter.  The child gets its own session and process group
 * (setsid: a kill of the group reaches all it forks, and none of it can
 * signal the agent's group), the fds of the plan as 0, 1, 2, …, an empty
 * signal mask and default signal handling, the request's env and cwd;
 * PATH (the request env's) is searched when argv[0] has no '/'. */
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

/* Why a child did not exec: which step failed and its errno.  Such a
 * child exits 127 when the program is not there (ENOENT), 126 otherwise,
 * and is reaped like any other. */
enum spawn_step { SPAWN_STEP_NONE = 0, SPAWN_STEP_EXEC = 'e', SPAWN_STEP_CHDIR = 'c' };
struct spawn_report {
        char step; /* enum spawn_step; SPAWN_STEP_NONE: it exec'd */
        int err;
};

/* Notes the signals the agent ignores (SIGPIPE, and whatever its starter
 * left ignored), which its children get back at their default.  Call
 * once, after the agent's own signal setup and before any spawn_start. */
void spawn_init(void);

/* Starts the child of plan and returns once it has exec'd or given up
 * (the agent waits meanwhile: the child borrows its memory until then,
 * vfork(2)).  *ret_report says which; a child that gave up is still to be
 * reaped.  0 or a negative errno (no child); the plan's fds stay the
 * caller's either way. */
int spawn_start(const struct spawn_plan *plan, pid_t *ret_pid, struct spawn_report *ret_report);

/* A pipe for a child: the agent's end (agent_end: 0 read, 1 write) is
 * O_NONBLOCK, both are O_CLOEXEC. */
int spawn_pipe(int ret_fds[2], int agent_end);

#endif
