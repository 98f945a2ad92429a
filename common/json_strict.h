/* A strict RFC 8259 syntax check, run before cJSON parses untrusted JSON.
 *
 * cJSON is lenient where PostgreSQL's jsonb is not: it ignores what follows
 * the first value, skips any byte below 0x20 as white space, reads "1." and
 * "01" as numbers, and takes raw control characters, invalid UTF-8, \u0000
 * and lone surrogates inside strings.  A job spec must mean the same to the
 * SQL validator (jsonb) and the worker's (cJSON), so the worker refuses
 * everything jsonb would refuse.  Nesting is capped too: jsonb takes
 * thousands of levels, cJSON 1000. */
#ifndef BC_COMMON_JSON_STRICT_H
#define BC_COMMON_JSON_STRICT_H

#include <stddef.h>

/* Returns 0 when s[0..len) is exactly one JSON value (with optional white
 * space around it) that jsonb accepts and in which no value is enclosed by
 * more than max_depth arrays or objects.  Otherwise -EINVAL and
 * *ret_problem (static text) says what is wrong; -E2BIG when only the
 * depth is exceeded. */
int json_strict_check(const char *s, size_t len, unsigned max_depth, const char **ret_problem);

#endif
