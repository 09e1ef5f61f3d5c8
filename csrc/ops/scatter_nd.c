/* ScatterNd(tensor, indices, updates): tf.tensor_scatter_nd_update (and,
 * adding, tf.scatter_nd into zeros): a copy of `tensor` with the slices at
 * `indices` replaced by (or, with ints[0] add, increased by) `updates`.
 * indices [..., K] (int32/int64) index tensor's first K dims; updates has
 * shape indices.shape[:-1] + tensor.shape[K:]. Repeated indices: the last
 * update wins, or all are added. An index outside tensor's shape is
 * InvalidArgument naming it. Numbers and bool (add: numbers). */
#include <string.h>

#include "ops/numeric.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs). */
enum { SCATTER_ADD, SCATTER_NUM_INTS };
static const char *const scatter_int_attrs[] = {"add", NULL};
CV_ATTR_NAMES_MATCH(scatter_int_attrs, SCATTER_NUM_INTS);

#define ADD_RUN(T)                                                                                 \
    do {                                                                                           \
        T *d = (T *)dst;                                                                           \
        const T *u = (const T *)src;                                                               \
        for (int64_t e = 0; e < slice; e++)                                                        \
            d[e] = (T)(d[e] + u[e]);                                                               \
    } while (0)

static void add_slice(CvDtype dtype, void *dst, const void *src, int64_t slice)
{
    switch (dtype) {
    case CV_INT8: ADD_RUN(uint8_t); break; /* integers wrap: added unsigned */
    case CV_UINT8: ADD_RUN(uint8_t); break;
    case CV_INT16: ADD_RUN(uint16_t); break;
    case CV_UINT16: ADD_RUN(uint16_t); break;
    case CV_INT32: ADD_RUN(uint32_t); break;
    case CV_UINT32: ADD_RUN(uint32_t); break;
    case CV_INT64: ADD_RUN(uint64_t); break;
    case CV_UINT64: ADD_RUN(uint64_t); break;
    case CV_FLOAT32: ADD_RUN(float); break;
    case CV_FLOAT64: ADD_RUN(double); break;
    case CV_FLOAT16: {
        cv_half *d = (cv_half *)dst;
        const cv_half *u = (const cv_half *)src;
        for (int64_t e = 0; e < slice; e++)
            d[e] = cv_float_to_half(cv_half_to_float(d[e]) + cv_half_to_float(u[e]));
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
    bool add = attrs->ints[SCATTER_ADD] != 0;
    if (t->dtype == CV_STRING || t->dtype != upd->dtype || (add && t->dtype == CV_BOOL))
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
        if (add)
            add_slice(t->dtype, dst, src, slice);
        else
            memcpy(dst, src, (size_t)slice * item);
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_scatter_nd = {.name = "ScatterNd", .min_inputs = 3, .max_inputs = 3,
                               .run = scatter_run, .int_attrs = scatter_int_attrs};
