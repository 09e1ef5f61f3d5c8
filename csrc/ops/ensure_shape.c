/* EnsureShape: pass a tensor through after checking its shape against a
 * (partially known) expected one (tf.ensure_shape). Shares the input's memory.
 *
 * ints: [rank (-1: any rank, nothing is checked), dims... (-1: any size)].
 * A mismatch is InvalidArgument with TensorFlow's message. Any dtype. */
#include <stdio.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { ENSURE_SHAPE_RANK, ENSURE_SHAPE_DIMS, ENSURE_SHAPE_NUM_INTS };
static const char *const ensure_shape_int_attrs[] = {"rank", "dims[]", NULL};
CV_ATTR_NAMES_MATCH(ensure_shape_int_attrs, ENSURE_SHAPE_NUM_INTS);

static const char *expected_str(const CvOpAttrs *attrs, char *buf, size_t size)
{
    size_t used = 0;
    used += (size_t)snprintf(buf, size, "[");
    for (int64_t d = 0; d < attrs->ints[ENSURE_SHAPE_RANK] && used < size; d++) {
        int64_t v = attrs->ints[ENSURE_SHAPE_DIMS + d];
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
    int64_t rank = attrs->num_ints > ENSURE_SHAPE_RANK ? attrs->ints[ENSURE_SHAPE_RANK] : 0;
    if (attrs->num_ints <= ENSURE_SHAPE_RANK || rank > CV_MAX_RANK ||
        (rank >= 0 && attrs->num_ints != ENSURE_SHAPE_DIMS + rank))
        return cv_error(CV_INVALID_ARGUMENT, "EnsureShape: malformed attributes");
    const int64_t *dims = attrs->ints + ENSURE_SHAPE_DIMS;
    bool ok = rank < 0 || rank == x->rank;
    for (int d = 0; ok && rank >= 0 && d < x->rank; d++)
        ok = dims[d] < 0 || dims[d] == x->shape[d];
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
    .name = "EnsureShape", .min_inputs = 1, .max_inputs = 1, .run = ensure_shape_run,
    .int_attrs = ensure_shape_int_attrs};
