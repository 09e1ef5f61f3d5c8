/* EnsureShape: pass a tensor through after checking its shape against a
 * (partially known) expected one (tf.ensure_shape). Shares the input's memory.
 *
 * ints: [rank (-1: any rank, nothing is checked), dims... (-1: any size)].
 * A mismatch is InvalidArgument with TensorFlow's message. Any dtype. */
#include <stdio.h>

#include "ops/op.h"

static const char *expected_str(const CvOpAttrs *attrs, char *buf, size_t size)
{
    size_t used = 0;
    used += (size_t)snprintf(buf, size, "[");
    for (int64_t d = 0; d < attrs->ints[0] && used < size; d++) {
        int64_t v = attrs->ints[1 + d];
        if (v < 0)
            used += (size_t)snprintf(buf + used, size - used, "%s?", d ? "," : "");
        else
            used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? "," : "",
                                     (long long)v);
    }
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

static CvStatus ensure_shape_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                 CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    if (attrs->num_ints < 1 || attrs->ints[0] > CV_MAX_RANK ||
        (attrs->ints[0] >= 0 && attrs->num_ints != 1 + attrs->ints[0]))
        return cv_error(CV_INVALID_ARGUMENT, "EnsureShape: malformed attributes");
    int64_t rank = attrs->ints[0];
    bool ok = rank < 0 || rank == x->rank;
    for (int d = 0; ok && rank >= 0 && d < x->rank; d++)
        ok = attrs->ints[1 + d] < 0 || attrs->ints[1 + d] == x->shape[d];
    if (!ok) {
        char a[128], b[128];
        return cv_error(CV_INVALID_ARGUMENT,
                        "Shape of tensor input %s is not compatible with expected shape %s.",
                        cv_shape_str(x->shape, x->rank, a, sizeof(a)),
                        expected_str(attrs, b, sizeof(b)));
    }
    cv_tensor_copy_ref(&out[0], x);
    return CV_STATUS_OK;
}

const CvOp cv_op_ensure_shape = {
    .name = "EnsureShape", .min_inputs = 1, .max_inputs = 1, .run = ensure_shape_run};
