/* The monotonic clock, in the units the worker and the sandbox measure
 * with: durations and deadlines never jump with the wall clock. */
#ifndef BC_COMMON_CLOCK_H
#define BC_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC now, in milliseconds, microseconds or seconds. */
uint64_t bc_mono_ms(void);
uint64_t bc_mono_us(void);
double bc_mono_s(void);

/* Microseconds from t0 to t1 (both CLOCK_MONOTONIC; 0 if t1 is earlier). */
uint64_t bc_elapsed_us(const struct timespec *t0, const struct timespec *t1);

#endif
