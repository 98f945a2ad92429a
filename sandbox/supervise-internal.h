/* The supervising side of boxcar-sandbox (see supervise.c). */
#ifndef BC_SANDBOX_SUPERVISE_INTERNAL_H
#define BC_SANDBOX_SUPERVISE_INTERNAL_H

#include "sandbox/helper-internal.h"

/* Runs c->argv in a new sandbox and waits for it; fills *ret (strings
 * owned by the caller: sandbox_status_done) and returns the helper's exit
 * code.  Blocks SIGCHLD/SIGTERM/SIGINT/SIGHUP/SIGQUIT for its own use. */
int sbx_supervise(const struct helper_config *c, struct sandbox_status *ret);

#endif
