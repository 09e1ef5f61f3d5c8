/* Cumsum(x): running sums, or products, along one axis (tf.math.cumsum,
 * tf.math.cumprod). ints: [axis (negative counts from the end; out of range is
 * InvalidArgument), exclusive, reverse, product (0: sums, 1: products)]:
 * exclusive scans leave out the
 * value itself (the first is 0), reverse sums run from the end. Numeric
 * dtypes; sums accumulate in the dtype (integers wrap, float16 rounds at
 * every step), as TensorFlow's CPU kernel. */
#include <string.h>

#include "ops/op.h"
#include "ops/values.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { CUMSUM_AXIS, CUMSUM_EXCLUSIVE, CUMSUM_REVERSE, CUMSUM_PRODUCT, CUMSUM_NUM_INTS };
static const char *const cumsum_int_attrs[] = {"axis", "exclusive", "reverse", "product", NULL};
CV_ATTR_NAMES_MATCH(cumsum_int_attrs, CUMSUM_NUM_INTS);

#define CUMSUM_LOOP(T, ACC, LOAD, STORE)                                                          \
    do {                                                                                           \
        const T *src = (const T *)x->data;                                                         \
        T *dst = (T *)out[0].data;                                                                 \
        for (int64_t o = 0; o < outer; o++)                                                        \
            for (int64_t k = 0; k < inner; k++) {                                                  \
                ACC acc = (ACC)(prod ? 1 : 0);                                                     \
                for (int64_t j = 0; j < n; j++) {                                                  \
                    int64_t jj = rev ? n - 1 - j : j;                                              \
                    size_t at = (size_t)((o * n + jj) * inner + k);                                \
                    if (excl) {                                                                    \
                        STORE(dst[at], acc);                                                       \
                        acc = (ACC)(prod ? acc * LOAD(src[at]) : acc + LOAD(src[at]));             \
                    } else {                                                                       \
                        acc = (ACC)(prod ? acc * LOAD(src[at]) : acc + LOAD(src[at]));             \
                        STORE(dst[at], acc);                                                       \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
    } while (0)

#define PLAIN(v) (v)
#define SET(d, v) ((d) = (v))
#define WRAP_LOAD(v) ((uint64_t)(v))

static CvStatus cumsum_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    if (attrs->num_ints != CUMSUM_NUM_INTS || x->dtype == CV_STRING || x->dtype == CV_BOOL)
        return cv_error(CV_INVALID_ARGUMENT, "malformed attributes or dtype");
    int64_t axis_attr = attrs->ints[CUMSUM_AXIS];
    if (axis_attr < -x->rank || axis_attr >= x->rank)
        return cv_error(CV_INVALID_ARGUMENT, "ScanOp: Expected scan axis in the range [%d, %d), "
                        "but got %lld", -x->rank, x->rank, (long long)axis_attr);
    int axis = (int)(axis_attr < 0 ? axis_attr + x->rank : axis_attr);
    bool excl = attrs->ints[CUMSUM_EXCLUSIVE] != 0, rev = attrs->ints[CUMSUM_REVERSE] != 0;
    bool prod = attrs->ints[CUMSUM_PRODUCT] != 0;
    int64_t outer = 1, inner = 1, n = x->shape[axis];
    for (int d = 0; d < axis; d++)
        outer *= x->shape[d];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->shape[d];
    CvStatus s = cv_tensor_alloc(&out[0], x->dtype, x->rank, x->shape, 0, NULL);
    if (s)
        return s;
    if (cv_tensor_num_elements(x) == 0)
        return CV_STATUS_OK;
    switch (x->dtype) {
    case CV_FLOAT16: {
        /* float16 adds round to float16 after each step. */
        const cv_half *src = (const cv_half *)x->data;
        cv_half *dst = (cv_half *)out[0].data;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t k = 0; k < inner; k++) {
                cv_half acc = cv_float_to_half(prod ? 1.0f : 0.0f);
                for (int64_t j = 0; j < n; j++) {
                    int64_t jj = rev ? n - 1 - j : j;
                    size_t at = (size_t)((o * n + jj) * inner + k);
                    float a = cv_half_to_float(acc), v = cv_half_to_float(src[at]);
                    cv_half next = cv_float_to_half(prod ? a * v : a + v);
                    dst[at] = excl ? acc : next;
                    acc = next;
                }
            }
        break;
    }
    case CV_FLOAT32: CUMSUM_LOOP(float, float, PLAIN, SET); break;
    case CV_FLOAT64: CUMSUM_LOOP(double, double, PLAIN, SET); break;
    case CV_INT8: CUMSUM_LOOP(int8_t, uint64_t, WRAP_LOAD, SET); break;
    case CV_INT16: CUMSUM_LOOP(int16_t, uint64_t, WRAP_LOAD, SET); break;
    case CV_INT32: CUMSUM_LOOP(int32_t, uint64_t, WRAP_LOAD, SET); break;
    case CV_INT64: CUMSUM_LOOP(int64_t, uint64_t, WRAP_LOAD, SET); break;
    case CV_UINT8: CUMSUM_LOOP(uint8_t, uint64_t, WRAP_LOAD, SET); break;
    case CV_UINT16: CUMSUM_LOOP(uint16_t, uint64_t, WRAP_LOAD, SET); break;
    case CV_UINT32: CUMSUM_LOOP(uint32_t, uint64_t, WRAP_LOAD, SET); break;
    case CV_UINT64: CUMSUM_LOOP(uint64_t, uint64_t, WRAP_LOAD, SET); break;
    default:
        cv_tensor_clear(&out[0]);
        return cv_error(CV_INVALID_ARGUMENT, "Cumsum: unsupported dtype %s",
                        cv_dtype_name(x->dtype));
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_cumsum = {.name = "Cumsum", .min_inputs = 1, .max_inputs = 1, .run = cumsum_run,
    .int_attrs = cumsum_int_attrs};
