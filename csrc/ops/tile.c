/* Tile(x): x repeated multiples[d] times along each dim d (tf.tile).
 * ints: multiples (one per input dim, >= 0; checked here). Any dtype,
 * strings copied. */
#include "ops/index_map.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { TILE_MULTIPLES, TILE_NUM_INTS };
static const char *const tile_int_attrs[] = {"multiples[]", NULL};
CV_ATTR_NAMES_MATCH(tile_int_attrs, TILE_NUM_INTS);

static CvStatus tile_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                         int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    int64_t src_stride[CV_MAX_RANK], shape[CV_MAX_RANK];
    if (attrs->num_ints != x->rank)
        return cv_error(CV_INVALID_ARGUMENT, "Expected multiples argument to be a vector of "
                        "length %d but got length %d", x->rank, attrs->num_ints);
    for (int d = 0; d < x->rank; d++) {
        int64_t k = attrs->ints[TILE_MULTIPLES + d];
        if (k < 0)
            return cv_error(CV_INVALID_ARGUMENT, "Expected multiples[%d] >= 0, but got %lld", d,
                            (long long)k);
        if (k && x->shape[d] > INT64_MAX / k)
            return cv_error(CV_INVALID_ARGUMENT, "the result's dim %d is too large", d);
        shape[d] = x->shape[d] * k;
    }
    CvIndexMap m;
    CvStatus s = cv_index_map_init(&m, x->rank, shape);
    if (s)
        return s;
    cv_index_map_strides(x, src_stride);
    if (m.total)
        for (int d = 0; d < x->rank; d++) {
            m.stride[d] = src_stride[d];
            for (int64_t o = 0; o < shape[d]; o++)
                m.map[d][o] = o % x->shape[d];
        }
    s = cv_index_map_copy(&m, x, NULL, &out[0]);
    cv_index_map_free(&m);
    return s;
}

const CvOp cv_op_tile = {.name = "Tile", .min_inputs = 1, .max_inputs = 1, .run = tile_run,
    .int_attrs = tile_int_attrs};
