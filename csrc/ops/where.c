/* Where(input): the coordinates of the true (non-zero) values of a tensor,
 * as an int64 matrix [count, rank] in row-major order (tf.where with one
 * argument). No attributes. Bool and numeric inputs of rank >= 1 (a scalar
 * is InvalidArgument, as in TensorFlow); a float is true when
 * it is not zero (NaN is true, -0.0 is not). */
#include "ops/op.h"
#include "ops/values.h"

static bool truthy(const CvTensor *x, int64_t i)
{
    if (cv_dtype_is_float(x->dtype))
        return cv_value_f(x->data, x->dtype, i) != 0.0;
    return cv_value_u(x->data, x->dtype, i) != 0;
}

static CvStatus where_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)attrs;
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    if (x->dtype == CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "Where: string tensors are not supported");
    if (x->rank == 0) /* as TensorFlow's kernel */
        return cv_error(CV_INVALID_ARGUMENT, "WhereOp : Unhandled input dimensions: 0");
    int64_t n = cv_tensor_num_elements(x), count = 0;
    for (int64_t i = 0; i < n; i++)
        count += truthy(x, i);
    int64_t shape[2] = {count, x->rank};
    CvStatus s = cv_tensor_alloc(&out[0], CV_INT64, 2, shape, 0, NULL);
    if (s)
        return s;
    int64_t *dst = (int64_t *)out[0].data, idx[CV_MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++) {
        if (truthy(x, i)) {
            for (int d = 0; d < x->rank; d++)
                *dst++ = idx[d];
        }
        for (int d = x->rank - 1; d >= 0; d--) {
            if (++idx[d] < x->shape[d])
                break;
            idx[d] = 0;
        }
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_where = {.name = "Where", .min_inputs = 1, .max_inputs = 1, .run = where_run};
