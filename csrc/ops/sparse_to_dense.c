/* SparseToDense(indices, values, dense_shape, default_value): the dense
 * tensor a sparse one stands for (tf.sparse.to_dense).
 *
 * indices: int64 [N, R]; values: [N] of any dtype; dense_shape: int64 [R];
 * default_value: a scalar of values' dtype. Output: dense_shape, every
 * position default_value except the N indexed ones. As TensorFlow with
 * validate_indices: an index out of bounds, repeated or out of
 * lexicographic order is InvalidArgument naming it. Strings are copied.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"

static const char *index_str(const int64_t *idx, int rank, char *buf, size_t size)
{
    return cv_shape_str(idx, rank, buf, size);
}

/* Flat position of each index into pos[] (checked), or an error. */
static CvStatus positions(const CvTensor *indices, int rank, const int64_t *shape, int64_t n,
                          int64_t *pos)
{
    const int64_t *idx = (const int64_t *)indices->data;
    char a[160], b[160];
    for (int64_t i = 0; i < n; i++) {
        const int64_t *row = idx + i * rank;
        int64_t flat = 0;
        for (int d = 0; d < rank; d++) {
            if (row[d] < 0 || row[d] >= shape[d])
                return cv_error(CV_INVALID_ARGUMENT,
                                "indices[%lld] = %s is out of bounds: need 0 <= index < %s",
                                (long long)i, index_str(row, rank, a, sizeof(a)),
                                index_str(shape, rank, b, sizeof(b)));
            flat = flat * shape[d] + row[d];
        }
        if (i > 0 && flat <= pos[i - 1])
            return cv_error(CV_INVALID_ARGUMENT, "indices[%lld] = %s is %s", (long long)i,
                            index_str(row, rank, a, sizeof(a)),
                            flat == pos[i - 1] ? "repeated" : "out of order");
        pos[i] = flat;
    }
    return CV_STATUS_OK;
}

static CvStatus sparse_to_dense_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                    CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)attrs;
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *indices = &in[0], *values = &in[1], *dense_shape = &in[2], *fill = &in[3];
    if (indices->dtype != CV_INT64 || dense_shape->dtype != CV_INT64 || dense_shape->rank != 1 ||
        values->rank != 1 || fill->rank != 0 || fill->dtype != values->dtype)
        return cv_error(CV_INVALID_ARGUMENT, "SparseToDense: indices and dense_shape must be "
                        "int64, values a vector and default_value a scalar of its dtype");
    int rank = (int)dense_shape->shape[0];
    int64_t n = values->shape[0];
    if (rank > CV_MAX_RANK)
        return cv_error(CV_INVALID_ARGUMENT, "SparseToDense: rank %d is over %d", rank,
                        CV_MAX_RANK);
    if (indices->rank != 2 || indices->shape[0] != n || indices->shape[1] != rank)
        return cv_error(CV_INVALID_ARGUMENT, "SparseToDense: indices must be [%lld, %d], values "
                        "[N] and dense_shape [R]", (long long)n, rank);
    int64_t shape[CV_MAX_RANK], total = 1;
    memcpy(shape, dense_shape->data, sizeof(int64_t) * (size_t)rank);
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 0 || (shape[d] && total > INT64_MAX / 16 / shape[d]))
            return cv_error(CV_INVALID_ARGUMENT, "SparseToDense: invalid dense_shape");
        total *= shape[d];
    }
    int64_t *pos = malloc(n > 0 ? (size_t)n * sizeof(int64_t) : 1);
    if (!pos)
        return cv_error_nomem();
    CvStatus s = positions(indices, rank, shape, n, pos);
    if (s)
        goto done;
    if (values->dtype != CV_STRING) {
        size_t esize = cv_dtype_size(values->dtype);
        if ((s = cv_tensor_alloc(&out[0], values->dtype, rank, shape, 0, NULL)))
            goto done;
        for (int64_t i = 0; i < total; i++)
            memcpy(out[0].data + (size_t)i * esize, fill->data, esize);
        for (int64_t i = 0; i < n; i++)
            memcpy(out[0].data + (size_t)pos[i] * esize, values->data + (size_t)i * esize, esize);
        goto done;
    }
    const CvStringRef *vref = (const CvStringRef *)values->data;
    const CvStringRef *fref = (const CvStringRef *)fill->data;
    size_t bytes = (size_t)fref->length; /* the default's bytes, stored once */
    for (int64_t i = 0; i < n; i++)
        bytes += (size_t)vref[i].length;
    char *blob = NULL;
    if ((s = cv_tensor_alloc(&out[0], CV_STRING, rank, shape, bytes, &blob)))
        goto done;
    CvStringRef *refs = (CvStringRef *)out[0].data;
    uint64_t at = (uint64_t)(blob - out[0].buf->data);
    memcpy(blob, cv_string_data(fill, fref), (size_t)fref->length);
    for (int64_t i = 0; i < total; i++)
        refs[i] = (CvStringRef){.offset = at, .length = fref->length};
    at += fref->length;
    for (int64_t i = 0; i < n; i++) {
        size_t len = (size_t)vref[i].length;
        if (len)
            memcpy(out[0].buf->data + at, cv_string_data(values, &vref[i]), len);
        refs[pos[i]] = (CvStringRef){.offset = at, .length = len};
        at += len;
    }
done:
    free(pos);
    return s;
}

const CvOp cv_op_sparse_to_dense = {.name = "SparseToDense", .min_inputs = 4, .max_inputs = 4,
                                    .run = sparse_to_dense_run};
