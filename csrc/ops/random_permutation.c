/* RandomPermutation(x): a random permutation of 0 .. x.shape[0] - 1 as an
 * int64 vector, drawn from the per-element stream (see CvOpContext), so a
 * traced map gives an element the same order whatever the thread count.
 * tf.random.shuffle gathers x's rows in this order (Fisher-Yates, unbiased).
 * x must have rank >= 1; only its first dim is read. No attributes. */
#include "ops/op.h"

static CvStatus permutation_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)attrs;
    (void)num_in;
    (void)num_out;
    if (in[0].rank < 1)
        return cv_error(CV_INVALID_ARGUMENT, "RandomShuffle: value must be at least 1-D, got "
                        "a scalar");
    int64_t n = in[0].shape[0];
    CvStatus s = cv_tensor_alloc(&out[0], CV_INT64, 1, &n, 0, NULL);
    if (s)
        return s;
    int64_t *p = (int64_t *)out[0].data;
    for (int64_t i = 0; i < n; i++)
        p[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)cv_op_random_below(ctx, (uint64_t)i + 1);
        int64_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_random_permutation = {.name = "RandomPermutation", .min_inputs = 1,
                                       .max_inputs = 1, .run = permutation_run};
