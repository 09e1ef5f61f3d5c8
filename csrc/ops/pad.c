/* Pad(x, value): x with values added before and after each dim (tf.pad).
 * ints: [mode, before_0, after_0, before_1, after_1, ...], one pair per dim
 * (>= 0). mode 0 = CONSTANT: new values are `value` (a scalar of x's dtype,
 * the second input); 1 = REFLECT: mirrored without the edge value (pads at
 * most dim - 1); 2 = SYMMETRIC: mirrored with it (pads at most dim). Any
 * dtype, strings copied. Bad pads are InvalidArgument (checked here). */
#include "ops/index_map.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { PAD_MODE, PAD_PADDINGS, PAD_NUM_INTS };
static const char *const pad_int_attrs[] = {"mode", "paddings[]", NULL};
CV_ATTR_NAMES_MATCH(pad_int_attrs, PAD_NUM_INTS);

static CvStatus pad_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                        int num_out, CvOpContext *ctx)
{
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    int64_t src_stride[CV_MAX_RANK], shape[CV_MAX_RANK];
    int64_t mode = attrs->num_ints > PAD_MODE ? attrs->ints[PAD_MODE] : -1;
    if (attrs->num_ints != PAD_PADDINGS + 2 * x->rank || mode < 0 || mode > 2 ||
        (mode == 0 && num_in < 2))
        return cv_error(CV_INVALID_ARGUMENT, "The first dimension of paddings must be the rank "
                        "of inputs[%d, 2]", x->rank);
    for (int d = 0; d < x->rank; d++) {
        int64_t b = attrs->ints[PAD_PADDINGS + 2 * d], a = attrs->ints[PAD_PADDINGS + 2 * d + 1];
        int64_t limit = mode == 1 ? x->shape[d] - 1 : x->shape[d];
        if (b < 0 || a < 0)
            return cv_error(CV_INVALID_ARGUMENT, "Paddings must be non-negative: %lld %lld",
                            (long long)b, (long long)a);
        if (mode != 0 && (b > limit || a > limit))
            return cv_error(CV_INVALID_ARGUMENT, "paddings must be no greater than the dimension "
                            "size: %lld, %lld greater than %lld", (long long)b, (long long)a,
                            (long long)limit);
        if (b > INT64_MAX / 4 || a > INT64_MAX / 4 || x->shape[d] > INT64_MAX / 4)
            return cv_error(CV_INVALID_ARGUMENT, "the result's dim %d is too large", d);
        shape[d] = x->shape[d] + b + a;
    }
    CvIndexMap m;
    CvStatus s = cv_index_map_init(&m, x->rank, shape);
    if (s)
        return s;
    cv_index_map_strides(x, src_stride);
    if (m.total)
        for (int d = 0; d < x->rank; d++) {
            int64_t n = x->shape[d], b = attrs->ints[PAD_PADDINGS + 2 * d];
            m.stride[d] = src_stride[d];
            for (int64_t o = 0; o < shape[d]; o++) {
                int64_t i = o - b;
                if (mode == 0)
                    i = i >= 0 && i < n ? i : -1;
                else if (mode == 1)
                    i = i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
                else
                    i = i < 0 ? -i - 1 : i >= n ? 2 * n - 1 - i : i;
                m.map[d][o] = i;
            }
        }
    s = cv_index_map_copy(&m, x, mode == 0 ? &in[1] : NULL, &out[0]);
    cv_index_map_free(&m);
    return s;
}

const CvOp cv_op_pad = {.name = "Pad", .min_inputs = 1, .max_inputs = 2, .run = pad_run,
    .int_attrs = pad_int_attrs};
