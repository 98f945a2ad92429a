/* Streams a running job's output into boxcar.job_logs: chunks are batched
 * (at most every 200 ms or 64 KiB), each batch one INSERT plus one NOTIFY,
 * and a job's total is capped (--max-log-bytes); past the cap one marker
 * says so and the rest is dropped (the result's tails still hold the end).
 * A database that is away costs the job nothing: a batch it did not take
 * is kept and tried again a second later while it is under 64 KiB, else
 * dropped and counted.  The last batch goes with the job's result
 * (livelog_take): one transaction less per job, and kept through a lost
 * database as the result is. */
#ifndef BC_WORKER_JOB_LIVELOG_H
#define BC_WORKER_JOB_LIVELOG_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/dynbuf.h"
#include "common/error.h"

#define LIVELOG_MAX_CHUNKS 256

/* One batch, as boxcar.append_logs takes it: chunks first_seq.. of the
 * job's attempt. */
struct livelog_batch {
        const char *job_id;
        int attempt;
        int first_seq;
        const char *streams; /* {1,2}: a smallint[] literal, a stream per chunk */
        const char *chunks;  /* {"\\x6869","\\x0a"}: a bytea[] literal, in hex */
};

/* Where batches go (the job's services, services.h: append_logs): 0 when
 * stored, negative when not (the batch is then kept and tried again, or
 * dropped). */
typedef int livelog_append_fn(void *ctx, const struct livelog_batch *batch, struct bc_error *err);

/* Stores batch on conn (one INSERT plus one NOTIFY): for the services'
 * side of append_logs, which holds the connection. */
int livelog_batch_store(PGconn *conn, const struct livelog_batch *batch, struct bc_error *err);

struct livelog {
        const char *job_id;
        int attempt;
        uint64_t cap;     /* bytes of output stored per job */
        uint64_t stored;  /* bytes stored so far (this attempt) */
        uint64_t dropped; /* bytes not stored: cap or database */
        bool capped;
        int next_seq;
        uint64_t first_pending_ms; /* 0 when nothing is pending */
        uint64_t retry_ms;         /* no timed flush before (after a failed one) */
        struct dynbuf pending;     /* concatenated chunk bytes */
        size_t n_chunks;
        size_t chunk_len[LIVELOG_MAX_CHUNKS];
        short chunk_stream[LIVELOG_MAX_CHUNKS];
        livelog_append_fn *append; /* NULL: nothing is stored before livelog_take */
        void *append_ctx;
        /* The job's secrets masked in stdout and stderr (livelog_set_masks),
         * or NULL: not owned. */
        struct secret_mask *mask[2];
};

/* first_seq and stored_before: 1 and 0, or after the chunks and bytes an
 * earlier run of this attempt stored (a run handed back by a drain, see
 * claimed_job.log_seq): the cap counts the attempt's output, not each
 * run's. */
void livelog_init(struct livelog *l, const char *job_id, int attempt, int first_seq,
                  uint64_t stored_before, uint64_t cap, livelog_append_fn *append, void *ctx);
/* Output of streams 1 and 2 goes through these masks (common/secret_mask.h)
 * before it is stored; they must outlive l.  After livelog_init. */
struct secret_mask;
void livelog_set_masks(struct livelog *l, struct secret_mask *out, struct secret_mask *err);
/* Adds output (stream 1 or 2); flushes when the batch is due.  Stream 0 with
 * no data is a timer tick. */
void livelog_write(struct livelog *l, int stream, const char *data, size_t len);
/* Stores whatever is pending. */
void livelog_flush(struct livelog *l);
/* Takes what is pending, to be written with the job's result (see
 * boxcar.report_batch's logs): {"seq": first seq, "chunks": [[stream,
 * "hex"], ...]}, or NULL when nothing is pending (or out of memory: then it
 * is stored now).  Caller frees. */
char *livelog_take(struct livelog *l);
void livelog_done(struct livelog *l);

#endif
