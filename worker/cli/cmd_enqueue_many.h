/* `boxcar enqueue --many FILE`: many jobs in one call (boxcar.enqueue_many). */
#ifndef BC_WORKER_CLI_CMD_ENQUEUE_MANY_H
#define BC_WORKER_CLI_CMD_ENQUEUE_MANY_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "common/error.h"

/* The jobs file as one JSON array text: path ('-': stdin, at most 64 MiB)
 * holds a JSON array of job objects, or JSON lines (one object a line,
 * blank lines skipped).  The caller frees *ret.  A file that is neither is
 * BC_USAGE naming the line. */
int enqueue_many_read(const char *path, char **ret, struct bc_error *err);

/* Enqueues the jobs of path in one transaction and prints their ids, one
 * a line in input order (a JSON array of them on one line with json). */
int enqueue_many_run(PGconn *conn, const char *path, bool json, struct bc_error *err);

#endif
