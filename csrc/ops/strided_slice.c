/* StridedSlice: x[...] inside a traced function (NumPy/TensorFlow basic
 * indexing: integers, slices with steps, newaxis; the Python layer expands
 * the Ellipsis against the static rank).
 *
 * ints: [n, then n items of 6: kind, begin, end, step, has_begin, has_end].
 * kind 0: an index (the dim goes away; negative counts from the end; out of
 * range is InvalidArgument), 1: a slice (Python's rules: bounds clamp),
 * 2: newaxis (a new dim of 1). Dims after the items are kept whole.
 * Any dtype: the strings picked from a string tensor are copied into the
 * output's own buffer. */
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { STRIDED_SLICE_NUM_DIMS, STRIDED_SLICE_DIMS, STRIDED_SLICE_NUM_INTS };
static const char *const strided_slice_int_attrs[] = {"num_dims", "dims[]", NULL};
CV_ATTR_NAMES_MATCH(strided_slice_int_attrs, STRIDED_SLICE_NUM_INTS);

typedef struct {
    int rank;
    int64_t shape[CV_MAX_RANK];
    int64_t start[CV_MAX_RANK]; /* per output dim: first input index (0 for newaxis) */
    int64_t step[CV_MAX_RANK];  /* per output dim: input elements per output step */
    int64_t base;               /* input offset (elements) of the fixed indices */
} Gather;

static void copy_dim(const Gather *g, int d, const char *src, char *dst, size_t esize,
                     char **out_pos)
{
    if (d == g->rank) {
        memcpy(*out_pos, src, esize);
        *out_pos += esize;
        return;
    }
    const char *p = src + (size_t)(g->start[d] * (int64_t)esize);
    if (d == g->rank - 1 && g->step[d] == 1) {
        size_t n = (size_t)g->shape[d] * esize;
        memcpy(*out_pos, p, n);
        *out_pos += n;
        return;
    }
    for (int64_t i = 0; i < g->shape[d]; i++)
        copy_dim(g, d + 1, p + (size_t)(i * g->step[d] * (int64_t)esize), dst, esize, out_pos);
}

/* Strings: gather the picked refs, then copy their bytes into the output's
 * blob (a ref's offset only means something in its own tensor's buffer). */
static CvStatus slice_strings(const CvTensor *x, const Gather *g, CvTensor *out)
{
    int64_t count = 1;
    for (int d = 0; d < g->rank; d++)
        count *= g->shape[d];
    const size_t esize = sizeof(CvStringRef);
    CvStringRef *picked = malloc(count > 0 ? (size_t)count * esize : 1);
    if (!picked)
        return cv_error_nomem();
    char *pos = (char *)picked;
    if (count > 0)
        copy_dim(g, 0, x->data + (size_t)g->base * esize, (char *)picked, esize, &pos);
    size_t bytes = 0;
    for (int64_t i = 0; i < count; i++)
        bytes += (size_t)picked[i].length;
    char *blob = NULL;
    CvStatus st = cv_tensor_alloc(&out[0], CV_STRING, g->rank, g->shape, bytes, &blob);
    if (!st) {
        CvStringRef *refs = (CvStringRef *)out[0].data;
        uint64_t at = (uint64_t)(blob - out[0].buf->data);
        for (int64_t i = 0; i < count; i++) {
            size_t len = (size_t)picked[i].length;
            if (len)
                memcpy(out[0].buf->data + at, cv_string_data(x, &picked[i]), len);
            refs[i].offset = at;
            refs[i].length = len;
            at += len;
        }
    }
    free(picked);
    return st;
}

static CvStatus slice_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    int64_t n = attrs->num_ints > STRIDED_SLICE_NUM_DIMS ? attrs->ints[STRIDED_SLICE_NUM_DIMS] : -1;
    if (n < 0 || attrs->num_ints != STRIDED_SLICE_DIMS + 6 * n)
        return cv_error(CV_INVALID_ARGUMENT, "StridedSlice: malformed attributes");
    int64_t stride[CV_MAX_RANK + 1]; /* elements per step of each input dim */
    stride[x->rank] = 1;
    if (x->rank > 0)
        stride[x->rank - 1] = 1;
    for (int d = x->rank - 2; d >= 0; d--)
        stride[d] = stride[d + 1] * x->shape[d + 1];
    Gather g = {0};
    int d = 0; /* input dim */
    for (int64_t k = 0; k < n; k++) {
        const int64_t *it = &attrs->ints[STRIDED_SLICE_DIMS + 6 * k];
        int64_t kind = it[0], begin = it[1], end = it[2], step = it[3];
        if (kind != 2 && d >= x->rank)
            return cv_error(CV_INVALID_ARGUMENT, "Index out of range using input dim %d", d);
        if (g.rank >= CV_MAX_RANK)
            return cv_error(CV_INVALID_ARGUMENT, "StridedSlice: result rank above %d", CV_MAX_RANK);
        if (kind == 2) {
            g.shape[g.rank] = 1;
            g.start[g.rank] = 0;
            g.step[g.rank] = 0;
            g.rank++;
            continue;
        }
        int64_t dim = x->shape[d];
        if (kind == 0) {
            int64_t i = begin < 0 ? begin + dim : begin;
            if (i < 0 || i >= dim)
                return cv_error(CV_INVALID_ARGUMENT,
                                "slice index %lld of dimension %d out of bounds.",
                                (long long)begin, d);
            g.base += i * stride[d];
            d++;
            continue;
        }
        if (step == 0)
            return cv_error(CV_INVALID_ARGUMENT, "slice step cannot be zero");
        /* Python's slice.indices(dim). */
        int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? dim : dim - 1;
        int64_t s = !it[4] ? (step > 0 ? lo : hi) : begin < 0 ? (begin + dim < lo ? lo : begin + dim)
                                                              : (begin > hi ? hi : begin);
        int64_t e = !it[5] ? (step > 0 ? hi : lo) : end < 0 ? (end + dim < lo ? lo : end + dim)
                                                          : (end > hi ? hi : end);
        int64_t len = step > 0 ? (e > s ? (e - s + step - 1) / step : 0)
                               : (s > e ? (s - e + (-step) - 1) / (-step) : 0);
        g.shape[g.rank] = len;
        g.start[g.rank] = len ? s * stride[d] : 0;
        g.step[g.rank] = step * stride[d];
        g.rank++;
        d++;
    }
    for (; d < x->rank; d++) { /* the rest, whole */
        if (g.rank >= CV_MAX_RANK)
            return cv_error(CV_INVALID_ARGUMENT, "StridedSlice: result rank above %d", CV_MAX_RANK);
        g.shape[g.rank] = x->shape[d];
        g.start[g.rank] = 0;
        g.step[g.rank] = stride[d];
        g.rank++;
    }
    /* Starts and steps are in elements; copy_dim scales them by the element
     * size and copies an inner run of step one with memcpy. */
    if (x->dtype == CV_STRING)
        return slice_strings(x, &g, out);
    CvStatus st = cv_tensor_alloc(&out[0], x->dtype, g.rank, g.shape, 0, NULL);
    if (st)
        return st;
    size_t esize = cv_dtype_size(x->dtype);
    char *pos = out[0].data;
    if (cv_tensor_num_elements(&out[0]) > 0) {
        copy_dim(&g, 0, x->data + (size_t)g.base * esize, out[0].data, esize, &pos);
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_strided_slice = {
    .name = "StridedSlice", .min_inputs = 1, .max_inputs = 1, .run = slice_run,
    .int_attrs = strided_slice_int_attrs};
