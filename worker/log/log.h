/* One line per event on stderr, key=value or JSON (--log-format), written
 * with a single write(2) so lines from job threads never interleave.
 * Callers pass only values fit for logs: never a secret, never a presigned
 * URL's query. */
#ifndef BC_WORKER_LOG_LOG_H
#define BC_WORKER_LOG_LOG_H

#include "worker/config/config.h"

void log_setup(enum log_format format, enum log_level level);

/* Markers for typed fields: use the macros below, never these directly. */
extern const char log_int_tag[];
extern const char log_bool_tag[];

/* A field that is a number or a boolean (a JSON number or true/false). */
#define LOG_INT(key, value) log_int_tag, (const char *)(key), (long long)(value)
#define LOG_BOOL(key, value) log_bool_tag, (const char *)(key), (int)!!(value)

/* Logs event with fields, terminated by NULL: key/value string pairs, or
 * LOG_INT/LOG_BOOL triples:
 *   log_event(LOG_INFO, "job.finished", "job_id", id, LOG_INT("attempt", n), NULL);
 * A field whose string value is NULL is absent from the line.  Strings are
 * written as valid UTF-8 (invalid bytes become U+FFFD), cut at 4 KiB. */
void log_event(enum log_level level, const char *event, ...) __attribute__((sentinel));

#endif
