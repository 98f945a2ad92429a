/* The SQL API calls that the command line (worker/cli/) and the dashboard
 * (worker/http/ui*.c) both make: jobs, their events, logs, cancel and
 * retry, the queue overview, workers, sessions, webhook deliveries and
 * schedules.
 * One function per call, with parameters (never SQL built from values);
 * it returns what the server answered, read into the structs below, and
 * leaves printing and pages to its callers.
 *
 * JSON the server returns comes both as the server wrote it (`text`,
 * jsonb's own text form: what the command line prints) and parsed
 * (`json`: what a page reads).  A result struct owns everything its
 * pointers reach; its _done() function frees it (NULL-safe, and safe on a
 * zeroed struct).  Every function returns a negative errno with err set
 * when the call fails (db_exec's message), and writes its ret_ output only
 * on success. */
#ifndef BC_WORKER_DB_API_H
#define BC_WORKER_DB_API_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/cleanup.h"
#include "common/error.h"

struct cJSON;

/* One JSON value per row. */
struct api_json {
        const char *text;   /* as the server wrote it; points into res */
        struct cJSON *json; /* parsed; NULL when it is not readable JSON */
};

struct api_json_rows {
        PGresult *res; /* owns the texts */
        struct api_json *rows;
        size_t n;
};
void api_json_rows_done(struct api_json_rows *r);

/* A job's status ("queued" ... "cancelled"), a cancel's or a webhook
 * redrive's answer: short words, cut to fit. */
#define API_STATUS_MAX 32

/* ---- jobs ---- */

/* boxcar.jobs_list: newest first, a page at a time.  NULL members do not
 * filter; since is a timestamptz's text, after a cursor from next_cursor. */
struct api_jobs_filter {
        const char *queue, *status, *since, *after;
};
struct api_jobs_page {
        struct api_json_rows jobs; /* at most the limit asked for */
        const char *next_cursor;   /* NULL when no job follows; points into jobs.res */
};
/* limit: 1 to 1000 (the caller checks it); one row more is read to tell
 * whether a next page exists. */
int api_jobs_list(PGconn *conn, const struct api_jobs_filter *f, long limit,
                  struct api_jobs_page *ret, struct bc_error *err);
void api_jobs_page_done(struct api_jobs_page *p);

/* boxcar.job_json: the job in one row; returns 1, or 0 (and no row) when
 * there is no such job.  A malformed id is an error. */
int api_job(PGconn *conn, const char *id, struct api_json_rows *ret, struct bc_error *err);

/* The job's status and, when its result has one, its exit code; returns
 * 1, or 0 when there is no such job. */
struct api_job_state {
        char status[API_STATUS_MAX];
        bool has_exit_code;
        int exit_code;
};
int api_job_state(PGconn *conn, const char *id, struct api_job_state *ret, struct bc_error *err);

/* boxcar.job_events_json: the job's audit trail, oldest first (no rows
 * for a job that does not exist: api_job tells). */
int api_job_events(PGconn *conn, const char *id, struct api_json_rows *ret, struct bc_error *err);

/* boxcar.job_logs_after: the stored chunks after (attempt, seq), in order,
 * at most API_LOG_CHUNKS_MAX; a full batch means more may follow. */
#define API_LOG_CHUNKS_MAX 500
struct api_log_chunk {
        int attempt, seq;
        int stream;          /* 1 stdout, 2 stderr */
        unsigned char *data; /* the bytes as written (no terminating NUL) */
        size_t len;
};
struct api_log_chunks {
        struct api_log_chunk *rows;
        size_t n;
};
int api_job_logs_after(PGconn *conn, const char *id, int attempt, int seq,
                       struct api_log_chunks *ret, struct bc_error *err);
void api_log_chunks_done(struct api_log_chunks *c);

/* boxcar.cancel: the job's status after the call (running: its worker
 * was asked to stop it). */
int api_cancel(PGconn *conn, const char *id, char ret_status[API_STATUS_MAX],
               struct bc_error *err);

/* boxcar.retry: queues a failed or cancelled job again; by names who
 * asked, for the audit trail.  The job after the call, in one row. */
int api_retry(PGconn *conn, const char *id, const char *by, struct api_json_rows *ret,
              struct bc_error *err);

/* ---- queues, workers ---- */

/* boxcar.queue_overview, one row per queue, as text ready to show: the
 * age rounded to 0.1 s, the averages to 0.01 s ("-" when no job finished
 * in the last hour). */
struct api_queue_row {
        const char *queue, *queued, *scheduled, *running, *oldest_queued_s, *succeeded_last_hour,
                *failed_last_hour, *wait_avg_s, *run_avg_s;
};
struct api_queue_rows {
        PGresult *res; /* owns the strings */
        struct api_queue_row *rows;
        size_t n;
};
int api_queue_overview(PGconn *conn, struct api_queue_rows *ret, struct bc_error *err);
void api_queue_rows_done(struct api_queue_rows *q);
/* The same as one JSON array of its rows (to_jsonb), by queue. */
int api_queue_overview_json(PGconn *conn, struct api_json_rows *ret, struct bc_error *err);

/* boxcar.queue_chart(queue, span): span "hour" (12 buckets) or "day" (24),
 * oldest first, one JSON object a bucket: start and end (epoch seconds),
 * succeeded, failed, and wait_p50_s, wait_p95_s, run_p50_s, run_p95_s
 * (null when no job of the bucket ran). */
int api_queue_chart(PGconn *conn, const char *queue, const char *span, struct api_json_rows *ret,
                    struct bc_error *err);

/* boxcar.worker_status, by id, as text ready to show. */
struct api_worker_row {
        const char *id, *host, *pid, *state, *version;
        const char *load;          /* "running/concurrency" */
        const char *queues;        /* "a,b" (a queue name has no ',') */
        const char *heartbeat_utc; /* "YYYY-MM-DD HH24:MI:SS", UTC */
        const char *heartbeat;     /* the same in the session's time zone */
        bool leader, drain_requested;
};
struct api_worker_rows {
        PGresult *res; /* owns the strings */
        struct api_worker_row *rows;
        size_t n;
};
int api_workers(PGconn *conn, struct api_worker_rows *ret, struct bc_error *err);
void api_worker_rows_done(struct api_worker_rows *w);
/* The same rows whole (to_jsonb of each), by id. */
int api_workers_json(PGconn *conn, struct api_json_rows *ret, struct bc_error *err);

/* boxcar.request_drain: returns 1 when asked, 0 when there is no running
 * worker of that id. */
int api_request_drain(PGconn *conn, const char *worker_id, struct bc_error *err);

/* ---- sessions ---- */

/* A session's scope is its queue name's first part (a queue name has at
 * most 128 characters): it fits here with its NUL. */
#define API_SCOPE_MAX 256

/* boxcar.session_list, by scope and id, as text ready to show; scope NULL
 * lists every scope's. */
struct api_session_row {
        const char *scope, *id, *storage;
        const char *state;  /* live, stale (its hold lapsed), stopped, ended */
        const char *holder; /* the worker holding it, "" when none does */
        const char *jobs, *starts, *resumes, *idle_ends, *evictions;
        const char *last_job_utc;     /* "YYYY-MM-DD HH24:MI:SS", UTC; "-" before its first */
        const char *checkpoint;       /* the version it starts from next, "" before its first */
        const char *queued, *running; /* its jobs now */
        bool holder_alive;            /* the holder is registered and heartbeating */
        bool end_requested;           /* ending: its holder was asked to stop it */
};
struct api_session_rows {
        PGresult *res; /* owns the strings */
        struct api_session_row *rows;
        size_t n;
};
int api_sessions(PGconn *conn, const char *scope, struct api_session_rows *ret,
                 struct bc_error *err);
void api_session_rows_done(struct api_session_rows *s);
/* The same as one JSON array of the rows whole (to_jsonb), by scope and id. */
int api_sessions_json(PGconn *conn, const char *scope, struct api_json_rows *ret,
                      struct bc_error *err);

/* boxcar.end_session: "ending" (its worker checkpoints and stops it) or
 * "ended".  An unknown session is an error naming it. */
int api_end_session(PGconn *conn, const char *scope, const char *id,
                    char ret_status[API_STATUS_MAX], struct bc_error *err);

/* ---- webhook deliveries, schedules ---- */

/* boxcar.webhook_list: deliveries newest first, at most limit (1-10000),
 * only those that gave up with failed_only. */
int api_webhook_list(PGconn *conn, bool failed_only, long limit, struct api_json_rows *ret,
                     struct bc_error *err);

/* boxcar.webhook_retry: redrives a delivery; its status after the call
 * ("pending" when it was queued again). */
int api_webhook_retry(PGconn *conn, const char *id, char ret_status[API_STATUS_MAX],
                      struct bc_error *err);

/* boxcar.schedule_ls: every schedule, by name. */
int api_schedule_ls(PGconn *conn, struct api_json_rows *ret, struct bc_error *err);

#endif
