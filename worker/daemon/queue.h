/* The worker's calls into the SQL API (sql/30_claim.sql, 40_manage.sql):
 * thin, parameterised wrappers, one per function. */
#ifndef BC_WORKER_DAEMON_QUEUE_H
#define BC_WORKER_DAEMON_QUEUE_H

#include <libpq-fe.h>
#include <stddef.h>

#include "common/error.h"
#include "worker/config/config.h"
#include "worker/job/job.h"

/* LISTEN on boxcar_jobs, boxcar_cancel and boxcar_webhooks (again after
 * every reconnect). */
int queue_listen(PGconn *conn, struct bc_error *err);

/* BOXCAR_WEBHOOK_URL becomes the database-wide default webhook URL. */
int queue_set_default_webhook(PGconn *conn, const char *url, struct bc_error *err);

/* Registers (or re-registers, after a reconnect) this worker process:
 * instance is new at every process start, cfg->worker_id only a name. */
int queue_register(PGconn *conn, const struct worker_config *cfg, const char *instance,
                   struct bc_error *err);

/* Rescues the running jobs that worker_id holds under another instance: an
 * earlier process of this name that is gone.  Returns how many. */
int queue_rescue_orphans(PGconn *conn, const char *worker_id, const char *instance,
                         struct bc_error *err);
int queue_set_state(PGconn *conn, const char *worker_id, const char *state, struct bc_error *err);

/* Claims up to n jobs; *ret_jobs gets a new array of *ret_n claimed jobs
 * (free each with claimed_job_free, then the array).  With *ret_pending
 * the jobs came before the claim's commit was durable: the caller may
 * prepare them, must start none and write nothing about them until
 * queue_claim_commit says the claim committed, and must call it before
 * anything else on conn. */
int queue_claim(PGconn *conn, const struct worker_config *cfg, const char *instance, unsigned n,
                struct claimed_job ***ret_jobs, size_t *ret_n, bool *ret_pending,
                struct bc_error *err);
/* 0: the pending claim committed; negative: it did not, or its answer was
 * lost (db_connection_lost(conn)): its jobs are not this worker's to run
 * (one whose claim did commit unseen is released by the next heartbeat). */
int queue_claim_commit(PGconn *conn, struct bc_error *err);

/* Extends the leases of the jobs this instance holds; *ret_ids gets their
 * ids as one string of 36-char ids separated by spaces (caller frees). */
int queue_heartbeat(PGconn *conn, const struct worker_config *cfg, const char *instance,
                    char **ret_ids, struct bc_error *err);

/* Hands a job this worker holds back to the queue, its attempt not
 * counted (boxcar.release, whatever the attempt): 1, or 0 when the worker
 * no longer held it. */
int queue_release(PGconn *conn, const char *worker_id, const char *job_id, struct bc_error *err);

/* Retries a job this worker holds as a lost attempt (WORKER_LOST with
 * message; failed when it was the last): 1, or 0 when the worker no
 * longer held it. */
int queue_retry_lost(PGconn *conn, const char *worker_id, const char *job_id, const char *message,
                     struct bc_error *err);

/* Returns how many expired jobs were rescued, or a negative errno. */
int queue_rescue(PGconn *conn, struct bc_error *err);

/* Takes or renews the housekeeping lease; 1 while this worker leads. */
int queue_try_lead(PGconn *conn, const struct worker_config *cfg, struct bc_error *err);
int queue_resign(PGconn *conn, const char *worker_id, struct bc_error *err);
/* 1 when `boxcar worker drain` asked this worker to drain. */
int queue_drain_requested(PGconn *conn, const char *worker_id, struct bc_error *err);
/* Enqueues the due runs of periodic jobs (boxcar.schedule_tick); returns
 * how many.  The leader calls it every second. */
int queue_schedule_tick(PGconn *conn, struct bc_error *err);
/* After a short claim: in how many ms a rate-limited queue of the worker's
 * has a token for a waiting job (at least 1), or 0 when none is waiting on
 * its rate.  *ret_rated: whether any of the worker's queues has a rate. */
int queue_claim_delay_ms(PGconn *conn, const struct worker_config *cfg, bool *ret_rated,
                         struct bc_error *err);
/* Deletes at most max_rows finished jobs older than retention_s, oldest
 * first; returns how many. */
int queue_prune(PGconn *conn, double retention_s, unsigned max_rows, struct bc_error *err);

/* boxcar.active_queue_stats rows (queues with jobs queued or running):
 * queue, queued, scheduled, running, oldest_queued_age_s (caller
 * PQclear()s). */
PGresult *queue_stats(PGconn *conn, struct bc_error *err);

/* Which of the given job ids (space-separated) have a pending cancel. */
int queue_cancel_requested(PGconn *conn, const char *ids, char **ret_ids, struct bc_error *err);


/* One finished job for queue_report_batch. */
struct queue_report_row {
        const struct claimed_job *job;
        const struct job_outcome *o; /* JOB_DROP: only the events are written */
        const char *events_json;     /* JSON array of kept-back events, or NULL */
        int held;                    /* out: 1 recorded, 0 not held */
};

/* Records the results (and kept-back events) of n finished jobs in one
 * call (boxcar.report_batch): each row fenced on its own.  Returns 0 and
 * sets each row's held, or a negative errno when the call failed (nothing
 * of it was recorded then). */
int queue_report_batch(PGconn *conn, const char *worker_id, struct queue_report_row *rows,
                       size_t n, struct bc_error *err);

/* Writes a job's kept-back events (boxcar.add_worker_events). */
int queue_add_events(PGconn *conn, const char *worker_id, const struct claimed_job *job,
                     const char *events_json, struct bc_error *err);

#endif
