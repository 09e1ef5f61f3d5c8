/* ConvertImageDtype(image): tf.image.convert_image_dtype, in one pass.
 *
 * TensorFlow's rules, step for step (the Python layer works out the
 * constants in TensorFlow's way and passes them):
 *   int -> int: a narrower range floor-divides by 2^shift then casts; a
 *     wider one casts then multiplies by 2^shift (wrapping, as TF's integer
 *     multiply does); with saturate the value is first clamped to [lo, hi]
 *     in the input dtype.
 *   int -> float: cast, then multiply by `scale` (1 / input max, rounded to
 *     the output dtype) in the output precision.
 *   float -> int: multiply by `scale` (output max + 0.5, rounded to the
 *     input dtype) in the input precision, clamp to [lo, hi] with saturate
 *     (NaN stays NaN), then cast as TensorFlow's vectorized cast does (ops/image_convert.h).
 *   float -> float: cast.
 *
 * ints[0]: output CvDtype; ints[1]: saturate; ints[2], ints[3]: lo, hi for
 * integer inputs (the bits of a uint64 for uint64 inputs); ints[4]: shift
 * (> 0: divide first, < 0: multiply by 2^-shift after). floats[0]: scale;
 * floats[1], floats[2]: lo, hi for float inputs (their exact values).
 *
 * Values move through chunks of 64-bit carriers (int64, uint64 or double,
 * each exact for its source); integer <-> float32, the pipeline's usual
 * case, has direct loops (ops/image_convert.h).
 */
#include "ops/image_convert.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { CONVERT_DTYPE, CONVERT_SATURATE, CONVERT_INT_LO, CONVERT_INT_HI, CONVERT_SHIFT,
    CONVERT_NUM_INTS };
static const char *const convert_int_attrs[] = {"dtype", "saturate", "int_lo", "int_hi", "shift",
    NULL};
CV_ATTR_NAMES_MATCH(convert_int_attrs, CONVERT_NUM_INTS);
enum { CONVERT_SCALE, CONVERT_FLOAT_LO, CONVERT_FLOAT_HI, CONVERT_NUM_FLOATS };
static const char *const convert_float_attrs[] = {"scale", "float_lo", "float_hi", NULL};
CV_ATTR_NAMES_MATCH(convert_float_attrs, CONVERT_NUM_FLOATS);

enum { SIGNED, UNSIGNED, FLOATING, OTHER };

#define CHUNK 256

static int kind_of(CvDtype t)
{
    switch (t) {
    case CV_INT8: case CV_INT16: case CV_INT32: case CV_INT64: return SIGNED;
    case CV_UINT8: case CV_UINT16: case CV_UINT32: case CV_UINT64: return UNSIGNED;
    case CV_FLOAT16: case CV_FLOAT32: case CV_FLOAT64: case CV_BFLOAT16: return FLOATING;
    default: return OTHER;
    }
}

#define LOAD(T, CARRIER)                                                                           \
    for (int i = 0; i < n; i++)                                                                    \
        v[i] = (CARRIER)((const T *)p)[i];                                                         \
    break;

static void load_signed(CvDtype t, const char *p, int n, int64_t *v)
{
    switch (t) {
    case CV_INT8: LOAD(int8_t, int64_t)
    case CV_INT16: LOAD(int16_t, int64_t)
    case CV_INT32: LOAD(int32_t, int64_t)
    default: LOAD(int64_t, int64_t)
    }
}

static void load_unsigned(CvDtype t, const char *p, int n, uint64_t *v)
{
    switch (t) {
    case CV_UINT8: LOAD(uint8_t, uint64_t)
    case CV_UINT16: LOAD(uint16_t, uint64_t)
    case CV_UINT32: LOAD(uint32_t, uint64_t)
    default: LOAD(uint64_t, uint64_t)
    }
}

static void load_float(CvDtype t, const char *p, int n, double *v)
{
    switch (t) {
    case CV_FLOAT16:
        for (int i = 0; i < n; i++)
            v[i] = cv_half_to_float(((const cv_half *)p)[i]);
        break;
    case CV_BFLOAT16:
        for (int i = 0; i < n; i++)
            v[i] = cv_bfloat16_to_float(((const cv_bfloat16 *)p)[i]);
        break;
    case CV_FLOAT32: LOAD(float, double)
    default: LOAD(double, double)
    }
}

/* Integer outputs from a wrapped 64-bit value: keep the low bits. */
#define STORE(T, EXPR)                                                                             \
    for (int i = 0; i < n; i++)                                                                    \
        ((T *)p)[i] = (T)(EXPR);                                                                   \
    break;

static void store_bits(CvDtype t, char *p, int n, const uint64_t *v)
{
    switch (t) {
    case CV_INT8: STORE(int8_t, v[i])
    case CV_INT16: STORE(int16_t, v[i])
    case CV_INT32: STORE(int32_t, v[i])
    case CV_INT64: STORE(int64_t, v[i])
    case CV_UINT8: STORE(uint8_t, v[i])
    case CV_UINT16: STORE(uint16_t, v[i])
    case CV_UINT32: STORE(uint32_t, v[i])
    default: STORE(uint64_t, v[i])
    }
}

/* From doubles: rounding into a float dtype, truncating into an integer one. */
static void store_double(CvDtype t, char *p, int n, const double *v)
{
    switch (t) {
    case CV_INT8: STORE(int8_t, cv_image_narrow(v[i], INT8_MIN, INT8_MAX))
    case CV_INT16: STORE(int16_t, cv_image_narrow(v[i], INT16_MIN, INT16_MAX))
    case CV_INT32: STORE(int32_t, cv_f2i32(v[i]))
    case CV_INT64: STORE(int64_t, cv_f2i64(v[i]))
    case CV_UINT8: STORE(uint8_t, cv_image_narrow(v[i], 0, UINT8_MAX))
    case CV_UINT16: STORE(uint16_t, cv_image_narrow(v[i], 0, UINT16_MAX))
    case CV_UINT32: STORE(uint32_t, cv_image_to_u32(v[i]))
    case CV_UINT64: STORE(uint64_t, cv_image_to_u64(v[i]))
    case CV_FLOAT16: STORE(cv_half, cv_float_to_half((float)v[i]))
    case CV_BFLOAT16: STORE(cv_bfloat16, cv_float_to_bfloat16((float)v[i]))
    case CV_FLOAT32: STORE(float, v[i])
    default: STORE(double, v[i])
    }
}

/* A float32 value rounded to float dtype t (not float64). */
static double round_to(CvDtype t, float f)
{
    if (t == CV_FLOAT16)
        return (double)cv_half_to_float(cv_float_to_half(f));
    if (t == CV_BFLOAT16)
        return (double)cv_bfloat16_to_float(cv_float_to_bfloat16(f));
    return f;
}

/* a * b in float dtype t (a and b are values of t): half and bfloat16
 * multiply in float and round once, as Eigen's types do. */
static double multiply(CvDtype t, double a, double b)
{
    if (t == CV_FLOAT64)
        return a * b;
    float product = (float)a * (float)b;
    return round_to(t, product);
}

/* An integer converted to float dtype t by tf.cast (half through float). */
static double int_to(CvDtype t, int64_t s, uint64_t u, bool is_signed)
{
    if (t == CV_FLOAT64)
        return is_signed ? (double)s : (double)u;
    float f = is_signed ? (float)s : (float)u;
    return round_to(t, f);
}

static CvStatus convert_image_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                  CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const int64_t *a = attrs->ints;
    if (attrs->num_ints < CONVERT_NUM_INTS || attrs->num_floats < CONVERT_NUM_FLOATS ||
        a[CONVERT_DTYPE] < 0 || a[CONVERT_DTYPE] >= CV_NUM_DTYPES || a[CONVERT_SHIFT] < -63 ||
        a[CONVERT_SHIFT] > 63)
        return cv_error(CV_INVALID_ARGUMENT, "ConvertImageDtype: bad attributes");
    CvDtype from = in[0].dtype, to = (CvDtype)a[CONVERT_DTYPE];
    int kin = kind_of(from), kout = kind_of(to);
    if (kin == OTHER || kout == OTHER)
        return cv_error(CV_INVALID_ARGUMENT, "convert_image_dtype: %s to %s: dtypes must be "
                        "floating point or integer", cv_dtype_name(from), cv_dtype_name(to));
    if (from == to) {
        cv_tensor_copy_ref(&out[0], &in[0]);
        return CV_STATUS_OK;
    }
    bool saturate = a[CONVERT_SATURATE] != 0;
    int64_t lo = a[CONVERT_INT_LO], hi = a[CONVERT_INT_HI], shift = a[CONVERT_SHIFT];
    const double *f = attrs->floats;
    double scale = f[CONVERT_SCALE], flo = f[CONVERT_FLOAT_LO], fhi = f[CONVERT_FLOAT_HI];
    CvStatus s = cv_tensor_alloc(&out[0], to, in[0].rank, in[0].shape, 0, NULL);
    if (s)
        return s;
    int64_t total = cv_tensor_num_elements(&in[0]);
    const char *src = in[0].data;
    char *dst = out[0].data;
    if (to == CV_FLOAT32 && kin != FLOATING) {
        cv_image_to_f32(from, src, total, (float *)dst, (float)scale);
        return CV_STATUS_OK;
    }
    if (from == CV_FLOAT32 && kout != FLOATING) {
        cv_image_from_f32(to, (const float *)src, total, dst, (float)scale, saturate, (float)flo,
                          (float)fhi);
        return CV_STATUS_OK;
    }
    size_t isize = cv_dtype_size(from), osize = cv_dtype_size(to);
    int64_t sv[CHUNK];
    uint64_t uv[CHUNK];
    double fv[CHUNK];
    for (int64_t start = 0; start < total; start += CHUNK) {
        int n = (int)(total - start < CHUNK ? total - start : CHUNK);
        const char *p = src + (size_t)start * isize;
        char *q = dst + (size_t)start * osize;
        if (kin == FLOATING) {
            load_float(from, p, n, fv);
            if (kout == FLOATING) {
                store_double(to, q, n, fv);
                continue;
            }
            for (int i = 0; i < n; i++) {
                double x = multiply(from, fv[i], scale);
                if (saturate) {
                    x = fhi < x ? fhi : x; /* std::min, std::max: NaN stays */
                    x = x < flo ? flo : x;
                }
                fv[i] = x;
            }
            store_double(to, q, n, fv);
            continue;
        }
        if (kin == SIGNED)
            load_signed(from, p, n, sv);
        else
            load_unsigned(from, p, n, uv);
        if (kout == FLOATING) {
            for (int i = 0; i < n; i++)
                fv[i] = multiply(to, kin == SIGNED ? int_to(to, sv[i], 0, true)
                                                   : int_to(to, 0, uv[i], false), scale);
            store_double(to, q, n, fv);
            continue;
        }
        /* Clamps are std::max(std::min(x, hi), lo), as TF's clip: lo wins
         * when TF's limits cross (int64 -> uint64). */
        for (int i = 0; i < n; i++) {
            if (kin == SIGNED) {
                int64_t x = shift > 0 ? sv[i] >> shift : sv[i]; /* arithmetic: floor */
                if (saturate) {
                    x = hi < x ? hi : x;
                    x = x < lo ? lo : x;
                }
                uv[i] = (uint64_t)x;
            } else {
                uint64_t x = shift > 0 ? uv[i] >> shift : uv[i];
                if (saturate) {
                    x = (uint64_t)hi < x ? (uint64_t)hi : x;
                    x = x < (uint64_t)lo ? (uint64_t)lo : x;
                }
                uv[i] = x;
            }
            if (shift < 0)
                uv[i] <<= -shift; /* wraps in the output width once stored */
        }
        store_bits(to, q, n, uv);
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_convert_image = {
    .name = "ConvertImageDtype", .min_inputs = 1, .max_inputs = 1, .run = convert_image_run,
    .int_attrs = convert_int_attrs, .float_attrs = convert_float_attrs};
