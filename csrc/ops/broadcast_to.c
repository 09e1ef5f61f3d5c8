/* BroadcastTo(x): x repeated to a shape (tf.broadcast_to). ints: the target
 * shape (>= 0); x's dims line up with its last ones and each is 1 or equal
 * (checked here: InvalidArgument). Any dtype, strings copied; an unchanged
 * shape shares the input. */
#include "ops/index_map.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { BROADCAST_TO_SHAPE, BROADCAST_TO_NUM_INTS };
static const char *const broadcast_to_int_attrs[] = {"shape[]", NULL};
CV_ATTR_NAMES_MATCH(broadcast_to_int_attrs, BROADCAST_TO_NUM_INTS);

static CvStatus broadcast_to_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                 CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    int rank = attrs->num_ints, lead = rank - x->rank;
    int64_t src_stride[CV_MAX_RANK];
    bool same = lead == 0;
    if (rank > CV_MAX_RANK || lead < 0)
        goto bad;
    for (int d = 0; d < x->rank; d++) {
        if (x->shape[d] != 1 && x->shape[d] != attrs->ints[BROADCAST_TO_SHAPE + lead + d])
            goto bad;
        same = same && x->shape[d] == attrs->ints[BROADCAST_TO_SHAPE + d];
    }
    if (same) {
        cv_tensor_copy_ref(&out[0], x);
        return CV_STATUS_OK;
    }
    CvIndexMap m;
    CvStatus s = cv_index_map_init(&m, rank, attrs->ints + BROADCAST_TO_SHAPE);
    if (s)
        return s;
    cv_index_map_strides(x, src_stride);
    if (m.total)
        for (int d = 0; d < rank; d++) {
            m.stride[d] = d < lead || x->shape[d - lead] == 1 ? 0 : src_stride[d - lead];
            for (int64_t o = 0; o < m.shape[d]; o++)
                m.map[d][o] = o;
        }
    s = cv_index_map_copy(&m, x, NULL, &out[0]);
    cv_index_map_free(&m);
    return s;
bad:;
    char a[128], b[128];
    return cv_error(CV_INVALID_ARGUMENT, "Unable to broadcast tensor of shape %s to tensor of "
                    "shape %s", cv_shape_str(x->shape, x->rank, a, sizeof(a)),
                    cv_shape_str(attrs->ints + BROADCAST_TO_SHAPE,
                                 rank > CV_MAX_RANK ? CV_MAX_RANK : rank, b, sizeof(b)));
}

const CvOp cv_op_broadcast_to = {.name = "BroadcastTo", .min_inputs = 1, .max_inputs = 1,
                                 .run = broadcast_to_run,
    .int_attrs = broadcast_to_int_attrs};
