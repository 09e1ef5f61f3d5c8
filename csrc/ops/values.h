/* Reading and writing one value of a numeric or bool tensor whatever its
 * dtype, for the ops that treat all dtypes alike (reductions, selection,
 * gathers). Header-only helpers; no op of its own.
 *
 * cv_value_f: the value as a double (float16 widened exactly).
 * cv_value_u: an integer's bits as uint64, sign-extended for signed types
 * (so it reads back as int64 with a cast); bool as 0/1.
 * cv_value_set_f / cv_value_set_u: store, narrowing as C's conversions of
 * an in-range value do (integers wrap through the unsigned type). */
#ifndef CV_OPS_VALUES_H
#define CV_OPS_VALUES_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"
#include "ops/numeric.h"

static inline bool cv_dtype_is_float(CvDtype d)
{
    return d == CV_FLOAT16 || d == CV_FLOAT32 || d == CV_FLOAT64;
}

static inline bool cv_dtype_is_signed(CvDtype d)
{
    return d == CV_INT8 || d == CV_INT16 || d == CV_INT32 || d == CV_INT64;
}

static inline double cv_value_f(const char *p, CvDtype d, int64_t i)
{
    switch (d) {
    case CV_FLOAT16: return cv_half_to_float(((const cv_half *)p)[i]);
    case CV_FLOAT32: return ((const float *)p)[i];
    case CV_FLOAT64: return ((const double *)p)[i];
    case CV_INT8: return ((const int8_t *)p)[i];
    case CV_INT16: return ((const int16_t *)p)[i];
    case CV_INT32: return ((const int32_t *)p)[i];
    case CV_INT64: return (double)((const int64_t *)p)[i];
    case CV_UINT16: return ((const uint16_t *)p)[i];
    case CV_UINT32: return ((const uint32_t *)p)[i];
    case CV_UINT64: return (double)((const uint64_t *)p)[i];
    default: return ((const uint8_t *)p)[i]; /* uint8, bool */
    }
}

static inline uint64_t cv_value_u(const char *p, CvDtype d, int64_t i)
{
    switch (d) {
    case CV_INT8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
    case CV_INT16: return (uint64_t)(int64_t)((const int16_t *)p)[i];
    case CV_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case CV_INT64: return (uint64_t)((const int64_t *)p)[i];
    case CV_UINT16: return ((const uint16_t *)p)[i];
    case CV_UINT32: return ((const uint32_t *)p)[i];
    case CV_UINT64: return ((const uint64_t *)p)[i];
    case CV_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return ((const uint8_t *)p)[i];
    }
}

static inline void cv_value_set_f(char *p, CvDtype d, int64_t i, double v)
{
    switch (d) {
    case CV_FLOAT16: ((cv_half *)p)[i] = cv_float_to_half((float)v); break;
    case CV_FLOAT32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
    }
}

static inline void cv_value_set_u(char *p, CvDtype d, int64_t i, uint64_t v)
{
    switch (d) {
    case CV_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case CV_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case CV_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case CV_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case CV_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case CV_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case CV_UINT64: ((uint64_t *)p)[i] = v; break;
    case CV_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: ((uint8_t *)p)[i] = (uint8_t)v; break;
    }
}

/* The smallest and largest value of an integer dtype, as bits (see cv_value_u). */
static inline uint64_t cv_dtype_min_u(CvDtype d)
{
    switch (d) {
    case CV_INT8: return (uint64_t)(int64_t)INT8_MIN;
    case CV_INT16: return (uint64_t)(int64_t)INT16_MIN;
    case CV_INT32: return (uint64_t)(int64_t)INT32_MIN;
    case CV_INT64: return (uint64_t)INT64_MIN;
    default: return 0;
    }
}

static inline uint64_t cv_dtype_max_u(CvDtype d)
{
    switch (d) {
    case CV_INT8: return INT8_MAX;
    case CV_INT16: return INT16_MAX;
    case CV_INT32: return INT32_MAX;
    case CV_INT64: return INT64_MAX;
    case CV_UINT16: return UINT16_MAX;
    case CV_UINT32: return UINT32_MAX;
    case CV_UINT64: return UINT64_MAX;
    case CV_BOOL: return 1;
    default: return UINT8_MAX;
    }
}

/* a < b for two values of integer dtype d, read with cv_value_u. */
static inline bool cv_value_u_less(CvDtype d, uint64_t a, uint64_t b)
{
    return cv_dtype_is_signed(d) ? (int64_t)a < (int64_t)b : a < b;
}

#endif
