/* `boxcar queue caps`: a queue's caps (sql/39_caps_quotas.sql). */
#ifndef BC_WORKER_CLI_CMD_QUEUE_CAPS_H
#define BC_WORKER_CLI_CMD_QUEUE_CAPS_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "common/error.h"

/* argv: "caps" then the options and the queue name.  Prints the caps set
 * (as JSON with --json).  Returns the exit status. */
int cmd_queue_caps(int argc, char **argv, const char *url);

/* Prints every queue with caps, one a line (JSON with json). */
int cmd_queue_caps_ls(PGconn *conn, bool json, struct bc_error *err);

#endif
