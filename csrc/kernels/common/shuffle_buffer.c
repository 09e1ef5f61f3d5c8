/* The shuffle buffer's budget rules (see shuffle_buffer.h). */
#include "kernels/common/shuffle_buffer.h"

#include <stdio.h>

bool cv_shuffle_charge_incoming(size_t *owed, CvMemory *memory, size_t bytes)
{
    size_t was = *owed;
    *owed = 0;
    if (was >= bytes) {
        if (was > bytes)
            cv_memory_release(memory, was - bytes);
        return true;
    }
    if (cv_memory_try_charge(memory, bytes - was))
        return true;
    cv_memory_release(memory, was);
    return false;
}

CvStatus cv_shuffle_exceeded(CvMemory *memory, size_t bytes, int64_t buffer_size, int64_t count,
                             size_t held)
{
    char knob[128];
    snprintf(knob, sizeof(knob), "lower shuffle's buffer_size (%lld; %lld elements fit)",
             (long long)buffer_size, (long long)count);
    return cv_memory_exceeded(memory, bytes, "Shuffle", held, knob);
}
