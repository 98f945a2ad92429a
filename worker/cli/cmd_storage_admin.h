/* `boxcar storage rm|retain|gc|share|unshare|public`: removing versions,
 * retention policies, the collector, and which scopes may read a storage, beside cmd_storage.c's push, pull, ls and url. */
#ifndef BC_WORKER_CLI_CMD_STORAGE_ADMIN_H
#define BC_WORKER_CLI_CMD_STORAGE_ADMIN_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "common/error.h"

struct storage_admin_args {
        enum { ADMIN_RM, ADMIN_RETAIN, ADMIN_GC, ADMIN_SHARE, ADMIN_UNSHARE, ADMIN_PUBLIC } verb;
        char *ref;            /* rm: NAME[@VERSION]; retain, share, unshare, public: NAME */
        const char *scope;    /* share, unshare */
        bool public_on;       /* public */
        long keep_last;       /* retain: 0 = not set */
        double keep_within_s; /* retain: 0 = not set */
        bool keep_all;        /* retain --keep-all: no policy */
        double grace_s;       /* gc */
        bool dry_run;         /* gc */
};

/* Whether verb is one of these (argv[1] of `boxcar storage`). */
bool storage_admin_verb(const char *verb);
/* The arguments from argv[2] on, checked before connecting: BC_USAGE. */
int storage_admin_parse(int argc, char **argv, struct storage_admin_args *a, struct bc_error *err);
int storage_admin_run(PGconn *conn, const struct storage_admin_args *a, bool json,
                      struct bc_error *err);

#endif
