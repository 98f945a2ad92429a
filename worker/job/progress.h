/* A running job's progress reports, from its bytes to what is stored: the
 * job writes JSON objects, one a line (docs/job-spec.md, "Progress"); each
 * line is checked here and the reports kept are stored through a callback
 * (the job's services: boxcar.report_progress), at most one every
 * PROGRESS_INTERVAL_MS.  A report that comes sooner waits, and a newer one
 * replaces it (the latest wins); the one waiting when the job ends is
 * always stored (progress_finish).
 *
 * The job is not trusted: a line is at most PROGRESS_LINE_MAX bytes (a
 * longer one is read and dropped as it comes, never buffered), must be
 * one JSON value PostgreSQL's jsonb takes (common/json_strict.h), and an
 * object.  Each kind of refusal is said once per job by a warning
 * (the "progress_refused" event: the reason, the line's number), then
 * only counted; progress_finish says the counts once, when anything was
 * refused.  Nothing here blocks or reads a clock: the caller gives the
 * time (tests drive it). */
#ifndef BC_WORKER_JOB_PROGRESS_H
#define BC_WORKER_JOB_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* A line's bytes, its newline not counted.  At most PIPE_BUF: a line
 * written by one write(2) to the channel is never mixed with another
 * writer's. */
#define PROGRESS_LINE_MAX 4096
/* At most one stored report per job this often. */
#define PROGRESS_INTERVAL_MS 500
/* After a report the database did not take, the next try waits this long
 * (the report may be replaced by a newer one meanwhile). */
#define PROGRESS_RETRY_MS 1000
/* How deep a report may nest. */
#define PROGRESS_MAX_DEPTH 32

/* Stores one report (a JSON object's text, NUL-terminated): 0 when stored
 * or knowingly ignored (the worker no longer holds the job), negative when
 * it should be tried again. */
typedef int progress_store_fn(void *ctx, const char *json, struct bc_error *err);
/* Says something about the reports (an event's kind and its details as a
 * JSON object's text). */
typedef void progress_warn_fn(void *ctx, const char *kind, const char *details_json);

enum progress_refusal {
        PROGRESS_TOO_LONG,
        PROGRESS_NOT_JSON,
        PROGRESS_NOT_OBJECT,
        PROGRESS_N_REFUSALS
};

struct progress {
        char line[PROGRESS_LINE_MAX]; /* the line being read */
        size_t len;
        bool overlong;          /* the line being read is dropped to its end */
        char *pending;          /* a checked report waiting for its turn, or NULL */
        uint64_t next_store_ms; /* no store before (0: at once) */
        uint64_t lines;         /* lines read */
        uint64_t stored;        /* reports stored */
        uint64_t replaced;      /* reports replaced by a newer one before their turn */
        uint64_t failed;        /* reports the database did not take, for good */
        uint64_t refused[PROGRESS_N_REFUSALS];
        progress_store_fn *store;
        progress_warn_fn *warn;
        void *ctx;
};

/* store and warn (with ctx) must outlive p. */
void progress_init(struct progress *p, progress_store_fn *store, progress_warn_fn *warn,
                   void *ctx);
/* The channel's next bytes, at now_ms: each complete line is checked, and
 * a report stored when its turn came. */
void progress_feed(struct progress *p, const char *data, size_t len, uint64_t now_ms);
/* A timer tick: a waiting report is stored once its turn came. */
void progress_tick(struct progress *p, uint64_t now_ms);
/* The job ended: a last line without its newline is taken as a line, the
 * waiting report is stored whatever the interval (one try), and the counts
 * are said when anything was refused. */
void progress_finish(struct progress *p, uint64_t now_ms);
/* Frees what p holds.  NULL-safe. */
void progress_done(struct progress *p);

#endif
