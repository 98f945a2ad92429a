/* Deadlines for pthread_cond_timedwait, which measures a condition
 * variable's timeout on CLOCK_REALTIME unless told otherwise. */
#ifndef BC_COMMON_DEADLINE_H
#define BC_COMMON_DEADLINE_H

#include <stdint.h>
#include <time.h>

/* CLOCK_REALTIME now plus ms, normalized (tv_nsec below one second). */
struct timespec bc_realtime_after_ms(uint64_t ms);

#endif
