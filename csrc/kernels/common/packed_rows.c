/* Packing rows of elements into tensors (see packed_rows.h). */
#include "kernels/common/packed_rows.h"

#include <string.h>

uint32_t cv_rows_width(uint32_t ncomp, const bool *ragged)
{
    uint32_t width = ncomp;
    for (uint32_t c = 0; c < ncomp; c++)
        width += ragged[c];
    return width;
}

/* Allocate `out` with the given shape (whose element count is the rows'
 * total) and copy component c of every row into it, in row order. */
static CvStatus concat(CvElement *const *rows, int64_t n, uint32_t c, int rank,
                       const int64_t *shape, CvTensor *out)
{
    CvDtype dtype = rows[0]->t[c].dtype;
    size_t blob_bytes = 0;
    if (dtype == CV_STRING) {
        for (int64_t r = 0; r < n; r++) {
            const CvTensor *t = &rows[r]->t[c];
            const CvStringRef *refs = (const CvStringRef *)t->data;
            for (int64_t k = 0, m = cv_tensor_num_elements(t); k < m; k++)
                blob_bytes += refs[k].length;
        }
    }
    char *blob = NULL;
    CvStatus s = cv_tensor_alloc(out, dtype, rank, shape, blob_bytes, &blob);
    if (s)
        return s;
    if (dtype == CV_STRING) {
        CvStringRef *dst = (CvStringRef *)out->data;
        for (int64_t r = 0; r < n; r++) {
            const CvTensor *t = &rows[r]->t[c];
            const CvStringRef *refs = (const CvStringRef *)t->data;
            for (int64_t k = 0, m = cv_tensor_num_elements(t); k < m; k++, dst++) {
                memcpy(blob, cv_string_data(t, &refs[k]), refs[k].length);
                dst->offset = (uint64_t)(blob - out->buf->data);
                dst->length = refs[k].length;
                blob += refs[k].length;
            }
        }
        return CV_STATUS_OK;
    }
    char *dst = out->data;
    for (int64_t r = 0; r < n; r++) {
        size_t bytes = cv_tensor_nbytes(&rows[r]->t[c]);
        if (bytes)
            memcpy(dst, rows[r]->t[c].data, bytes);
        dst += bytes;
    }
    return CV_STATUS_OK;
}

static CvStatus pack_dense(CvElement *const *rows, int64_t n, uint32_t c, const char *stage,
                           CvTensor *out)
{
    char a[96], b[96];
    const CvTensor *first = &rows[0]->t[c];
    for (int64_t r = 1; r < n; r++) {
        const CvTensor *t = &rows[r]->t[c];
        if (!cv_tensor_same_shape(t, first))
            return cv_error(CV_INVALID_ARGUMENT,
                            "%s: component %u of the window's element %lld has shape %s, but its "
                            "first element has shape %s (its static shape said they agree)",
                            stage, c, (long long)r, cv_shape_str(t->shape, t->rank, a, sizeof(a)),
                            cv_shape_str(first->shape, first->rank, b, sizeof(b)));
    }
    if (first->rank + 1 > CV_MAX_RANK)
        return cv_error(CV_INVALID_ARGUMENT, "%s: a window of component %u would exceed rank %d",
                        stage, c, CV_MAX_RANK);
    int64_t shape[CV_MAX_RANK];
    shape[0] = n;
    memcpy(shape + 1, first->shape, (size_t)first->rank * sizeof(int64_t));
    return concat(rows, n, c, first->rank + 1, shape, out);
}

static CvStatus pack_ragged(CvElement *const *rows, int64_t n, uint32_t c, CvTensor *values,
                            CvTensor *shapes)
{
    int64_t total = 0;
    int max_rank = 0;
    for (int64_t r = 0; r < n; r++) {
        const CvTensor *t = &rows[r]->t[c];
        total += cv_tensor_num_elements(t);
        if (t->rank > max_rank)
            max_rank = t->rank;
    }
    CvStatus s = concat(rows, n, c, 1, &total, values);
    if (s)
        return s;
    int64_t shape[2] = {n, 1 + max_rank};
    if ((s = cv_tensor_alloc(shapes, CV_INT64, 2, shape, 0, NULL))) {
        cv_tensor_clear(values);
        return s;
    }
    int64_t *dims = (int64_t *)shapes->data;
    memset(dims, 0, (size_t)(n * (1 + max_rank)) * sizeof(int64_t));
    for (int64_t r = 0; r < n; r++, dims += 1 + max_rank) {
        const CvTensor *t = &rows[r]->t[c];
        dims[0] = t->rank;
        memcpy(dims + 1, t->shape, (size_t)t->rank * sizeof(int64_t));
    }
    return CV_STATUS_OK;
}

CvStatus cv_rows_pack(CvElement *const *rows, int64_t n, uint32_t ncomp, const bool *ragged,
                      const char *stage, CvElement *out)
{
    for (int64_t r = 0; r < n; r++) {
        if (rows[r]->n != ncomp)
            return cv_error(CV_INVALID_ARGUMENT, "%s: element %lld has %u components, expected %u",
                            stage, (long long)r, rows[r]->n, ncomp);
        for (uint32_t c = 0; c < ncomp; c++)
            if (rows[r]->t[c].dtype != rows[0]->t[c].dtype)
                return cv_error(CV_INVALID_ARGUMENT,
                                "%s: component %u of the window's element %lld is %s, but its "
                                "first element's is %s", stage, c, (long long)r,
                                cv_dtype_name(rows[r]->t[c].dtype),
                                cv_dtype_name(rows[0]->t[c].dtype));
    }
    CvStatus s = cv_element_init(out, cv_rows_width(ncomp, ragged));
    if (s)
        return s;
    uint32_t k = 0;
    for (uint32_t c = 0; c < ncomp && !s; c++) {
        if (ragged[c]) {
            s = pack_ragged(rows, n, c, &out->t[k], &out->t[k + 1]);
            k += 2;
        } else {
            s = pack_dense(rows, n, c, stage, &out->t[k]);
            k += 1;
        }
    }
    if (s)
        cv_element_clear(out);
    return s;
}
