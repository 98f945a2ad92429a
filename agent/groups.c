#include "agent/groups.h"

#include <errno.h>
#include <signal.h>

void groups_init(struct groups *g)
{
        g->n = 0;
        g->next = 0;
}

void groups_add_ended(struct groups *g, pid_t pgid)
{
        g->ended[g->next] = pgid;
        g->next = (g->next + 1) % GROUPS_MAX;
        if (g->n < GROUPS_MAX)
                g->n++;
}

void groups_kill_ended(const struct groups *g)
{
        for (size_t i = 0; i < g->n; i++) {
                pid_t pgid = g->ended[i];
                /* The kernel frees a pid only when no process has it as
                 * its pid, process group or session: while the group
                 * holds anyone, no new process can take its id.  So a
                 * live process with pid == pgid means the group emptied
                 * and the id went to someone new (perhaps a process that
                 * made its own session, which must live on): skip it. */
                if (kill(pgid, 0) == 0 || errno != ESRCH)
                        continue;
                kill(-pgid, SIGKILL);
        }
}
