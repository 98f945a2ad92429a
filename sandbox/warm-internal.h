/* A warm sandbox's supervisor (see warm.c). */
#ifndef BC_SANDBOX_WARM_INTERNAL_H
#define BC_SANDBOX_WARM_INTERNAL_H

#include "sandbox/helper-internal.h"

/* --warm: makes the sandbox, reports it ready on c->control_fd, runs the
 * one job that comes over it; writes the status to the fd the job brought.
 * Returns the exit code. */
int sbx_supervise_warm(const struct helper_config *c);

#endif
