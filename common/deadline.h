/* Deadlines for pthread_cond_timedwait, which measures a condition
 * variable's timeout on CLOCK_REALTIME unless told otherwise (a condition
 * variable made with pthread_condattr_setclock(CLOCK_MONOTONIC) takes
 * bc_monotonic_after_ms). */
#ifndef BC_COMMON_DEADLINE_H
#define BC_COMMON_DEADLINE_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_REALTIME now plus ms, normalized (tv_nsec below one second). */
struct timespec bc_realtime_after_ms(uint64_t ms);
/* The same on CLOCK_MONOTONIC. */
struct timespec bc_monotonic_after_ms(uint64_t ms);
/* A condition variable whose timed waits are measured on CLOCK_MONOTONIC
 * (a wall-clock step neither stalls nor rushes them); pthread_cond_init's
 * result. */
int bc_cond_init_monotonic(pthread_cond_t *c);

#endif
