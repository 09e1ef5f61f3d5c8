/* StringEqual(x, y): whether the strings of two string tensors are equal,
 * byte for byte, broadcasting as NumPy does (tf.equal / tf.not_equal and
 * == / != on string tensors); a bool tensor of the broadcast shape.
 *
 * ints: [0] 1 for not_equal. */
#include <string.h>

#include "ops/op.h"

static CvStatus string_equal_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                 CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints < 1 || in[0].dtype != CV_STRING || in[1].dtype != CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "StringEqual needs two string tensors");
    const CvTensor *a = &in[0], *b = &in[1];
    const int rank = a->rank > b->rank ? a->rank : b->rank;
    int64_t shape[CV_MAX_RANK], sa[CV_MAX_RANK], sb[CV_MAX_RANK], idx[CV_MAX_RANK] = {0};
    int64_t stride_a = 1, stride_b = 1;
    for (int i = rank - 1; i >= 0; i--) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char ta[64], tb[64];
            return cv_error(CV_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                            cv_shape_str(a->shape, a->rank, ta, sizeof(ta)),
                            cv_shape_str(b->shape, b->rank, tb, sizeof(tb)));
        }
        shape[i] = da == 1 ? db : da;
        sa[i] = da == 1 ? 0 : stride_a;
        sb[i] = db == 1 ? 0 : stride_b;
        stride_a *= da;
        stride_b *= db;
    }
    CvStatus s = cv_tensor_alloc(&out[0], CV_BOOL, rank, shape, 0, NULL);
    if (s)
        return s;
    const int64_t n = cv_tensor_num_elements(&out[0]);
    const CvStringRef *ra = (const CvStringRef *)a->data, *rb = (const CvStringRef *)b->data;
    const bool negate = attrs->ints[0] != 0;
    bool *dst = (bool *)out[0].data;
    int64_t oa = 0, ob = 0;
    for (int64_t i = 0; i < n; i++) {
        const CvStringRef *x = &ra[oa], *y = &rb[ob];
        bool eq = x->length == y->length &&
                  memcmp(cv_string_data(a, x), cv_string_data(b, y), (size_t)x->length) == 0;
        dst[i] = eq != negate;
        for (int d = rank - 1; d >= 0; d--) { /* next index, row-major */
            oa += sa[d];
            ob += sb[d];
            if (++idx[d] < shape[d])
                break;
            oa -= sa[d] * shape[d];
            ob -= sb[d] * shape[d];
            idx[d] = 0;
        }
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_string_equal = {"StringEqual", 2, 2, string_equal_run};
