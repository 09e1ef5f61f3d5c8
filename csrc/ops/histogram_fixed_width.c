/* HistogramFixedWidth(values, value_range): tf.histogram_fixed_width, the
 * counts of `values` in `nbins` equal bins spanning value_range [lo, hi];
 * values below lo count in the first bin, values at or above hi in the last.
 * As TensorFlow's CPU kernel: a value's bin is
 * min((max(v, lo) - lo) / ((hi - lo) / nbins), nbins - 1) truncated, the
 * differences taken in the values' dtype (integers wrap) and the division
 * in double. values and value_range share one dtype (int32, int64, float32,
 * float64); value_range has 2 values with lo < hi; a NaN value is an error. ints: [nbins, dtype of
 * the counts (int32 or int64)]. No state beyond the output. */
#include <math.h>
#include <stdlib.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs). */
enum { HISTOGRAM_NBINS, HISTOGRAM_DTYPE, HISTOGRAM_NUM_INTS };
static const char *const histogram_int_attrs[] = {"nbins", "dtype", NULL};
CV_ATTR_NAMES_MATCH(histogram_int_attrs, HISTOGRAM_NUM_INTS);

/* Bin of every value into bins[] (int64 counts). DIFF(a, b): a - b in T. */
#define HISTOGRAM(T, DIFF, NAN)                                                                    \
    do {                                                                                           \
        const T *v = (const T *)values->data, lo = ((const T *)range->data)[0],                    \
                hi = ((const T *)range->data)[1];                                                  \
        if (!(lo < hi))                                                                            \
            goto bad_range;                                                                        \
        double step = (double)DIFF(hi, lo) / (double)nbins;                                        \
        for (int64_t i = 0; i < n; i++) {                                                          \
            if (NAN(v[i]))                                                                         \
                goto has_nan;                                                                      \
            T x = v[i] > lo ? v[i] : lo;                                                           \
            double at = (double)DIFF(x, lo) / step;                                                \
            if (at > (double)(nbins - 1))                                                          \
                at = (double)(nbins - 1);                                                          \
            if (!(at >= 0)) /* a range wider than the dtype wraps: never write outside */          \
                at = 0;                                                                            \
            bins[(int64_t)at]++;                                                                   \
        }                                                                                          \
    } while (0)

#define FLOAT_DIFF(a, b) ((a) - (b))
#define IS_NAN(x) isnan(x)
#define NEVER(x) ((void)(x), false)
#define I32_DIFF(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)))
#define I64_DIFF(a, b) ((int64_t)((uint64_t)(a) - (uint64_t)(b)))

static CvStatus histogram_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                              CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *values = &in[0], *range = &in[1];
    CvStatus s = CV_STATUS_OK;
    int64_t *bins = NULL;
    if (attrs->num_ints != HISTOGRAM_NUM_INTS)
        return cv_error(CV_INVALID_ARGUMENT, "HistogramFixedWidth: malformed attributes");
    int64_t nbins = attrs->ints[HISTOGRAM_NBINS];
    CvDtype dtype = (CvDtype)attrs->ints[HISTOGRAM_DTYPE];
    if (nbins <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "nbins should be a positive number, but got '%lld'",
                        (long long)nbins);
    if (range->dtype != values->dtype || cv_tensor_num_elements(range) != 2 || range->rank != 1)
        return cv_error(CV_INVALID_ARGUMENT, "value_range should be a vector of 2 values of the "
                        "values' dtype %s", cv_dtype_name(values->dtype));
    if (dtype != CV_INT32 && dtype != CV_INT64)
        return cv_error(CV_INVALID_ARGUMENT, "HistogramFixedWidth: counts must be int32 or int64");
    bins = calloc((size_t)nbins, sizeof(*bins));
    if (!bins)
        return cv_error(CV_RESOURCE_EXHAUSTED, "HistogramFixedWidth: %lld bins", (long long)nbins);
    int64_t n = cv_tensor_num_elements(values);
    switch (values->dtype) {
    case CV_FLOAT32: HISTOGRAM(float, FLOAT_DIFF, IS_NAN); break;
    case CV_FLOAT64: HISTOGRAM(double, FLOAT_DIFF, IS_NAN); break;
    case CV_INT32: HISTOGRAM(int32_t, I32_DIFF, NEVER); break;
    case CV_INT64: HISTOGRAM(int64_t, I64_DIFF, NEVER); break;
    default:
        s = cv_error(CV_INVALID_ARGUMENT, "HistogramFixedWidth: unsupported dtype %s (int32, "
                     "int64, float32, float64)", cv_dtype_name(values->dtype));
        goto done;
    }
    if ((s = cv_tensor_alloc(&out[0], dtype, 1, &nbins, 0, NULL)))
        goto done;
    for (int64_t i = 0; i < nbins; i++) {
        if (dtype == CV_INT32)
            ((int32_t *)out[0].data)[i] = (int32_t)bins[i];
        else
            ((int64_t *)out[0].data)[i] = bins[i];
    }
    goto done;
has_nan:
    s = cv_error(CV_INVALID_ARGUMENT, "Histogram values must not contain NaN");
    goto done;
bad_range:
    s = cv_error(CV_INVALID_ARGUMENT, "value_range should satisfy value_range[0] < "
                 "value_range[1]");
done:
    free(bins);
    return s;
}

const CvOp cv_op_histogram_fixed_width = {
    .name = "HistogramFixedWidth", .min_inputs = 2, .max_inputs = 2, .run = histogram_run,
    .int_attrs = histogram_int_attrs};
