/* `boxcar ui`'s server, the web dashboard (worker/http/ui*.c).  The
 * command line (worker/cli/cmd_ui.c) reads the options; this checks them
 * and serves. */
#ifndef BC_WORKER_HTTP_UI_H
#define BC_WORKER_HTTP_UI_H

#include <stdbool.h>

#include "common/error.h"

struct ui_options {
        const char *db_url;     /* NULL: libpq's defaults */
        const char *listen;     /* HOST:PORT */
        const char *token_file; /* the token's file, else token_env */
        const char *token_env;  /* $BOXCAR_UI_TOKEN, or NULL */
        const char *user;       /* the basic-auth user name */
        bool actions, no_auth, secure_cookie;
};

/* Checks the options (address, auth and token), connects to the database
 * and serves until SIGINT or SIGTERM (blocked in the calling thread from
 * then on).  Returns 0 once stopped, or a negative errno with err set:
 * BC_USAGE for options that do not go together. */
int ui_run(const struct ui_options *o, struct bc_error *err);

#endif
