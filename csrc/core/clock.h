/* The engine's clock, below every other core file. */
#ifndef CV_CLOCK_H
#define CV_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds on CLOCK_MONOTONIC (the clock condition variables use): for
 * measuring how long something took, never for the time of day. */
static inline int64_t cv_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

#endif
