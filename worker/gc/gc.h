/* The storage collector: retention, then mark and sweep of the S3
 * objects nothing references any more (README: Retention and garbage
 * collection).  Run by `boxcar storage gc` and, every
 * --storage-gc-interval, by the worker that holds the housekeeping lease. */
#ifndef BC_WORKER_GC_GC_H
#define BC_WORKER_GC_GC_H

#include <libpq-fe.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "storage/storage.h"

struct gc_report {
        long versions_removed;    /* by the storages' retention policies */
        long versions_purged;     /* removed rows no queued or running job can need */
        long objects_deleted;     /* from S3 (dry run: that would be) */
        uint64_t bytes_reclaimed; /* their bytes */
        long objects_failed;      /* S3 refused or could not be reached: next run */
        uint64_t bytes_stored;    /* objects boxcar knows of, afterwards */
};

/* One collection on conn (its own connection: the sweep holds a
 * transaction per object while S3 deletes it).  Objects younger than
 * grace_s (since they were last registered) are never deleted, whatever
 * references them: that covers uploads whose version is not recorded yet.
 * dry_run: nothing is removed or deleted; the report says what would be
 * (retention is then not applied either: its versions are not counted).
 * Several collectors may run at once (rows are claimed with SKIP LOCKED);
 * the worker takes an advisory lock so that one does.  An object S3
 * would not delete is counted and left for the next run; a database
 * error stops the run (BC_DATABASE).  stop (may be NULL) ends the sweep
 * between two objects once set: a worker shutting down. */
int gc_run(PGconn *conn, const struct storage_config *s3, double grace_s, bool dry_run,
           const atomic_bool *stop, struct gc_report *ret, struct bc_error *err);

/* The report as one JSON object (caller frees). */
char *gc_report_json(const struct gc_report *r, bool dry_run);

#endif
