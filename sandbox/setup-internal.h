/* Where a setup step of the sandbox failed, for the status object: the
 * child's root and network (rootfs, mount, egress_routes), a warm
 * supervisor's handoff.  child.c and warm.c report it to the supervising
 * side. */
#ifndef BC_SANDBOX_SETUP_INTERNAL_H
#define BC_SANDBOX_SETUP_INTERNAL_H

#include "common/error.h"
#include "sandbox/helper-internal.h"

/* Where a failing setup step was, for the status object. */
struct setup_ctx {
        const struct helper_config *c;
        enum sbx_step step;
        char path[512];
        struct bc_error err;
};

/* Fails the current step on `path` with errno e: fills ctx, returns -e. */
int setup_fail(struct setup_ctx *x, int e, const char *path, const char *what);

#endif
