/* The sandboxed side of boxcar-sandbox (see child.c). */
#ifndef BC_SANDBOX_CHILD_INTERNAL_H
#define BC_SANDBOX_CHILD_INTERNAL_H

#include "sandbox/helper-internal.h"
#include "sandbox/seccomp-internal.h"

/* Set in a GO message's wstatus when the sandbox is in a cgroup; when
 * the message carries the network namespace (its last fd). */
#define SBX_GO_CGROUP 1
#define SBX_GO_NETNS 2
/* ... and when it carries the job's user namespace (before the network
 * namespace). */
#define SBX_GO_USERNS 4

struct child_args {
        const struct helper_config *c;
        const struct sbx_seccomp_prog *prog;
        int sock;      /* our end of the supervisor's socket */
        int cg_fds[4]; /* "tasks" files to move ourselves into */
        size_t n_cg_fds;
        int job_sock;     /* warm: the socket the job will come over to the
                            * job's process; -1 when cold */
        bool netns_later; /* cloned without CLONE_NEWNET: the supervisor
                            * makes the network namespace meanwhile */
        bool idmap_later; /* the idmap namespace comes in a GO after the
                            * first, while the base root is built */
        int userns;       /* warm, root: the job's user namespace, entered
                            * at the lock-down; -1: none, or (cold) it
                            * comes with the second GO */
};

/* Runs in the child cloned with the new namespaces: moves itself into the
 * cgroup (warm), waits for GO, builds the root.  Cold: reports READY,
 * waits for GO again (with the cgroup and maybe the network namespace),
 * then becomes init and forks the job.  Warm: locks down, forks
 * the job's process (which waits on job_sock for its job), reports WARM
 * and becomes init.  Never returns; setup failures are sent over the
 * socket, then _exit. */
void sbx_child_main(const struct child_args *a) __attribute__((noreturn));

#endif
