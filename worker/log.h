/* One line per event on stderr, key=value or JSON (--log-format), written
 * with a single write(2) so lines from job threads never interleave.
 * Callers pass only values fit for logs: never a secret, never a presigned
 * URL's query. */
#ifndef BC_WORKER_LOG_H
#define BC_WORKER_LOG_H

#include "worker/config.h"

void log_setup(enum log_format format, enum log_level level);

/* Logs event with key/value string pairs, terminated by NULL:
 *   log_event(LOG_INFO, "job.finished", "job_id", id, "status", "succeeded", NULL);
 * A NULL value is written as an empty string. */
void log_event(enum log_level level, const char *event, ...) __attribute__((sentinel));

#endif
