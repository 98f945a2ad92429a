#include "common/deadline.h"

static struct timespec after_ms(clockid_t clk, uint64_t ms)
{
        struct timespec t;
        clock_gettime(clk, &t);
        t.tv_sec += (time_t)(ms / 1000);
        t.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000L;
        }
        return t;
}

struct timespec bc_realtime_after_ms(uint64_t ms)
{
        return after_ms(CLOCK_REALTIME, ms);
}

struct timespec bc_monotonic_after_ms(uint64_t ms)
{
        return after_ms(CLOCK_MONOTONIC, ms);
}

int bc_cond_init_monotonic(pthread_cond_t *c)
{
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        int r = pthread_cond_init(c, &attr);
        pthread_condattr_destroy(&attr);
        return r;
}
