/* Starting the sandbox (supervise-start.c): the clone of its init into
 * new namespaces, its ids mapped, the first GO. */
#ifndef BC_SANDBOX_SUPERVISE_START_INTERNAL_H
#define BC_SANDBOX_SUPERVISE_START_INTERNAL_H

#include "sandbox/supervisor-internal.h"

/* Clones the sandbox's init with *sock_child (and, warm, *job_sock_child:
 * the socket its job's process will wait on; NULL when cold), both
 * closed here. */
int sbx_sup_start_child(struct supervisor *s, int *sock_child, int *job_sock_child);
/* Root (s->c->host.own): the job's own user namespace into
 * s->job_userns, s->c's uid/gid mapped to its host ids and owned by them;
 * -1 with the failure recorded.  Unprivileged: nothing (0). */
int sbx_sup_make_job_userns(struct supervisor *s);
/* Moves the child into s->cg by pid (v2, or a v1 whose tasks files
 * could not be opened); a failure is recorded and the child killed. */
void sbx_sup_attach_by_pid(struct supervisor *s);
/* Moves the caller off the CPU a child it just made is queued on. */
void sbx_sup_move_off_new_childs_cpu(void);

#endif
