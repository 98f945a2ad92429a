/* Job output is arbitrary bytes, but PostgreSQL's jsonb accepts only valid
 * UTF-8 without NUL.  This turns bytes into such text, replacing anything
 * else with U+FFFD, so a job can never make its own result unstorable. */
#ifndef BC_COMMON_UTF8_H
#define BC_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Returns a new NUL-terminated string (free() it), or NULL on ENOMEM.
 * A multi-byte sequence cut at the very start (the tail of a ring buffer)
 * is dropped rather than replaced. */
char *utf8_sanitize(const char *data, size_t len);

/* Whether data is all valid UTF-8 without NUL: text jsonb and a JSON
 * string carry as it is. */
bool utf8_valid(const char *data, size_t len);

#endif
