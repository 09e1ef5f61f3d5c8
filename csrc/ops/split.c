/* SplitV(x): x cut along one axis into consecutive pieces (tf.split), one
 * output per piece. ints: [axis (resolved, 0..rank-1), size_0, size_1, ...];
 * the sizes (>= 0) must add up to the dim (checked here: InvalidArgument);
 * one size -1: the rest of the dim; all of them -1 (two or more pieces):
 * equal pieces (the dim must divide evenly).
 * Any dtype, strings copied. */
#include "ops/index_map.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { SPLIT_AXIS, SPLIT_SIZES, SPLIT_NUM_INTS };
static const char *const split_int_attrs[] = {"axis", "sizes[]", NULL};
CV_ATTR_NAMES_MATCH(split_int_attrs, SPLIT_NUM_INTS);

static CvStatus split_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)ctx;
    const CvTensor *x = &in[0];
    int64_t axis = attrs->num_ints > SPLIT_AXIS ? attrs->ints[SPLIT_AXIS] : -1, sum = 0, start = 0;
    int64_t src_stride[CV_MAX_RANK], shape[CV_MAX_RANK];
    if (axis < 0 || axis >= x->rank || attrs->num_ints != SPLIT_SIZES + num_out)
        return cv_error(CV_INVALID_ARGUMENT, "Split: bad axis for a rank %d tensor", x->rank);
    int64_t sizes[CV_OP_MAX_INTS], dim = x->shape[axis], rest = -1;
    int unknown = 0;
    for (int i = 0; i < num_out; i++)
        unknown += attrs->ints[SPLIT_SIZES + i] == -1;
    if (num_out > 1 && unknown == num_out) { /* equal pieces */
        if (dim % num_out)
            return cv_error(CV_INVALID_ARGUMENT, "Number of ways to split should evenly divide "
                            "the split dimension, but got split_dim %lld (size = %lld) and "
                            "num_split %d", (long long)axis, (long long)dim, num_out);
        for (int i = 0; i < num_out; i++)
            sizes[i] = dim / num_out;
    } else {
        if (unknown > 1)
            goto bad;
        for (int i = 0; i < num_out; i++) {
            int64_t k = attrs->ints[SPLIT_SIZES + i];
            if (k == -1) {
                rest = i;
                k = 0;
            }
            if (k < 0 || k > dim || sum > dim - k)
                goto bad;
            sizes[i] = k;
            sum += k;
        }
        if (rest >= 0) {
            sizes[rest] = dim - sum;
            sum = dim;
        }
        if (sum != dim)
            goto bad;
    }
    cv_index_map_strides(x, src_stride);
    memcpy(shape, x->shape, sizeof(shape));
    for (int i = 0; i < num_out; i++) {
        CvIndexMap m;
        shape[axis] = sizes[i];
        CvStatus s = cv_index_map_init(&m, x->rank, shape);
        if (!s) {
            if (m.total)
                for (int d = 0; d < x->rank; d++) {
                    m.stride[d] = src_stride[d];
                    for (int64_t o = 0; o < shape[d]; o++)
                        m.map[d][o] = d == axis ? start + o : o;
                }
            s = cv_index_map_copy(&m, x, NULL, &out[i]);
            cv_index_map_free(&m);
        }
        if (s) {
            for (int j = 0; j < i; j++)
                cv_tensor_clear(&out[j]);
            return s;
        }
        start += shape[axis];
    }
    return CV_STATUS_OK;
bad:
    return cv_error(CV_INVALID_ARGUMENT, "Determined shape must either match input shape along "
                    "split_dim exactly if fully specified, or be less than the size of the input "
                    "along split_dim if not fully specified.");
}

const CvOp cv_op_split = {.name = "SplitV", .min_inputs = 1, .max_inputs = 1, .run = split_run,
    .int_attrs = split_int_attrs};
