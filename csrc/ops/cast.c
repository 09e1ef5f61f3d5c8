/* Cast(x): convert values to another dtype (tf.cast). ints[0]: the target
 * CvDtype. Numeric and bool dtypes; string casts are rejected when traced.
 * Float to integer truncates toward zero; out of range values give what
 * TensorFlow gives on x86-64 (see ops/numeric.h). Casting to the same dtype
 * shares the input's memory. */
#include "ops/numeric.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { CAST_DTYPE, CAST_NUM_INTS };
static const char *const cast_int_attrs[] = {"dtype", NULL};
CV_ATTR_NAMES_MATCH(cast_int_attrs, CAST_NUM_INTS);

/* Loads widen every source to one of three carriers (double for floats,
 * int64/uint64 for integers), stores narrow from it. */
#define LOAD_BOOL(p, i) ((int64_t)(((const uint8_t *)(p))[i] != 0))
#define LOAD_I8(p, i) ((int64_t)((const int8_t *)(p))[i])
#define LOAD_I16(p, i) ((int64_t)((const int16_t *)(p))[i])
#define LOAD_I32(p, i) ((int64_t)((const int32_t *)(p))[i])
#define LOAD_I64(p, i) (((const int64_t *)(p))[i])
#define LOAD_U8(p, i) ((uint64_t)((const uint8_t *)(p))[i])
#define LOAD_U16(p, i) ((uint64_t)((const uint16_t *)(p))[i])
#define LOAD_U32(p, i) ((uint64_t)((const uint32_t *)(p))[i])
#define LOAD_U64(p, i) (((const uint64_t *)(p))[i])
#define LOAD_F16(p, i) ((double)cv_half_to_float(((const cv_half *)(p))[i]))
#define LOAD_F32(p, i) ((double)((const float *)(p))[i])
#define LOAD_F64(p, i) (((const double *)(p))[i])
#define LOAD_BF16(p, i) ((double)cv_bfloat16_to_float(((const cv_bfloat16 *)(p))[i]))

/* Stores take the loaded value `v` of carrier kind K (I: signed, U:
 * unsigned, F: double). */
#define STORE_BOOL_I(p, i, v) (((uint8_t *)(p))[i] = (v) != 0)
#define STORE_BOOL_U STORE_BOOL_I
#define STORE_BOOL_F STORE_BOOL_I
#define STORE_INT_I(T, p, i, v) (((T *)(p))[i] = (T)(v))
#define STORE_I8_I(p, i, v) STORE_INT_I(int8_t, p, i, (uint64_t)(v))
#define STORE_I8_U STORE_I8_I
#define STORE_I8_F(p, i, v) STORE_INT_I(int8_t, p, i, (uint32_t)cv_f2i32(v))
#define STORE_I16_I(p, i, v) STORE_INT_I(int16_t, p, i, (uint64_t)(v))
#define STORE_I16_U STORE_I16_I
#define STORE_I16_F(p, i, v) STORE_INT_I(int16_t, p, i, (uint32_t)cv_f2i32(v))
#define STORE_I32_I(p, i, v) STORE_INT_I(int32_t, p, i, (uint64_t)(v))
#define STORE_I32_U STORE_I32_I
#define STORE_I32_F(p, i, v) STORE_INT_I(int32_t, p, i, cv_f2i32(v))
#define STORE_I64_I(p, i, v) STORE_INT_I(int64_t, p, i, (uint64_t)(v))
#define STORE_I64_U STORE_I64_I
#define STORE_I64_F(p, i, v) STORE_INT_I(int64_t, p, i, cv_f2i64(v))
#define STORE_U8_I(p, i, v) STORE_INT_I(uint8_t, p, i, (uint64_t)(v))
#define STORE_U8_U STORE_U8_I
#define STORE_U8_F(p, i, v) STORE_INT_I(uint8_t, p, i, (uint32_t)cv_f2i32(v))
#define STORE_U16_I(p, i, v) STORE_INT_I(uint16_t, p, i, (uint64_t)(v))
#define STORE_U16_U STORE_U16_I
#define STORE_U16_F(p, i, v) STORE_INT_I(uint16_t, p, i, (uint32_t)cv_f2i32(v))
#define STORE_U32_I(p, i, v) STORE_INT_I(uint32_t, p, i, (uint64_t)(v))
#define STORE_U32_U STORE_U32_I
#define STORE_U32_F(p, i, v) STORE_INT_I(uint32_t, p, i, cv_f2u32(v))
#define STORE_U64_I(p, i, v) STORE_INT_I(uint64_t, p, i, (uint64_t)(v))
#define STORE_U64_U STORE_U64_I
#define STORE_U64_F(p, i, v) STORE_INT_I(uint64_t, p, i, cv_f2u64(v))
#define STORE_F16_I(p, i, v) (((cv_half *)(p))[i] = cv_float_to_half((float)(v)))
#define STORE_F16_U STORE_F16_I
#define STORE_F16_F STORE_F16_I
#define STORE_F32_I(p, i, v) (((float *)(p))[i] = (float)(v))
#define STORE_F32_U STORE_F32_I
#define STORE_F32_F STORE_F32_I
#define STORE_F64_I(p, i, v) (((double *)(p))[i] = (double)(v))
#define STORE_F64_U STORE_F64_I
#define STORE_F64_F STORE_F64_I
/* bfloat16 from the value as float32 first, as Eigen::bfloat16 converts */
#define STORE_BF16_I(p, i, v) (((cv_bfloat16 *)(p))[i] = cv_float_to_bfloat16((float)(v)))
#define STORE_BF16_U STORE_BF16_I
#define STORE_BF16_F STORE_BF16_I
/* Carrier D: a float64 source, stored as F but for bfloat16: TensorFlow
 * narrows it to float32 first with subnormals flushed to zero. */
#define STORE_BOOL_D STORE_BOOL_F
#define STORE_I8_D STORE_I8_F
#define STORE_I16_D STORE_I16_F
#define STORE_I32_D STORE_I32_F
#define STORE_I64_D STORE_I64_F
#define STORE_U8_D STORE_U8_F
#define STORE_U16_D STORE_U16_F
#define STORE_U32_D STORE_U32_F
#define STORE_U64_D STORE_U64_F
#define STORE_F16_D STORE_F16_F
#define STORE_F32_D STORE_F32_F
#define STORE_F64_D STORE_F64_F
#define STORE_BF16_D(p, i, v) (((cv_bfloat16 *)(p))[i] = cv_float_to_bfloat16(flush((float)(v))))

static inline float flush(float f)
{
    return fpclassify(f) == FP_SUBNORMAL ? copysignf(0.0f, f) : f;
}

/* X(dtype, load, carrier kind) for every castable dtype. */
#define CV_CAST_SOURCES(X)                                                                         \
    X(CV_BOOL, LOAD_BOOL, I)                                                                       \
    X(CV_INT8, LOAD_I8, I)                                                                         \
    X(CV_INT16, LOAD_I16, I)                                                                       \
    X(CV_INT32, LOAD_I32, I)                                                                       \
    X(CV_INT64, LOAD_I64, I)                                                                       \
    X(CV_UINT8, LOAD_U8, U)                                                                        \
    X(CV_UINT16, LOAD_U16, U)                                                                      \
    X(CV_UINT32, LOAD_U32, U)                                                                      \
    X(CV_UINT64, LOAD_U64, U)                                                                      \
    X(CV_FLOAT16, LOAD_F16, F)                                                                     \
    X(CV_FLOAT32, LOAD_F32, F)                                                                     \
    X(CV_FLOAT64, LOAD_F64, D)                                                                     \
    X(CV_BFLOAT16, LOAD_BF16, F)

#define CV_CAST_TARGETS(X, LOAD, K)                                                                \
    X(CV_BOOL, LOAD, STORE_BOOL_##K)                                                               \
    X(CV_INT8, LOAD, STORE_I8_##K)                                                                 \
    X(CV_INT16, LOAD, STORE_I16_##K)                                                               \
    X(CV_INT32, LOAD, STORE_I32_##K)                                                               \
    X(CV_INT64, LOAD, STORE_I64_##K)                                                               \
    X(CV_UINT8, LOAD, STORE_U8_##K)                                                                \
    X(CV_UINT16, LOAD, STORE_U16_##K)                                                              \
    X(CV_UINT32, LOAD, STORE_U32_##K)                                                              \
    X(CV_UINT64, LOAD, STORE_U64_##K)                                                              \
    X(CV_FLOAT16, LOAD, STORE_F16_##K)                                                             \
    X(CV_FLOAT32, LOAD, STORE_F32_##K)                                                             \
    X(CV_FLOAT64, LOAD, STORE_F64_##K)                                                             \
    X(CV_BFLOAT16, LOAD, STORE_BF16_##K)

#define TARGET_CASE(DT, LOAD, STORE)                                                               \
    case DT:                                                                                       \
        for (int64_t i = 0; i < n; i++)                                                            \
            STORE(dst, i, LOAD(src, i));                                                           \
        return true;

#define SOURCE_CASE(DT, LOAD, K)                                                                   \
    case DT:                                                                                       \
        switch (to) {                                                                              \
            CV_CAST_TARGETS(TARGET_CASE, LOAD, K)                                                  \
        default:                                                                                   \
            return false;                                                                          \
        }

/* Converts n values; false when either dtype is not numeric or bool. */
static bool convert(CvDtype from, const void *src, CvDtype to, void *dst, int64_t n)
{
    switch (from) {
        CV_CAST_SOURCES(SOURCE_CASE)
    default:
        return false;
    }
}

static CvStatus cast_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                         int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    CvDtype to = (CvDtype)attrs->ints[CAST_DTYPE];
    if (attrs->num_ints < CAST_NUM_INTS || attrs->ints[CAST_DTYPE] < 0 ||
        attrs->ints[CAST_DTYPE] >= CV_NUM_DTYPES)
        return cv_error(CV_INVALID_ARGUMENT, "Cast needs a target dtype");
    if (in[0].dtype == to) {
        cv_tensor_copy_ref(&out[0], &in[0]);
        return CV_STATUS_OK;
    }
    if (in[0].dtype == CV_STRING || to == CV_STRING)
        return cv_error(CV_UNIMPLEMENTED, "Cast string to %s is not supported", cv_dtype_name(to));
    CvStatus s = cv_op_output(ctx, &out[0], to, in[0].rank, in[0].shape);
    if (s)
        return s;
    convert(in[0].dtype, in[0].data, to, out[0].data, cv_tensor_num_elements(&in[0]));
    return CV_STATUS_OK;
}

const CvOp cv_op_cast = {.name = "Cast", .min_inputs = 1, .max_inputs = 1, .run = cast_run,
    .int_attrs = cast_int_attrs};
