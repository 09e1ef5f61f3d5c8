/* SplitV(x): x cut along one axis into consecutive pieces (tf.split), one
 * output per piece. ints: [axis (resolved, 0..rank-1), size_0, size_1, ...];
 * the sizes (>= 0) must add up to the dim (checked here: InvalidArgument);
 * size_0 = -1: num_out equal pieces (the dim must divide evenly).
 * Any dtype, strings copied. */
#include "ops/index_map.h"

static CvStatus split_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)ctx;
    const CvTensor *x = &in[0];
    int64_t axis = attrs->num_ints > 0 ? attrs->ints[0] : -1, sum = 0, start = 0;
    int64_t src_stride[CV_MAX_RANK], shape[CV_MAX_RANK];
    if (axis < 0 || axis >= x->rank || attrs->num_ints != 1 + num_out)
        return cv_error(CV_INVALID_ARGUMENT, "Split: bad axis for a rank %d tensor", x->rank);
    int64_t sizes[CV_OP_MAX_INTS];
    bool equal = num_out > 0 && attrs->ints[1] == -1;
    if (equal && x->shape[axis] % num_out)
        return cv_error(CV_INVALID_ARGUMENT, "Number of ways to split should evenly divide the "
                        "split dimension, but got split_dim %lld (size = %lld) and num_split %d",
                        (long long)axis, (long long)x->shape[axis], num_out);
    for (int i = 0; i < num_out; i++) {
        int64_t k = equal ? x->shape[axis] / num_out : attrs->ints[1 + i];
        sizes[i] = k;
        if (k < 0 || k > x->shape[axis] || sum > x->shape[axis] - k)
            return cv_error(CV_INVALID_ARGUMENT, "Determined shape must either match input shape "
                            "along split_dim exactly if fully specified, or be less than the size "
                            "of the input along split_dim if not fully specified.");
        sum += k;
    }
    if (sum != x->shape[axis])
        return cv_error(CV_INVALID_ARGUMENT, "Determined shape must either match input shape "
                        "along split_dim exactly if fully specified, or be less than the size of "
                        "the input along split_dim if not fully specified.");
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
}

const CvOp cv_op_split = {.name = "SplitV", .min_inputs = 1, .max_inputs = 1, .run = split_run};
