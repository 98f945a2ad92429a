/* The cold supervising side of boxcar-sandbox (see supervise.c; the
 * pieces it runs are supervisor-internal.h's, supervise-start-internal.h's
 * and supervise-dirs-internal.h's). */
#ifndef BC_SANDBOX_SUPERVISE_INTERNAL_H
#define BC_SANDBOX_SUPERVISE_INTERNAL_H

#include "sandbox/helper-internal.h"

/* Runs c->argv in a new sandbox and waits for it; reports how it ended
 * (sbx_report: c->status_fd, stderr) before its own teardown, and returns
 * the helper's exit code.  Blocks SIGCHLD/SIGTERM/SIGINT/SIGHUP/SIGQUIT for
 * its own use. */
int sbx_supervise(const struct helper_config *c);

#endif
