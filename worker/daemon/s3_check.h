/* The worker's view of its bucket: checked at start and then periodically
 * on a thread of its own (storage_check_bucket: one signed ListObjects),
 * so /readyz can report S3's state without a request on its own path.
 *
 * A failing check does not stop the worker: it logs the reason
 * (event s3.check_failed with S3's error code, or "unreachable: ..."),
 * /readyz answers 503 "s3: <reason>", and the check is repeated with a
 * backoff (2 s doubling to 30 s) until the bucket answers; a bucket
 * created, a policy fixed or a network healed later is picked up without
 * a restart.  Jobs are still claimed meanwhile (jobs without volumes or
 * artifacts do not need S3; the others fail with FETCH_FAILED or
 * UPLOAD_FAILED and are retried by the queue). */
#ifndef BC_WORKER_DAEMON_S3_CHECK_H
#define BC_WORKER_DAEMON_S3_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "storage/storage.h"

#define S3_CHECK_OK_INTERVAL_S 60

struct s3_check;

/* Starts checking cfg's bucket at once.  cfg and worker_id must outlive
 * the check.  Stop with s3_check_stop(). */
int s3_check_start(const struct storage_config *cfg, const char *worker_id, struct s3_check **ret,
                   struct bc_error *err);

/* Thread-safe and non-blocking.  True when the last check passed; else
 * "s3: <reason>" (or "s3: checking" before the first answer) in reason. */
bool s3_check_ready(struct s3_check *c, char *reason, size_t size);

/* Wakes the thread, waits for a check in flight (bounded by its
 * timeouts, about 10 s at worst) and frees c.  NULL-safe. */
void s3_check_stop(struct s3_check *c);

#endif
