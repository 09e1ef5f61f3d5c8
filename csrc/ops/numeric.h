/* Scalar conversions shared by the numeric element ops, with TensorFlow's
 * results on x86-64 where C leaves them undefined: a float converted to an
 * integer out of range (or NaN) gives what the CPU's truncating conversion
 * gives (INT_MIN of the 32/64-bit conversion, then narrowed), never UB. */
#ifndef CV_NUMERIC_H
#define CV_NUMERIC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef uint16_t cv_half; /* IEEE binary16, stored as bits */

static inline float cv_half_to_float(cv_half h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else { /* subnormal: normalize */
        int shift = 0;
        while (!(mant & 0x400)) {
            mant <<= 1;
            shift++;
        }
        bits = sign | ((uint32_t)(113 - shift) << 23) | ((mant & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

/* Round to nearest even, as Eigen::half does. */
static inline cv_half cv_float_to_half(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof(bits));
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
    uint32_t abs = bits & 0x7fffffffu;
    if (abs >= 0x7f800000u) /* inf or NaN (keep a quiet NaN) */
        return (cv_half)(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
    if (abs >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (cv_half)(sign | 0x7c00);
    if (abs < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        float a;
        memcpy(&a, &abs, sizeof(a));
        /* Adding 0.5 puts the half subnormal's bits at the bottom of the
         * float's mantissa, rounded to nearest even by the FPU. */
        a += 0.5f;
        uint32_t r;
        memcpy(&r, &a, sizeof(r));
        return (cv_half)(sign | (uint16_t)(r - 0x3f000000u));
    }
    uint32_t odd = (abs >> 13) & 1;
    abs += 0xc8000fffu + odd; /* rebias exponent (-112 << 23) and round */
    return (cv_half)(sign | (uint16_t)(abs >> 13));
}

typedef uint16_t cv_bfloat16; /* the top half of an IEEE binary32, stored as bits */

static inline float cv_bfloat16_to_float(cv_bfloat16 h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

/* Round to nearest even, NaN kept quiet, as Eigen::bfloat16 (TensorFlow) does. */
static inline cv_bfloat16 cv_float_to_bfloat16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof(bits));
    if ((bits & 0x7fffffffu) > 0x7f800000u)
        return (cv_bfloat16)((bits >> 16) | 0x40);
    bits += 0x7fffu + ((bits >> 16) & 1);
    return (cv_bfloat16)(bits >> 16);
}

static inline int32_t cv_f2i32(double v)
{
    return (v > -2147483649.0 && v < 2147483648.0) ? (int32_t)v : INT32_MIN;
}

static inline int64_t cv_f2i64(double v)
{
    return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (int64_t)v : INT64_MIN;
}

/* TensorFlow's float -> uint32 / uint64 on x86-64 (measured): through the
 * 64-bit signed conversion; out of range (and NaN) gives 2^31 / 2^63. */
static inline uint32_t cv_f2u32(double v)
{
    return (v > -2147483649.0 && v < 4294967296.0) ? (uint32_t)(uint64_t)(int64_t)v : 0x80000000u;
}

static inline uint64_t cv_f2u64(double v)
{
    return (uint64_t)cv_f2i64(v);
}

#endif
