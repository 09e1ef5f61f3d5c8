/* ConcatV2: join tensors along an axis (tf.concat; tf.stack is expand_dims
 * then concat). ints[0]: the axis, resolved (0..rank-1). All inputs share
 * dtype and rank and agree on every other dim (checked here: dims may be
 * unknown when traced). Numeric and bool tensors. */
#include <string.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { CONCAT_AXIS, CONCAT_NUM_INTS };
static const char *const concat_int_attrs[] = {"axis", NULL};
CV_ATTR_NAMES_MATCH(concat_int_attrs, CONCAT_NUM_INTS);

static CvStatus concat_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_out;
    (void)ctx;
    int64_t axis = attrs->num_ints == CONCAT_NUM_INTS ? attrs->ints[CONCAT_AXIS] : -1;
    const CvTensor *first = &in[0];
    if (axis < 0 || axis >= first->rank || first->dtype == CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "ConcatV2: bad axis or dtype");
    int64_t shape[CV_MAX_RANK];
    memcpy(shape, first->shape, sizeof(shape));
    shape[axis] = 0;
    for (int i = 0; i < num_in; i++) {
        bool same = in[i].rank == first->rank && in[i].dtype == first->dtype;
        for (int d = 0; same && d < first->rank; d++)
            same = d == axis || in[i].shape[d] == first->shape[d];
        if (!same) {
            char a[64], b[64];
            return cv_error(CV_INVALID_ARGUMENT,
                            "ConcatOp : Dimension %lld in both shapes must be equal: shape[0] = "
                            "%s vs. shape[%d] = %s",
                            (long long)axis, cv_shape_str(first->shape, first->rank, a, sizeof(a)),
                            i, cv_shape_str(in[i].shape, in[i].rank, b, sizeof(b)));
        }
        shape[axis] += in[i].shape[axis];
    }
    CvStatus s = cv_tensor_alloc(&out[0], first->dtype, first->rank, shape, 0, NULL);
    if (s)
        return s;
    int64_t outer = 1, inner = (int64_t)cv_dtype_size(first->dtype);
    for (int d = 0; d < axis; d++)
        outer *= shape[d];
    for (int d = (int)axis + 1; d < first->rank; d++)
        inner *= shape[d];
    char *dst = out[0].data;
    for (int64_t o = 0; o < outer; o++) {
        for (int i = 0; i < num_in; i++) {
            size_t run = (size_t)(in[i].shape[axis] * inner);
            if (run)
                memcpy(dst, in[i].data + (size_t)o * run, run);
            dst += run;
        }
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_concat = {.name = "ConcatV2", .min_inputs = 1, .max_inputs = CV_OP_MAX_ARITY, .run = concat_run,
    .int_attrs = concat_int_attrs};
