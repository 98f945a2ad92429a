/* Schema migrations: migrations/NNNN_*.sql applied once each,
 * in order, recorded with their SHA-256; then every sql/ file re-applied.
 * All in one transaction under an advisory lock, so concurrent runs from
 * several replicas are safe: the second waits and then finds nothing to do. */
#ifndef BC_WORKER_DB_MIGRATE_H
#define BC_WORKER_DB_MIGRATE_H

#include <libpq-fe.h>

#include "common/error.h"
#include "worker/db/sql_files.h"

struct migrate_report {
        unsigned applied;   /* migrations applied by this run */
        unsigned already;   /* migrations found applied before */
        unsigned api_files; /* sql/ files re-applied */
};

/* Applies files[0..n) (names "migrations/…" or "sql/…", sorted) to conn.
 * Refuses, changing nothing, when an applied migration's text changed or
 * the database holds a migration this build does not know. */
int migrate_run(PGconn *conn, const struct sql_file *files, unsigned n,
                struct migrate_report *ret_report, struct bc_error *err);

/* For a worker before it starts: fails with BC_CONFIG and a message for
 * the operator when the schema is missing ("run boxcar migrate"), older
 * than files (a migration not applied) or newer (a migration not in
 * files: "upgrade the worker"). */
int migrate_check_schema(PGconn *conn, const struct sql_file *files, unsigned n,
                         struct bc_error *err);

#endif
