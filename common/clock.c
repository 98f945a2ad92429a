#include "common/clock.h"

uint64_t bc_mono_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t bc_mono_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

double bc_mono_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t bc_elapsed_us(const struct timespec *t0, const struct timespec *t1)
{
        int64_t us = ((int64_t)t1->tv_sec - (int64_t)t0->tv_sec) * 1000000 +
                     ((int64_t)t1->tv_nsec - (int64_t)t0->tv_nsec) / 1000;
        return us > 0 ? (uint64_t)us : 0;
}
