/* What a running job needs from the rest of the worker, and the only way
 * it reaches it: the worker's shared parts (its configuration, storage
 * caches, pools, and the backend that runs commands), and, through ctx
 * (its slot, worker/daemon/slots.c), the database and the job's claim.
 * The job's code (worker/job/) holds no database connection and touches
 * no claim gate of its own.
 *
 * The claim (worker/exec/claim_gate.h).  A claim's rows come before its
 * commit is durable, and the job is prepared meanwhile: its disk, its
 * directory, its volumes, image and artifact base (lookup only reads).
 * Nothing of the job starts, and nothing about it is written, before the
 * claim committed:
 *  - what is written (event, append_logs) is held by ctx's side until the
 *    claim committed, and dropped when it did not; so is the job's result
 *    (the slot then records and counts nothing of it);
 *  - the job's own path waits for the claim in one place: the backend's
 *    start (backend_wait_claim, worker/exec/backend.c), before it spawns
 *    a process of the job, or right after it handed the job to a warm
 *    sandbox, which starts it by itself once claim_fd is readable. */
#ifndef BC_WORKER_JOB_SERVICES_H
#define BC_WORKER_JOB_SERVICES_H

#include <stdbool.h>

#include <libpq-fe.h>

#include "common/error.h"

struct backend;
struct claimed_job;
struct dir_bin;
struct disk_budget;
struct livelog_batch;
struct metrics;
struct secret_keyring;
struct session_registry;
struct store;
struct worker_config;
struct ws_pool;

struct job_services {
        const struct worker_config *cfg;
        /* Runs the job's commands (backend.h); chosen once at start-up. */
        const struct backend *backend;
        struct store *store;     /* caches and S3 (store.h) */
        struct metrics *metrics; /* or NULL */
        struct ws_pool *ws_pool; /* ready workspaces, or NULL */
        struct dir_bin *dirs;    /* kept job directories, or NULL */
        /* The work dir's disk that workspaces may take (disk_budget.h), or
         * NULL: not budgeted (--sandbox none). */
        struct disk_budget *disk;
        /* The live sessions this worker holds (worker/session/), or NULL:
         * none (--max-sessions 0, --sandbox none). */
        struct session_registry *sessions;
        /* The private keys that open job secrets (--secret-keys), or NULL. */
        const struct secret_keyring *secret_keys;

        void *ctx; /* the callbacks' */
        /* Events: appends to the job's audit trail (best effort; once the
         * claim committed). */
        void (*event)(void *ctx, const struct claimed_job *job, const char *kind,
                      const char *details_json);
        /* Called while the command runs (at least every 200 ms): events
         * kept back to go with the result are written once they waited
         * long enough.  Or NULL. */
        void (*tick)(void *ctx);
        /* Live logs: stores one batch of the job's output (livelog.h):
         * 0, or negative with err set when it was not stored (the database
         * is away, or the claim did not commit). */
        int (*append_logs)(void *ctx, const struct livelog_batch *batch, struct bc_error *err);
        /* Progress: stores one report of the job (a JSON object's text,
         * worker/job/progress.h) with boxcar.report_progress: 0 when stored
         * or ignored (the worker no longer holds the job's attempt),
         * negative with err set when not stored (the database is away, or
         * the claim did not commit).  Or NULL: reports are dropped. */
        int (*report_progress)(void *ctx, const struct claimed_job *job, const char *json,
                               struct bc_error *err);
        /* Storage lookups (store.h): one statement that only reads (an SQL
         * API function, with parameters) on one of the worker's shared
         * connections, held for that statement only.  The result (caller
         * PQclear()s it), or NULL with err set.  Allowed before the claim
         * committed. */
        PGresult *(*lookup)(void *ctx, const char *sql, int nparams, const char *const *params,
                            struct bc_error *err);
        /* The claim gate: waits until the claim is decided; true when it
         * committed.  Only the backend's start asks (see above). */
        bool (*claim_wait)(void *ctx);
        /* An eventfd readable once the claim committed (never when it did
         * not), for a process that starts the job by itself; -1: the claim
         * had committed when the job came. */
        int claim_fd;
};

#endif
