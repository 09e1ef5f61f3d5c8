/* tf.image.convert_image_dtype to and from float32, the working type of the
 * image ops that go through floats (rgb_to_grayscale, adjust_brightness),
 * and the float -> integer results of TensorFlow's vectorized cast that
 * ConvertImageDtype shares.
 *
 * Out-of-range float -> integer values give what TensorFlow's vectorized
 * cast gives on x86-64 (for all but the last few values of a large array;
 * its scalar tail wraps instead, see docs/differences.md): 8 and 16 bit
 * types saturate the truncated int32 (NaN and overflow give INT32_MIN
 * first), int32 and int64 give their minimum, uint32 and uint64 their top
 * bit.
 */
#ifndef CV_IMAGE_CONVERT_H
#define CV_IMAGE_CONVERT_H

#include <stdbool.h>

#include "core/tensor.h"
#include "ops/numeric.h"

static inline int32_t cv_image_narrow(double v, int32_t lo, int32_t hi)
{
    int32_t i = cv_f2i32(v);
    return i < lo ? lo : i > hi ? hi : i;
}

/* cv_image_narrow for a float32 value, in a form the compiler vectorizes:
 * NaN and values past int32 (INT32_MIN there) go to lo, the rest is
 * clamped, then truncated. */
static inline int32_t cv_image_narrow_f(float v, float lo, float hi)
{
    v = v < 2147483648.0f ? v : -INFINITY;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    return (int32_t)v;
}

static inline uint32_t cv_image_to_u32(double v)
{
    return v > -2147483649.0 && v < 4294967296.0 ? (uint32_t)(int64_t)v : 0x80000000u;
}

static inline uint64_t cv_image_to_u64(double v)
{
    if (v >= 9223372036854775808.0 && v < 18446744073709551616.0)
        return (uint64_t)(v - 9223372036854775808.0) + 0x8000000000000000ull;
    return (uint64_t)cv_f2i64(v); /* INT64_MIN's bits when out of range */
}

/* std::max(std::min(x, hi), lo), as TF's clip: NaN stays NaN. */
static inline float cv_image_clamp(float x, float lo, float hi)
{
    x = hi < x ? hi : x;
    return x < lo ? lo : x;
}

#define CV_IMAGE_LOOP(EXPR)                                                                     \
    for (int64_t i = 0; i < n; i++)                                                                \
        EXPR;                                                                                      \
    break;

/* dst = convert_image_dtype(src, float32): integers times `scale` (1 / max,
 * as float32), floats cast. */
static inline void cv_image_to_f32(CvDtype t, const void *src, int64_t n, float *dst, float scale)
{
#define S(T) (((const T *)src)[i])
    switch (t) {
    case CV_INT8: CV_IMAGE_LOOP(dst[i] = (float)S(int8_t) * scale)
    case CV_INT16: CV_IMAGE_LOOP(dst[i] = (float)S(int16_t) * scale)
    case CV_INT32: CV_IMAGE_LOOP(dst[i] = (float)S(int32_t) * scale)
    case CV_INT64: CV_IMAGE_LOOP(dst[i] = (float)S(int64_t) * scale)
    case CV_UINT8: CV_IMAGE_LOOP(dst[i] = (float)S(uint8_t) * scale)
    case CV_UINT16: CV_IMAGE_LOOP(dst[i] = (float)S(uint16_t) * scale)
    case CV_UINT32: CV_IMAGE_LOOP(dst[i] = (float)S(uint32_t) * scale)
    case CV_UINT64: CV_IMAGE_LOOP(dst[i] = (float)S(uint64_t) * scale)
    case CV_FLOAT16: CV_IMAGE_LOOP(dst[i] = cv_half_to_float(S(cv_half)))
    case CV_FLOAT32: CV_IMAGE_LOOP(dst[i] = S(float))
    case CV_FLOAT64: CV_IMAGE_LOOP(dst[i] = (float)S(double))
    default: break;
    }
#undef S
}

/* dst = convert_image_dtype(src, t, saturate): integers get src * `scale`
 * (max + 0.5, as float32), clamped to [lo, hi] with saturate, then cast;
 * floats are cast. */
static inline void cv_image_from_f32(CvDtype t, const float *src, int64_t n, void *dst, float scale,
                                     bool saturate, float lo, float hi)
{
#define X (saturate ? cv_image_clamp(src[i] * scale, lo, hi) : src[i] * scale)
#define D(T) (((T *)dst)[i])
    switch (t) {
    case CV_INT8: CV_IMAGE_LOOP(D(int8_t) = (int8_t)cv_image_narrow_f(X, INT8_MIN, INT8_MAX))
    case CV_INT16:
        CV_IMAGE_LOOP(D(int16_t) = (int16_t)cv_image_narrow_f(X, INT16_MIN, INT16_MAX))
    case CV_INT32: CV_IMAGE_LOOP(D(int32_t) = cv_f2i32(X))
    case CV_INT64: CV_IMAGE_LOOP(D(int64_t) = cv_f2i64(X))
    case CV_UINT8: CV_IMAGE_LOOP(D(uint8_t) = (uint8_t)cv_image_narrow_f(X, 0, UINT8_MAX))
    case CV_UINT16:
        CV_IMAGE_LOOP(D(uint16_t) = (uint16_t)cv_image_narrow_f(X, 0, UINT16_MAX))
    case CV_UINT32: CV_IMAGE_LOOP(D(uint32_t) = cv_image_to_u32(X))
    case CV_UINT64: CV_IMAGE_LOOP(D(uint64_t) = cv_image_to_u64(X))
    case CV_FLOAT16: CV_IMAGE_LOOP(D(cv_half) = cv_float_to_half(src[i]))
    case CV_FLOAT32: CV_IMAGE_LOOP(D(float) = src[i])
    case CV_FLOAT64: CV_IMAGE_LOOP(D(double) = src[i])
    default: break;
    }
#undef D
#undef X
}

#endif
