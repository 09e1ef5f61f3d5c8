/* Sort(x): tf.sort and tf.argsort along the last axis (the Python layer
 * moves another axis last): ints [descending, indices]. With indices the
 * output is int32 positions, else x's values in order. The order is stable
 * (equal values keep their positions, in both directions), as TensorFlow's
 * top_k-based sort gives for values without NaN; NaN sorts after every
 * number ascending and before them descending (TensorFlow's order with NaN
 * is unspecified). Numbers and bool; the merge buffer is freed here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/numeric.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs). */
enum { SORT_DESCENDING, SORT_INDICES, SORT_NUM_INTS };
static const char *const sort_int_attrs[] = {"descending", "indices", NULL};
CV_ATTR_NAMES_MATCH(sort_int_attrs, SORT_NUM_INTS);

typedef struct {
    const void *row;
    CvDtype dtype;
    bool descending;
} Row;

/* <0, 0, >0 as a sorts before, with, after b (NaN last ascending). */
static int compare(const Row *r, int64_t a, int64_t b)
{
#define CMP(T)                                                                                     \
    do {                                                                                           \
        T x = ((const T *)r->row)[a], y = ((const T *)r->row)[b];                                  \
        c = (x > y) - (x < y);                                                                     \
    } while (0)
    int c = 0;
    switch (r->dtype) {
    case CV_BOOL: CMP(bool); break;
    case CV_INT8: CMP(int8_t); break;
    case CV_INT16: CMP(int16_t); break;
    case CV_INT32: CMP(int32_t); break;
    case CV_INT64: CMP(int64_t); break;
    case CV_UINT8: CMP(uint8_t); break;
    case CV_UINT16: CMP(uint16_t); break;
    case CV_UINT32: CMP(uint32_t); break;
    case CV_UINT64: CMP(uint64_t); break;
    default: {
        double x, y;
        if (r->dtype == CV_FLOAT16) {
            x = cv_half_to_float(((const cv_half *)r->row)[a]);
            y = cv_half_to_float(((const cv_half *)r->row)[b]);
        } else if (r->dtype == CV_FLOAT32) {
            x = ((const float *)r->row)[a];
            y = ((const float *)r->row)[b];
        } else {
            x = ((const double *)r->row)[a];
            y = ((const double *)r->row)[b];
        }
        if (isnan(x) || isnan(y))
            return (isnan(x) - isnan(y)) * (r->descending ? -1 : 1);
        c = (x > y) - (x < y);
    }
    }
#undef CMP
    return r->descending ? -c : c;
}

/* Stable merge sort of idx[0..n) by compare, tmp of n entries. */
static void merge_sort(const Row *r, int64_t *idx, int64_t *tmp, int64_t n)
{
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = compare(r, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof(*idx));
    }
}

static CvStatus sort_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                         int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    CvStatus s = CV_STATUS_OK;
    int64_t *idx = NULL, *tmp = NULL;
    if (attrs->num_ints != SORT_NUM_INTS)
        return cv_error(CV_INVALID_ARGUMENT, "Sort: malformed attributes");
    bool indices = attrs->ints[SORT_INDICES] != 0;
    if (x->rank < 1)
        return cv_error(CV_INVALID_ARGUMENT, "input must be at least rank 1, got a scalar");
    if (x->dtype == CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "Sort: string tensors cannot be sorted");
    size_t item = cv_dtype_size(x->dtype);
    int64_t n = x->shape[x->rank - 1], rows = n ? cv_tensor_num_elements(x) / n : 0;
    if ((s = cv_tensor_alloc(&out[0], indices ? CV_INT32 : x->dtype, x->rank, x->shape, 0, NULL)))
        return s;
    if (rows == 0 || n == 0)
        return CV_STATUS_OK;
    idx = malloc((size_t)n * sizeof(*idx));
    tmp = malloc((size_t)n * sizeof(*tmp));
    if (!idx || !tmp) {
        s = cv_error(CV_RESOURCE_EXHAUSTED, "Sort: rows of %lld values", (long long)n);
        goto done;
    }
    for (int64_t r = 0; r < rows; r++) {
        const char *row = (const char *)x->data + (size_t)(r * n) * item;
        Row spec = {row, x->dtype, attrs->ints[SORT_DESCENDING] != 0};
        for (int64_t i = 0; i < n; i++)
            idx[i] = i;
        merge_sort(&spec, idx, tmp, n);
        for (int64_t i = 0; i < n; i++) {
            if (indices)
                ((int32_t *)out[0].data)[r * n + i] = (int32_t)idx[i];
            else
                memcpy((char *)out[0].data + (size_t)(r * n + i) * item, row + (size_t)idx[i] * item,
                       item);
        }
    }
done:
    free(idx);
    free(tmp);
    if (s)
        cv_tensor_clear(&out[0]);
    return s;
}

const CvOp cv_op_sort = {.name = "Sort", .min_inputs = 1, .max_inputs = 1, .run = sort_run,
                         .int_attrs = sort_int_attrs};
