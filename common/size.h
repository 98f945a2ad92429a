/* Sizes as people write them on a command line: "10MiB", "512KiB", "1GiB",
 * "1048576".  One parser for every flag that takes a size. */
#ifndef BC_COMMON_SIZE_H
#define BC_COMMON_SIZE_H

#include <stdint.h>

/* The units, in the order the help texts list them.  IEC units are powers
 * of 1024, SI units powers of 1000; "B" is one byte.  Ambiguous spellings
 * ("K", "M", "KB", "mb", "Mi") are refused rather than guessed. */
#define BC_SIZE_UNITS "B, KiB, MiB, GiB, TiB, kB, MB, GB, TB"

/* Parses a whole number with an optional unit (no space between).  A number
 * without a unit counts in default_unit (1 for a flag in bytes, 1 << 20 for
 * a flag named ...-mb).  Returns 0 and sets *ret (in bytes, at most max), or
 * -EINVAL (not a size) / -ERANGE (above max). */
int bc_parse_size(const char *s, uint64_t default_unit, uint64_t max, uint64_t *ret);

#endif
