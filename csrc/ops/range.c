/* Range(start, limit, delta): the sequence start, start + delta, ... up to
 * but not including limit (tf.range).
 *
 * Three scalar inputs of one dtype (int32, int64, float16, float32 or
 * float64; the Python layer casts them); no attributes. Output: a vector of
 * that dtype. Values are start + i * delta computed in the dtype (float16
 * rounding after each step, as Eigen's half), the length (limit - start) /
 * delta rounded up, as TensorFlow. delta 0, a limit on the wrong side of
 * start (NaN included) or a length over int64 is InvalidArgument; integer
 * sizes are computed without overflow. */
#include <math.h>
#include <stdint.h>

#include "ops/op.h"
#include "ops/values.h"

static double half_round(double v)
{
    return cv_half_to_float(cv_float_to_half((float)v));
}

static CvStatus range_float(const CvTensor *in, CvTensor *out)
{
    CvDtype d = in[0].dtype;
    double start = cv_value_f(in[0].data, d, 0), limit = cv_value_f(in[1].data, d, 0),
           delta = cv_value_f(in[2].data, d, 0), size;
    if (delta == 0)
        return cv_error(CV_INVALID_ARGUMENT, "Requires delta != 0: %g", delta);
    if (delta > 0 && !(start <= limit))
        return cv_error(CV_INVALID_ARGUMENT, "Requires start <= limit when delta > 0: %g/%g",
                        start, limit);
    if (delta < 0 && !(start >= limit))
        return cv_error(CV_INVALID_ARGUMENT, "Requires start >= limit when delta < 0: %g/%g",
                        start, limit);
    if (d == CV_FLOAT32)
        size = ceilf(fabsf(((float)limit - (float)start) / (float)delta));
    else if (d == CV_FLOAT16)
        size = ceil(fabs(half_round(half_round(limit - start) / delta)));
    else
        size = ceil(fabs((limit - start) / delta));
    if (!(size <= 9223372036854775807.0) || size >= 9223372036854775807.0)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Requires ((limit - start) / delta) <= 9223372036854775807");
    int64_t n = (int64_t)size;
    CvStatus s = cv_tensor_alloc(out, d, 1, &n, 0, NULL);
    if (s)
        return s;
    for (int64_t i = 0; i < n; i++) {
        if (d == CV_FLOAT32)
            ((float *)out->data)[i] = (float)start + (float)i * (float)delta;
        else if (d == CV_FLOAT16)
            cv_value_set_f(out->data, d, i, start + half_round(half_round((double)i) * delta));
        else
            ((double *)out->data)[i] = start + (double)i * delta;
    }
    return CV_STATUS_OK;
}

static CvStatus range_int(const CvTensor *in, CvTensor *out)
{
    CvDtype d = in[0].dtype;
    int64_t start = (int64_t)cv_value_u(in[0].data, d, 0),
            limit = (int64_t)cv_value_u(in[1].data, d, 0),
            delta = (int64_t)cv_value_u(in[2].data, d, 0);
    if (delta == 0)
        return cv_error(CV_INVALID_ARGUMENT, "Requires delta != 0: %lld", (long long)delta);
    if (delta > 0 && start > limit)
        return cv_error(CV_INVALID_ARGUMENT, "Requires start <= limit when delta > 0: %lld/%lld",
                        (long long)start, (long long)limit);
    if (delta < 0 && start < limit)
        return cv_error(CV_INVALID_ARGUMENT, "Requires start >= limit when delta < 0: %lld/%lld",
                        (long long)start, (long long)limit);
    uint64_t span = delta > 0 ? (uint64_t)limit - (uint64_t)start
                              : (uint64_t)start - (uint64_t)limit;
    uint64_t step = delta > 0 ? (uint64_t)delta : 0 - (uint64_t)delta;
    uint64_t count = span / step + (span % step != 0);
    if (count > (uint64_t)INT64_MAX)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Requires ((limit - start) / delta) <= 9223372036854775807");
    int64_t n = (int64_t)count;
    CvStatus s = cv_tensor_alloc(out, d, 1, &n, 0, NULL);
    if (s)
        return s;
    for (int64_t i = 0; i < n; i++)
        cv_value_set_u(out->data, d, i, (uint64_t)start + (uint64_t)i * (uint64_t)delta);
    return CV_STATUS_OK;
}

static CvStatus range_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)attrs;
    (void)num_out;
    (void)ctx;
    CvDtype d = in[0].dtype;
    for (int i = 0; i < num_in; i++) {
        if (in[i].dtype != d || in[i].rank != 0)
            return cv_error(CV_INVALID_ARGUMENT, "Range: start, limit and delta must be scalars "
                            "of one dtype");
    }
    if (d == CV_INT32 || d == CV_INT64)
        return range_int(in, &out[0]);
    if (cv_dtype_is_float(d))
        return range_float(in, &out[0]);
    return cv_error(CV_INVALID_ARGUMENT, "Range: %s is not supported", cv_dtype_name(d));
}

const CvOp cv_op_range = {.name = "Range", .min_inputs = 3, .max_inputs = 3, .run = range_run};
