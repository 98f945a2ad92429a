/* A failing setup step (see setup-internal.h). */
#include "sandbox/setup-internal.h"

#include <stdio.h>
#include <string.h>

int setup_fail(struct setup_ctx *x, int e, const char *path, const char *what)
{
        snprintf(x->path, sizeof(x->path), "%s", path ? path : "");
        return bc_error_set(&x->err, BC_SANDBOX_SETUP, e, "%s %s: %s", what, path ? path : "",
                            strerror(e));
}
