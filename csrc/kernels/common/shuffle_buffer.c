/* The shuffle buffer's budget rules and its random numbers' state (see
 * shuffle_buffer.h). */
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

void cv_shuffle_put_philox(CvStateWriter *w, const CvPhilox *p)
{
    cv_state_put_u64(w, p->counter[0] | (uint64_t)p->counter[1] << 32);
    cv_state_put_u64(w, p->counter[2] | (uint64_t)p->counter[3] << 32);
    cv_state_put_u64(w, p->key[0] | (uint64_t)p->key[1] << 32);
    cv_state_put_u64(w, p->results[0] | (uint64_t)p->results[1] << 32);
    cv_state_put_u64(w, p->results[2] | (uint64_t)p->results[3] << 32);
    cv_state_put_i64(w, p->used);
}

CvStatus cv_shuffle_get_philox(CvStateReader *r, CvPhilox *p)
{
    uint64_t v[5];
    int64_t used = 0;
    CvStatus s = CV_STATUS_OK;
    for (int i = 0; i < 5 && !s; i++)
        s = cv_state_get_u64(r, &v[i]);
    if (!s)
        s = cv_state_get_range(r, "a random generator's used samples", 0, 4, &used);
    if (s)
        return s;
    p->counter[0] = (uint32_t)v[0];
    p->counter[1] = (uint32_t)(v[0] >> 32);
    p->counter[2] = (uint32_t)v[1];
    p->counter[3] = (uint32_t)(v[1] >> 32);
    p->key[0] = (uint32_t)v[2];
    p->key[1] = (uint32_t)(v[2] >> 32);
    p->results[0] = (uint32_t)v[3];
    p->results[1] = (uint32_t)(v[3] >> 32);
    p->results[2] = (uint32_t)v[4];
    p->results[3] = (uint32_t)(v[4] >> 32);
    p->used = (int)used;
    return CV_STATUS_OK;
}

void cv_shuffle_put_seeds(CvStateWriter *w, CvSeedGenerator *g)
{
    pthread_mutex_lock(&g->mu); /* another iterator of the dataset may be drawing */
    CvPhilox generator = g->generator;
    uint64_t seed = g->seed, seed2 = g->seed2;
    pthread_mutex_unlock(&g->mu);
    cv_state_put_u64(w, seed);
    cv_state_put_u64(w, seed2);
    cv_shuffle_put_philox(w, &generator);
}

CvStatus cv_shuffle_get_seeds(CvStateReader *r, CvSavedSeeds *saved)
{
    CvStatus s = cv_state_get_u64(r, &saved->seed);
    if (!s)
        s = cv_state_get_u64(r, &saved->seed2);
    if (!s)
        s = cv_shuffle_get_philox(r, &saved->generator);
    return s;
}

void cv_shuffle_set_seeds(CvSeedGenerator *g, const CvSavedSeeds *saved)
{
    pthread_mutex_lock(&g->mu);
    g->seed = saved->seed;
    g->seed2 = saved->seed2;
    g->generator = saved->generator;
    pthread_mutex_unlock(&g->mu);
}

CvStatus cv_shuffle_restore_buffer(CvStateReader *r, CvMemory *memory, int64_t buffer_size,
                                   CvShufflePush push, void *buffer, size_t *held)
{
    int64_t count = 0;
    CvStatus s = cv_state_get_range(r, "shuffle's buffered elements", 0, buffer_size, &count);
    /* `i` elements are in the (initially empty) buffer when element i comes. */
    for (int64_t i = 0; !s && i < count; i++) {
        CvElement e = {0};
        if ((s = cv_state_get_element(r, &e)))
            break;
        size_t bytes = cv_element_bytes(&e);
        if (!cv_memory_try_charge(memory, bytes)) {
            s = cv_shuffle_exceeded(memory, bytes, buffer_size, i, *held);
        } else if ((s = push(buffer, &e, bytes))) {
            cv_memory_release(memory, bytes);
        } else {
            *held += bytes;
        }
        cv_element_clear(&e);
    }
    return s;
}
