/* SearchSorted(sorted_sequence, values): tf.searchsorted, for each value the
 * index where it would be inserted into its row of sorted_sequence (the
 * last axis; the leading dims of both agree, values may have another last
 * dim) to keep it sorted: before equal entries (left) or after them
 * (right). Binary search; the rows are assumed sorted, as TensorFlow does.
 * One numeric dtype for both; ints: [right, dtype of the indices (int32 or
 * int64)]. The output has values' shape. */
#include "ops/numeric.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs). */
enum { SEARCH_RIGHT, SEARCH_DTYPE, SEARCH_NUM_INTS };
static const char *const search_int_attrs[] = {"right", "dtype", NULL};
CV_ATTR_NAMES_MATCH(search_int_attrs, SEARCH_NUM_INTS);

static double number_at(const CvTensor *t, int64_t i)
{
    switch (t->dtype) {
    case CV_INT8: return ((const int8_t *)t->data)[i];
    case CV_INT16: return ((const int16_t *)t->data)[i];
    case CV_INT32: return ((const int32_t *)t->data)[i];
    case CV_UINT8: return ((const uint8_t *)t->data)[i];
    case CV_UINT16: return ((const uint16_t *)t->data)[i];
    case CV_UINT32: return ((const uint32_t *)t->data)[i];
    case CV_FLOAT16: return cv_half_to_float(((const cv_half *)t->data)[i]);
    case CV_FLOAT32: return ((const float *)t->data)[i];
    default: return ((const double *)t->data)[i];
    }
}

/* a < b (or a <= b) for entry i of s and entry j of v; 64-bit ints exactly. */
static bool before(const CvTensor *s, int64_t i, const CvTensor *v, int64_t j, bool or_equal)
{
    if (s->dtype == CV_INT64) {
        int64_t a = ((const int64_t *)s->data)[i], b = ((const int64_t *)v->data)[j];
        return or_equal ? a <= b : a < b;
    }
    if (s->dtype == CV_UINT64) {
        uint64_t a = ((const uint64_t *)s->data)[i], b = ((const uint64_t *)v->data)[j];
        return or_equal ? a <= b : a < b;
    }
    double a = number_at(s, i), b = number_at(v, j);
    return or_equal ? a <= b : a < b;
}

static CvStatus search_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *s = &in[0], *v = &in[1];
    if (attrs->num_ints != SEARCH_NUM_INTS)
        return cv_error(CV_INVALID_ARGUMENT, "SearchSorted: malformed attributes");
    CvDtype dtype = (CvDtype)attrs->ints[SEARCH_DTYPE];
    bool right = attrs->ints[SEARCH_RIGHT] != 0;
    if (s->dtype != v->dtype || s->dtype == CV_STRING || s->dtype == CV_BOOL ||
        (dtype != CV_INT32 && dtype != CV_INT64))
        return cv_error(CV_INVALID_ARGUMENT, "SearchSorted: sorted_sequence and values must "
                        "share a numeric dtype");
    if (s->rank < 1 || s->rank != v->rank)
        return cv_error(CV_INVALID_ARGUMENT, "sorted_sequence and values must have the same rank "
                        "(at least 1), got %d and %d", s->rank, v->rank);
    for (int d = 0; d + 1 < s->rank; d++)
        if (s->shape[d] != v->shape[d])
            return cv_error(CV_INVALID_ARGUMENT, "Leading dim_size of both tensors must match.");
    int64_t n = s->shape[s->rank - 1], m = v->shape[v->rank - 1];
    CvStatus st = cv_tensor_alloc(&out[0], dtype, v->rank, v->shape, 0, NULL);
    if (st)
        return st;
    if (dtype == CV_INT32 && n > INT32_MAX) {
        cv_tensor_clear(&out[0]);
        return cv_error(CV_INVALID_ARGUMENT, "sorted_sequence is too long for int32 indices");
    }
    int64_t rows = m ? cv_tensor_num_elements(v) / m : 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < m; j++) {
            int64_t lo = 0, hi = n, at = r * m + j;
            while (lo < hi) { /* first entry not before the value (right: not at or before) */
                int64_t mid = lo + (hi - lo) / 2;
                if (before(s, r * n + mid, v, at, right))
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (dtype == CV_INT32)
                ((int32_t *)out[0].data)[at] = (int32_t)lo;
            else
                ((int64_t *)out[0].data)[at] = lo;
        }
    return CV_STATUS_OK;
}

const CvOp cv_op_search_sorted = {.name = "SearchSorted", .min_inputs = 2, .max_inputs = 2,
                                  .run = search_run, .int_attrs = search_int_attrs};
