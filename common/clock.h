/* The monotonic clock, in the units the worker and the sandbox measure
 * with: durations and deadlines never jump with the wall clock. */
#ifndef BC_COMMON_CLOCK_H
#define BC_COMMON_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC now, in milliseconds or seconds. */
uint64_t bc_mono_ms(void);
double bc_mono_s(void);

#endif
