/* Multinomial(logits, seed): tf.random.stateless_categorical (and
 * tf.random.categorical, keyed by a seed from the per-element stream): for
 * each row of logits [batch, classes], num_samples class indices drawn with
 * probabilities softmax(row), the same as TensorFlow's for the same seed.
 *
 * As TensorFlow's CPU kernel: per row, the largest finite logit m, the
 * running sums of exp(logit - m) over finite logits (in double), and per
 * sample the first class whose running sum exceeds u * total, u a double in
 * [0, 1) from two samples of the seed's stream (ops/stateless.h). Rows draw
 * one after another from one stream, as TensorFlow does when it runs the
 * batch unsharded (small batches). ints: [num_samples, dtype of the indices
 * (int32 or int64)]. The running sums are a scratch buffer freed here. */
#include <math.h>
#include <stdlib.h>

#include "ops/numeric.h"
#include "ops/op.h"
#include "ops/stateless.h"

/* Attribute slots, named in this order (CvOp.int_attrs). */
enum { MULTINOMIAL_NUM_SAMPLES, MULTINOMIAL_DTYPE, MULTINOMIAL_NUM_INTS };
static const char *const multinomial_int_attrs[] = {"num_samples", "dtype", NULL};
CV_ATTR_NAMES_MATCH(multinomial_int_attrs, MULTINOMIAL_NUM_INTS);

static double logit_at(const CvTensor *t, int64_t i)
{
    switch (t->dtype) {
    case CV_FLOAT16: return (double)cv_half_to_float(((const cv_half *)t->data)[i]);
    case CV_FLOAT32: return (double)((const float *)t->data)[i];
    default: return ((const double *)t->data)[i];
    }
}

static CvStatus multinomial_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *logits = &in[0];
    CvStatus s = CV_STATUS_OK;
    double *cdf = NULL;
    if (attrs->num_ints != MULTINOMIAL_NUM_INTS)
        return cv_error(CV_INVALID_ARGUMENT, "Multinomial: malformed attributes");
    int64_t num_samples = attrs->ints[MULTINOMIAL_NUM_SAMPLES];
    CvDtype dtype = (CvDtype)attrs->ints[MULTINOMIAL_DTYPE];
    if (logits->rank != 2)
        return cv_error(CV_INVALID_ARGUMENT, "logits should be a matrix, got rank %d",
                        logits->rank);
    if (logits->dtype != CV_FLOAT16 && logits->dtype != CV_FLOAT32 && logits->dtype != CV_FLOAT64)
        return cv_error(CV_INVALID_ARGUMENT, "Multinomial: logits must be float16, float32 or "
                        "float64, got %s", cv_dtype_name(logits->dtype));
    if (num_samples < 0)
        return cv_error(CV_INVALID_ARGUMENT, "num_samples should be nonnegative, got %lld",
                        (long long)num_samples);
    if (dtype != CV_INT32 && dtype != CV_INT64)
        return cv_error(CV_INVALID_ARGUMENT, "Multinomial: output dtype must be int32 or int64");
    int64_t rows = logits->shape[0], classes = logits->shape[1];
    if (classes <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "num_classes should be positive, got %lld",
                        (long long)classes);
    CvPhilox rng;
    if ((s = cv_stateless_init(&in[1], &rng)))
        return s;
    int64_t shape[2] = {rows, num_samples};
    if ((s = cv_tensor_alloc(&out[0], dtype, 2, shape, 0, NULL)))
        return s;
    if (rows == 0 || num_samples == 0)
        return CV_STATUS_OK;
    cdf = malloc((size_t)classes * sizeof(*cdf));
    if (!cdf) {
        s = cv_error(CV_RESOURCE_EXHAUSTED, "Multinomial: %lld classes", (long long)classes);
        goto done;
    }
    for (int64_t b = 0; b < rows; b++) {
        double top = -INFINITY;
        bool any = false;
        for (int64_t j = 0; j < classes; j++) {
            double v = logit_at(logits, b * classes + j);
            if (isfinite(v) && (!any || v > top)) {
                top = v;
                any = true;
            }
        }
        if (!any) /* the dtype's lowest, as TensorFlow starts its maximum */
            top = logits->dtype == CV_FLOAT16 ? -65504.0
                  : logits->dtype == CV_FLOAT32 ? -(double)3.40282346638528859812e+38F
                                                : -1.7976931348623157e308;
        double total = 0;
        for (int64_t j = 0; j < classes; j++) {
            double v = logit_at(logits, b * classes + j);
            if (isfinite(v))
                total += exp(v - top);
            cdf[j] = total;
        }
        for (int64_t k = 0; k < num_samples; k++) {
            double find = cv_stateless_double(&rng) * total;
            int64_t lo = 0, hi = classes; /* upper bound: first cdf > find */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (cdf[mid] > find)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            if (dtype == CV_INT32)
                ((int32_t *)out[0].data)[b * num_samples + k] = (int32_t)lo;
            else
                ((int64_t *)out[0].data)[b * num_samples + k] = lo;
        }
    }
done:
    free(cdf);
    if (s)
        cv_tensor_clear(&out[0]);
    return s;
}

const CvOp cv_op_multinomial = {.name = "Multinomial", .min_inputs = 2, .max_inputs = 2,
                                .run = multinomial_run, .int_attrs = multinomial_int_attrs};
