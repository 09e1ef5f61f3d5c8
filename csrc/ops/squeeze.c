/* Squeeze: drop dimensions of size 1 (tf.squeeze). Shares the input's memory.
 *
 * ints: the dims to drop (negative counts from the end; resolved here), or
 * none: every dim of size 1. A dim out of range, or one named that is not
 * 1, is InvalidArgument with TensorFlow's message. Any dtype. */
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { SQUEEZE_AXES, SQUEEZE_NUM_INTS };
static const char *const squeeze_int_attrs[] = {"axes[]", NULL};
CV_ATTR_NAMES_MATCH(squeeze_int_attrs, SQUEEZE_NUM_INTS);

static CvStatus squeeze_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                            int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    bool drop[CV_MAX_RANK] = {false};
    for (int k = 0; k < attrs->num_ints; k++) {
        int64_t ax = attrs->ints[SQUEEZE_AXES + k];
        if (ax < -x->rank || ax >= x->rank)
            return cv_error(CV_INVALID_ARGUMENT,
                            "Tried to squeeze dim index %lld for tensor with %d dimensions.",
                            (long long)ax, x->rank);
        if (ax < 0)
            ax += x->rank;
        if (x->shape[ax] != 1)
            return cv_error(CV_INVALID_ARGUMENT,
                            "Can not squeeze dim[%lld], expected a dimension of 1, got %lld",
                            (long long)ax, (long long)x->shape[ax]);
        drop[ax] = true;
    }
    cv_tensor_copy_ref(&out[0], x);
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
        if (attrs->num_ints == 0 ? x->shape[d] != 1 : !drop[d])
            out[0].shape[r++] = x->shape[d];
    }
    out[0].rank = r;
    return CV_STATUS_OK;
}

const CvOp cv_op_squeeze = {.name = "Squeeze", .min_inputs = 1, .max_inputs = 1, .run = squeeze_run,
    .int_attrs = squeeze_int_attrs};
