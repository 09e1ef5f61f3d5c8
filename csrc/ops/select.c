/* SelectV2(condition, x, y): x where condition is true, else y, the three
 * broadcast against each other as NumPy does (tf.where with three
 * arguments). No attributes.
 *
 * condition: bool; x and y: one dtype (any, strings copied). Output: the
 * broadcast shape, x's dtype. Shapes that do not broadcast are
 * InvalidArgument. */
#include <string.h>

#include "ops/op.h"

static CvStatus select_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)attrs;
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (in[0].dtype != CV_BOOL || in[1].dtype != in[2].dtype)
        return cv_error(CV_INVALID_ARGUMENT, "SelectV2: condition must be bool and x, y of one "
                        "dtype");
    int rank = 0;
    for (int t = 0; t < 3; t++)
        rank = in[t].rank > rank ? in[t].rank : rank;
    int64_t shape[CV_MAX_RANK], stride[3][CV_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        shape[d] = 1;
        for (int t = 0; t < 3; t++) {
            int k = d - (rank - in[t].rank);
            int64_t dim = k >= 0 ? in[t].shape[k] : 1;
            if (dim != 1 && shape[d] != 1 && dim != shape[d]) {
                char a[96], b[96], c[96];
                return cv_error(CV_INVALID_ARGUMENT,
                                "condition %s, then %s, and else %s must be broadcastable",
                                cv_shape_str(in[0].shape, in[0].rank, a, sizeof(a)),
                                cv_shape_str(in[1].shape, in[1].rank, b, sizeof(b)),
                                cv_shape_str(in[2].shape, in[2].rank, c, sizeof(c)));
            }
            if (dim != 1)
                shape[d] = dim;
        }
    }
    for (int t = 0; t < 3; t++) {
        int64_t step = 1;
        for (int d = rank - 1; d >= 0; d--) {
            int k = d - (rank - in[t].rank);
            int64_t dim = k >= 0 ? in[t].shape[k] : 1;
            stride[t][d] = dim == 1 ? 0 : step;
            step *= dim;
        }
    }
    CvDtype dt = in[1].dtype;
    size_t item = cv_dtype_size(dt), blob_bytes = 0;
    int64_t total = 1;
    for (int d = 0; d < rank; d++)
        total *= shape[d];
    for (int pass = dt == CV_STRING ? 0 : 1; pass < 2; pass++) {
        char *blob = NULL;
        if (pass == 1) {
            CvStatus s = cv_tensor_alloc(&out[0], dt, rank, shape, blob_bytes, &blob);
            if (s)
                return s;
        }
        int64_t idx[CV_MAX_RANK] = {0}, off[3] = {0, 0, 0};
        for (int64_t i = 0; i < total; i++) {
            int t = ((const uint8_t *)in[0].data)[off[0]] ? 1 : 2;
            const char *src = in[t].data + (size_t)off[t] * item;
            if (dt != CV_STRING) {
                memcpy(out[0].data + (size_t)i * item, src, item);
            } else {
                const CvStringRef *sr = (const CvStringRef *)src;
                if (pass == 0) {
                    if (sr->length > SIZE_MAX - blob_bytes)
                        return cv_error(CV_RESOURCE_EXHAUSTED, "SelectV2: result too large");
                    blob_bytes += sr->length;
                } else {
                    CvStringRef *dr = (CvStringRef *)out[0].data + i;
                    dr->offset = (uint64_t)(blob - out[0].buf->data);
                    dr->length = sr->length;
                    if (sr->length)
                        memcpy(blob, cv_string_data(&in[t], sr), sr->length);
                    blob += sr->length;
                }
            }
            for (int d = rank - 1; d >= 0; d--) {
                for (int u = 0; u < 3; u++)
                    off[u] += stride[u][d];
                if (++idx[d] < shape[d])
                    break;
                for (int u = 0; u < 3; u++)
                    off[u] -= stride[u][d] * shape[d];
                idx[d] = 0;
            }
        }
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_select = {.name = "SelectV2", .min_inputs = 3, .max_inputs = 3, .run = select_run};
