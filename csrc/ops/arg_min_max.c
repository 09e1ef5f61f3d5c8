/* ArgMinMax: the index of the largest (tf.argmax) or smallest (tf.argmin)
 * value along one axis.
 *
 * ints: [is_min, axis (may be negative, resolved here), output dtype
 * (int16, uint16, int32 or int64)]. Output: the input's shape without the
 * axis. As TensorFlow on CPU: the search starts from index 0 holding the
 * dtype's lowest (highest) finite value and moves only to a strictly larger
 * (smaller) value, so ties give the first index and NaN is never chosen
 * unless nothing beats the start. An empty axis is InvalidArgument. Bool
 * and numeric inputs. */
#include <float.h>
#include <string.h>

#include "ops/op.h"
#include "ops/values.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { ARG_MIN_MAX_IS_MIN, ARG_MIN_MAX_AXIS, ARG_MIN_MAX_DTYPE, ARG_MIN_MAX_NUM_INTS };
static const char *const arg_min_max_int_attrs[] = {"is_min", "axis", "dtype", NULL};
CV_ATTR_NAMES_MATCH(arg_min_max_int_attrs, ARG_MIN_MAX_NUM_INTS);

static double lowest_f(CvDtype d)
{
    return d == CV_FLOAT16 ? -65504.0 : d == CV_FLOAT32 ? -(double)FLT_MAX : -DBL_MAX;
}

static CvStatus arg_min_max_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    if (attrs->num_ints != ARG_MIN_MAX_NUM_INTS)
        return cv_error(CV_INVALID_ARGUMENT, "ArgMinMax: malformed attributes");
    bool is_min = attrs->ints[ARG_MIN_MAX_IS_MIN] != 0;
    int64_t axis = attrs->ints[ARG_MIN_MAX_AXIS];
    CvDtype od = (CvDtype)attrs->ints[ARG_MIN_MAX_DTYPE];
    if (x->dtype == CV_STRING ||
        (od != CV_INT16 && od != CV_UINT16 && od != CV_INT32 && od != CV_INT64))
        return cv_error(CV_INVALID_ARGUMENT, "ArgMinMax: bad input or output dtype");
    if (axis < -x->rank || axis >= x->rank)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Expected dimension in the range [%d, %d), but got %lld", -x->rank,
                        x->rank, (long long)axis);
    if (axis < 0)
        axis += x->rank;
    int64_t shape[CV_MAX_RANK], outer = 1, inner = 1, len = x->shape[axis];
    for (int d = 0, r = 0; d < x->rank; d++) {
        if (d < axis)
            outer *= x->shape[d];
        else if (d > axis)
            inner *= x->shape[d];
        if (d != axis)
            shape[r++] = x->shape[d];
    }
    if (len == 0) {
        char buf[96];
        return cv_error(CV_INVALID_ARGUMENT, "Reduction axis %lld is empty in shape %s",
                        (long long)axis, cv_shape_str(x->shape, x->rank, buf, sizeof(buf)));
    }
    CvStatus s = cv_tensor_alloc(&out[0], od, x->rank - 1, shape, 0, NULL);
    if (s)
        return s;
    bool fl = cv_dtype_is_float(x->dtype);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t k = 0; k < inner; k++) {
            int64_t best_i = 0, base = o * len * inner + k;
            double bf = is_min ? -lowest_f(x->dtype) : lowest_f(x->dtype);
            uint64_t bu = is_min ? cv_dtype_max_u(x->dtype) : cv_dtype_min_u(x->dtype);
            for (int64_t j = 0; j < len; j++) {
                bool better;
                if (fl) {
                    double v = cv_value_f(x->data, x->dtype, base + j * inner);
                    better = is_min ? v < bf : v > bf;
                    if (better)
                        bf = v;
                } else {
                    uint64_t v = cv_value_u(x->data, x->dtype, base + j * inner);
                    better = is_min ? cv_value_u_less(x->dtype, v, bu)
                                    : cv_value_u_less(x->dtype, bu, v);
                    if (better)
                        bu = v;
                }
                if (better)
                    best_i = j;
            }
            cv_value_set_u(out[0].data, od, o * inner + k, (uint64_t)best_i);
        }
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_arg_min_max = {
    .name = "ArgMinMax", .min_inputs = 1, .max_inputs = 1, .run = arg_min_max_run,
    .int_attrs = arg_min_max_int_attrs};
