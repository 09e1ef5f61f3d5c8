/* TensorFlow's stateless random streams (tf.random.stateless_*, the
 * tf.image.stateless_random_* ops): a shape [2] int32 or int64 seed tensor
 * keys a Philox generator as TensorFlow does (the seed pair is mixed by one
 * Philox block under a fixed key into the generator's key and counter), and
 * values are taken from it in order. Shared by the ops that draw from it. */
#ifndef CV_STATELESS_H
#define CV_STATELESS_H

#include <string.h>

#include "core/philox.h"
#include "core/tensor.h"

/* Key `rng` from `seed`: InvalidArgument unless a [2] int32/int64 tensor. */
static inline CvStatus cv_stateless_init(const CvTensor *seed, CvPhilox *rng)
{
    if (seed->dtype != CV_INT32 && seed->dtype != CV_INT64)
        return cv_error(CV_INVALID_ARGUMENT, "seed must be an int32 or int64 tensor, got %s",
                        cv_dtype_name(seed->dtype));
    if (seed->rank != 1 || seed->shape[0] != 2) {
        char text[CV_MAX_RANK * 24];
        return cv_error(CV_INVALID_ARGUMENT, "seed must have shape [2], not %s",
                        cv_shape_str(seed->shape, seed->rank, text, sizeof(text)));
    }
    uint64_t s[2];
    for (int i = 0; i < 2; i++)
        s[i] = seed->dtype == CV_INT32 ? (uint64_t)(int64_t)((const int32_t *)seed->data)[i]
                                       : (uint64_t)((const int64_t *)seed->data)[i];
    CvPhilox mix = {.counter = {(uint32_t)s[0], (uint32_t)(s[0] >> 32), (uint32_t)s[1],
                                (uint32_t)(s[1] >> 32)},
                    .key = {0x3ec8f720u, 0x02461e29u},
                    .used = 4};
    uint32_t m[4];
    for (int i = 0; i < 4; i++)
        m[i] = cv_philox_next(&mix);
    *rng = (CvPhilox){.counter = {0, 0, m[2], m[3]}, .key = {m[0], m[1]}, .used = 4};
    return CV_STATUS_OK;
}

/* A float32 in [0, 1) from 23 random bits, as TensorFlow's uniform floats. */
static inline float cv_stateless_float(CvPhilox *rng)
{
    uint32_t bits = (cv_philox_next(rng) & 0x7fffffu) | 0x3f800000u;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f - 1.0f;
}

/* A float64 in [0, 1) from 52 random bits (two samples, the first giving
 * the high 20 mantissa bits). */
static inline double cv_stateless_double(CvPhilox *rng)
{
    uint64_t hi = cv_philox_next(rng) & 0xfffffu, lo = cv_philox_next(rng);
    uint64_t bits = (1023ull << 52) | (hi << 32) | lo;
    double d;
    memcpy(&d, &bits, sizeof(d));
    return d - 1.0;
}

#endif
