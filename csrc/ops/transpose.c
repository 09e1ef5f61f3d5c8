/* Transpose(x): x's dims permuted (tf.transpose): output dim d is input dim
 * perm[d]. ints: perm (one per input dim, a permutation of 0..rank-1, checked
 * here). Any dtype, strings copied; an identity perm shares the input. */
#include "ops/index_map.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { TRANSPOSE_PERM, TRANSPOSE_NUM_INTS };
static const char *const transpose_int_attrs[] = {"perm[]", NULL};
CV_ATTR_NAMES_MATCH(transpose_int_attrs, TRANSPOSE_NUM_INTS);

static CvStatus transpose_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                              CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    int64_t src_stride[CV_MAX_RANK], shape[CV_MAX_RANK];
    bool seen[CV_MAX_RANK] = {false}, identity = true;
    if (attrs->num_ints != x->rank)
        return cv_error(CV_INVALID_ARGUMENT, "transpose expects a vector of size %d. But input(1) "
                        "is a vector of size %d", x->rank, attrs->num_ints);
    for (int d = 0; d < x->rank; d++) {
        int64_t p = attrs->ints[TRANSPOSE_PERM + d];
        if (p < 0 || p >= x->rank || seen[p])
            return cv_error(CV_INVALID_ARGUMENT, "%lld is out of range or repeated in the "
                            "permutation", (long long)p);
        seen[p] = true;
        identity = identity && p == d;
        shape[d] = x->shape[p];
    }
    if (identity) {
        cv_tensor_copy_ref(&out[0], x);
        return CV_STATUS_OK;
    }
    CvIndexMap m;
    CvStatus s = cv_index_map_init(&m, x->rank, shape);
    if (s)
        return s;
    cv_index_map_strides(x, src_stride);
    if (m.total)
        for (int d = 0; d < x->rank; d++) {
            m.stride[d] = src_stride[attrs->ints[TRANSPOSE_PERM + d]];
            for (int64_t o = 0; o < shape[d]; o++)
                m.map[d][o] = o;
        }
    s = cv_index_map_copy(&m, x, NULL, &out[0]);
    cv_index_map_free(&m);
    return s;
}

const CvOp cv_op_transpose = {.name = "Transpose", .min_inputs = 1, .max_inputs = 1,
                              .run = transpose_run,
    .int_attrs = transpose_int_attrs};
