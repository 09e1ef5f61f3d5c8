/* ReduceJoin(input): the strings of a string tensor joined along some of
 * its axes with a separator (tf.strings.reduce_join). The strings of one
 * output are ordered with the first listed axis varying fastest (so
 * reducing all axes from the last to the first is row-major order). The
 * reduced axes are dropped, or kept with size 1 (keepdims); an empty
 * reduction gives "".
 *
 * ints: [0] keepdims, [1 + d] for input dim d: 0 when kept, else k when it
 * is the k-th axis of the reduction (1-based); string: the separator (no
 * NUL bytes; NULL for ""). */
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "ops/string_out.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { REDUCE_JOIN_KEEPDIMS, REDUCE_JOIN_REDUCED, REDUCE_JOIN_NUM_INTS };
static const char *const reduce_join_int_attrs[] = {"keepdims", "reduced[]", NULL};
CV_ATTR_NAMES_MATCH(reduce_join_int_attrs, REDUCE_JOIN_NUM_INTS);

static CvStatus reduce_join_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    if (x->dtype != CV_STRING || attrs->num_ints != REDUCE_JOIN_REDUCED + x->rank)
        return cv_error(CV_INVALID_ARGUMENT, "ReduceJoin needs strings and one flag per axis");
    const char *sep = attrs->string ? attrs->string : "";
    const size_t sep_len = strlen(sep);
    const int rank = x->rank;
    int64_t shape[CV_MAX_RANK], ostride[CV_MAX_RANK], gstride[CV_MAX_RANK], idx[CV_MAX_RANK] = {0};
    int orank = 0;
    int64_t nout = 1, group = 1, stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        ostride[d] = attrs->ints[REDUCE_JOIN_REDUCED + d] ? 0 : stride;
        stride *= attrs->ints[REDUCE_JOIN_REDUCED + d] ? 1 : x->shape[d];
    }
    for (int k = 1; k <= rank; k++) /* the k-th reduced axis varies after the (k-1)-th */
        for (int d = 0; d < rank; d++)
            if (attrs->ints[REDUCE_JOIN_REDUCED + d] == k) {
                gstride[d] = group;
                group *= x->shape[d];
            }
    for (int d = 0; d < rank; d++) {
        if (!attrs->ints[REDUCE_JOIN_REDUCED + d]) {
            gstride[d] = 0;
            shape[orank++] = x->shape[d];
            nout *= x->shape[d];
        } else if (attrs->ints[REDUCE_JOIN_KEEPDIMS]) {
            shape[orank++] = 1;
        }
    }
    const int64_t n = cv_tensor_num_elements(x);
    int64_t *order = malloc(((size_t)n + 1) * sizeof(int64_t)); /* input index by output slot */
    CvStringOut o = {0};
    CvStatus s = order ? cv_string_out_init(&o, nout) : cv_error_nomem();
    if (s)
        goto cleanup;
    int64_t oi = 0, gi = 0;
    for (int64_t i = 0; i < n; i++) {
        order[oi * group + gi] = i;
        for (int d = rank - 1; d >= 0; d--) {
            oi += ostride[d];
            gi += gstride[d];
            if (++idx[d] < x->shape[d])
                break;
            oi -= ostride[d] * x->shape[d];
            gi -= gstride[d] * x->shape[d];
            idx[d] = 0;
        }
    }
    for (int64_t j = 0; !s && j < nout; j++) {
        for (int64_t q = 0; !s && q < group; q++) {
            size_t len;
            const char *t = cv_string_at(x, order[j * group + q], &len);
            if (q > 0)
                s = cv_string_out_append(&o, sep, sep_len);
            if (!s)
                s = cv_string_out_append(&o, t, len);
        }
        cv_string_out_end(&o);
    }
    if (!s)
        s = cv_string_out_finish(&o, orank, shape, &out[0]);
cleanup:
    cv_string_out_free(&o);
    free(order);
    return s;
}

const CvOp cv_op_reduce_join = {
    .name = "ReduceJoin", .min_inputs = 1, .max_inputs = 1, .run = reduce_join_run,
    .int_attrs = reduce_join_int_attrs};
