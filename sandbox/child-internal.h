/* The sandboxed side of boxcar-sandbox (see child.c). */
#ifndef BC_SANDBOX_CHILD_INTERNAL_H
#define BC_SANDBOX_CHILD_INTERNAL_H

#include "sandbox/helper-internal.h"

/* Set in a GO message's wstatus when the sandbox is in a cgroup. */
#define SBX_GO_CGROUP 1

/* Runs in the child cloned with the new namespaces: waits for GO, builds
 * the root (copying host_ws_fd in when >= 0), reports READY with the
 * /workspace fd, waits for GO again, then becomes init and forks the
 * job.  Never returns; setup failures are sent over sock, then _exit. */
void sbx_child_main(const struct helper_config *c, int sock, int host_ws_fd)
        __attribute__((noreturn));

#endif
