/* The process groups the agent started (one per command, one per
 * interpreter), for the kill at the end: when the worker hangs up, every
 * group the agent made is killed, what the commands left running in them
 * included.  Processes that made a session of their own (setsid) are in
 * no such group and live on until the sandbox ends, as they asked to. */
#ifndef BC_AGENT_GROUPS_H
#define BC_AGENT_GROUPS_H

#include <stddef.h>
#include <sys/types.h>

/* Groups whose leader the agent has reaped: the most recent ones (an older
 * group with someone still in it is the sandbox's to end). */
#define GROUPS_MAX 1024
struct groups {
        pid_t ended[GROUPS_MAX];
        size_t n, next;
};

void groups_init(struct groups *g);
/* pgid's leader has been reaped: its group may still hold processes. */
void groups_add_ended(struct groups *g, pid_t pgid);
/* SIGKILLs every group in g (not those whose id a new process has taken:
 * see groups.c). */
void groups_kill_ended(const struct groups *g);

#endif
