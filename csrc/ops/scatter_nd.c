/* ScatterNd(tensor, indices, updates): tf.tensor_scatter_nd_update (and its
 * add, sub, max and min forms; tf.scatter_nd adds into zeros): a copy of
 * `tensor` with the slices at `indices` replaced by, or combined with,
 * `updates`. ints[0] mode: 0 replace, 1 add, 2 subtract, 3 max, 4 min.
 * indices [..., K] (int32/int64) index tensor's first K dims; updates has
 * shape indices.shape[:-1] + tensor.shape[K:]. Repeated indices: the last
 * update wins, or all are combined in order. An index outside tensor's
 * shape is InvalidArgument naming it. Numbers and bool (combining: numbers;
 * integers wrap as TensorFlow's, max/min of NaN as std::max/min: the first
 * operand unless the comparison holds). */
#include <string.h>

#include "ops/numeric.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs). */
enum { SCATTER_MODE, SCATTER_NUM_INTS };
static const char *const scatter_int_attrs[] = {"mode", NULL};
CV_ATTR_NAMES_MATCH(scatter_int_attrs, SCATTER_NUM_INTS);

enum { MODE_REPLACE, MODE_ADD, MODE_SUB, MODE_MAX, MODE_MIN, NUM_MODES };

/* d = d <mode> u elementwise over one slice; W: the type integers wrap in
 * (unsigned for add and subtract), T: the values' type for max and min. */
#define COMBINE_RUN(T, W)                                                                              do {                                                                                                   T *d = (T *)dst;                                                                                   const T *u = (const T *)src;                                                                       for (int64_t e = 0; e < slice; e++) {                                                                  switch (mode) {                                                                                    case MODE_ADD: d[e] = (T)(W)((W)d[e] + (W)u[e]); break;                                            case MODE_SUB: d[e] = (T)(W)((W)d[e] - (W)u[e]); break;                                            case MODE_MAX: d[e] = d[e] < u[e] ? u[e] : d[e]; break;                                            default: d[e] = u[e] < d[e] ? u[e] : d[e]; break;                                                  }                                                                                              }                                                                                              } while (0)

static void combine_slice(CvDtype dtype, int mode, void *dst, const void *src, int64_t slice)
{
    switch (dtype) {
    case CV_INT8: COMBINE_RUN(int8_t, uint8_t); break;
    case CV_UINT8: COMBINE_RUN(uint8_t, uint8_t); break;
    case CV_INT16: COMBINE_RUN(int16_t, uint16_t); break;
    case CV_UINT16: COMBINE_RUN(uint16_t, uint16_t); break;
    case CV_INT32: COMBINE_RUN(int32_t, uint32_t); break;
    case CV_UINT32: COMBINE_RUN(uint32_t, uint32_t); break;
    case CV_INT64: COMBINE_RUN(int64_t, uint64_t); break;
    case CV_UINT64: COMBINE_RUN(uint64_t, uint64_t); break;
    case CV_FLOAT32: COMBINE_RUN(float, float); break;
    case CV_FLOAT64: COMBINE_RUN(double, double); break;
    case CV_FLOAT16: {
        cv_half *d = (cv_half *)dst;
        const cv_half *u = (const cv_half *)src;
        for (int64_t e = 0; e < slice; e++) {
            float a = cv_half_to_float(d[e]), b = cv_half_to_float(u[e]);
            switch (mode) {
            case MODE_ADD: d[e] = cv_float_to_half(a + b); break;
            case MODE_SUB: d[e] = cv_float_to_half(a - b); break;
            case MODE_MAX: d[e] = a < b ? u[e] : d[e]; break;
            default: d[e] = b < a ? u[e] : d[e]; break;
            }
        }
        break;
    }
    default: break;
    }
}

static CvStatus scatter_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                            CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *t = &in[0], *idx = &in[1], *upd = &in[2];
    if (attrs->num_ints != SCATTER_NUM_INTS)
        return cv_error(CV_INVALID_ARGUMENT, "ScatterNd: malformed attributes");
    int mode = (int)attrs->ints[SCATTER_MODE];
    if (mode < 0 || mode >= NUM_MODES)
        return cv_error(CV_INVALID_ARGUMENT, "ScatterNd: unknown mode %d", mode);
    bool combine = mode != MODE_REPLACE;
    if (t->dtype == CV_STRING || t->dtype != upd->dtype || (combine && t->dtype == CV_BOOL))
        return cv_error(CV_INVALID_ARGUMENT, "ScatterNd: tensor and updates must share a "
                        "numeric dtype, got %s and %s", cv_dtype_name(t->dtype),
                        cv_dtype_name(upd->dtype));
    if ((idx->dtype != CV_INT32 && idx->dtype != CV_INT64) || idx->rank < 1)
        return cv_error(CV_INVALID_ARGUMENT, "indices must be int32 or int64 of rank >= 1");
    int k = (int)idx->shape[idx->rank - 1];
    if (k > t->rank)
        return cv_error(CV_INVALID_ARGUMENT, "Index innermost dimension length must be <= "
                        "tensor rank; saw: %d vs. %d", k, t->rank);
    int64_t count = 1; /* index rows: the product of indices' leading dims */
    for (int d = 0; d + 1 < idx->rank; d++)
        count *= idx->shape[d];
    int64_t slice = 1;
    for (int d = k; d < t->rank; d++)
        slice *= t->shape[d];
    bool shapes_ok = upd->rank == idx->rank - 1 + t->rank - k;
    for (int d = 0; shapes_ok && d < idx->rank - 1; d++)
        shapes_ok = upd->shape[d] == idx->shape[d];
    for (int d = 0; shapes_ok && d < t->rank - k; d++)
        shapes_ok = upd->shape[idx->rank - 1 + d] == t->shape[k + d];
    if (!shapes_ok) {
        char a[128], b[128], c[128];
        return cv_error(CV_INVALID_ARGUMENT, "updates shape %s does not fit indices %s and "
                        "tensor %s", cv_shape_str(upd->shape, upd->rank, a, sizeof(a)),
                        cv_shape_str(idx->shape, idx->rank, b, sizeof(b)),
                        cv_shape_str(t->shape, t->rank, c, sizeof(c)));
    }
    CvStatus s = cv_tensor_alloc(&out[0], t->dtype, t->rank, t->shape, 0, NULL);
    if (s)
        return s;
    size_t item = cv_dtype_size(t->dtype);
    memcpy(out[0].data, t->data, (size_t)cv_tensor_num_elements(t) * item);
    for (int64_t i = 0; i < count; i++) {
        int64_t flat = 0;
        for (int j = 0; j < k; j++) {
            int64_t v = idx->dtype == CV_INT32 ? ((const int32_t *)idx->data)[i * k + j]
                                               : ((const int64_t *)idx->data)[i * k + j];
            if (v < 0 || v >= t->shape[j]) {
                char shape[128];
                cv_tensor_clear(&out[0]);
                return cv_error(CV_INVALID_ARGUMENT, "indices[%lld] = %lld (dim %d) does not "
                                "index into shape %s", (long long)i, (long long)v, j,
                                cv_shape_str(t->shape, t->rank, shape, sizeof(shape)));
            }
            flat = flat * t->shape[j] + v;
        }
        char *dst = (char *)out[0].data + (size_t)(flat * slice) * item;
        const char *src = (const char *)upd->data + (size_t)(i * slice) * item;
        if (combine)
            combine_slice(t->dtype, mode, dst, src, slice);
        else
            memcpy(dst, src, (size_t)slice * item);
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_scatter_nd = {.name = "ScatterNd", .min_inputs = 3, .max_inputs = 3,
                               .run = scatter_run, .int_attrs = scatter_int_attrs};
