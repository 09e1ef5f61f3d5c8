/* padded_batch(batch_size, padded_shapes, padding_values, drop_remainder).
 *
 * Gathers rows as batch does (same helper, same error and remainder rules)
 * and stacks each component into a tensor of shape [rows] + padded shape:
 * a dimension given as -1 becomes the largest in the batch. Each row is
 * copied to the start of its block, the rest holds the padding value.
 * Sequential, as tf.data's PaddedBatchDataset. A row larger than a fixed
 * padded dimension is a DataLossError (tf.data's type); a row whose rank
 * differs from the padded shape an InvalidArgumentError.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/common/batch_rows.h"
#include "kernels/kernels.h"

typedef struct {
    int64_t batch_size;
    bool drop_remainder;
    CvElement shapes; /* per component: an int64 vector, -1 for "largest in the batch" */
    CvElement values; /* per component: the scalar padding value */
} PaddedBatchParams;

typedef struct {
    CvUnaryIterator base;
    CvRowGatherer rows;
    const CvBufferAllocator *out_alloc; /* numeric outputs' buffers: build_outputs_in */
} PaddedBatchIterator;

static void padded_batch_free(CvDataset *ds)
{
    PaddedBatchParams *p = ds->params;
    cv_element_clear(&p->shapes);
    cv_element_clear(&p->values);
    free(p);
}

static int64_t padded_batch_cardinality(const CvDataset *ds)
{
    const PaddedBatchParams *p = ds->params;
    return cv_batched_cardinality(cv_dataset_cardinality(ds->inputs[0]), p->batch_size,
                                  p->drop_remainder);
}

static CvStatus padded_batch_make_iterator(const CvDataset *ds, CvIterator **out)
{
    return cv_unary_iterator_new(ds, sizeof(PaddedBatchIterator), out);
}

/* Set every value of t to the scalar `pad`; a string pad's bytes go to *blob once. */
static void fill(CvTensor *t, const CvTensor *pad, char **blob)
{
    int64_t n = cv_tensor_num_elements(t);
    if (t->dtype == CV_STRING) {
        const CvStringRef *ref = (const CvStringRef *)pad->data;
        CvStringRef value = {(uint64_t)(*blob - t->buf->data), ref->length};
        memcpy(*blob, cv_string_data(pad, ref), ref->length);
        *blob += ref->length;
        for (int64_t k = 0; k < n; k++)
            ((CvStringRef *)t->data)[k] = value;
        return;
    }
    size_t item = cv_dtype_size(t->dtype), total = (size_t)n * item, done = item;
    static const char zeros[16];
    if (n == 0)
        return;
    if (memcmp(pad->data, zeros, item) == 0) {
        memset(t->data, 0, total);
        return;
    }
    memcpy(t->data, pad->data, item);
    for (; done < total; done *= 2) /* doubling copies of the filled prefix */
        memcpy(t->data + done, t->data, done < total - done ? done : total - done);
}

/* Copy `src` into row r of `dst` at the origin of the row's block, whose
 * dims are all >= src's. */
static void copy_padded(CvTensor *dst, int64_t r, const CvTensor *src, char **blob)
{
    int rank = src->rank;
    int64_t row_values = 1, n = cv_tensor_num_elements(src);
    for (int d = 0; d < rank; d++)
        row_values *= dst->shape[d + 1];
    if (memcmp(dst->shape + 1, src->shape, (size_t)rank * sizeof(int64_t)) == 0) {
        cv_copy_values(dst, r * row_values, src, 0, n, blob);
        return;
    }
    if (n == 0)
        return;
    /* Runs along the last dimension: one per index of the leading ones. */
    int64_t last = src->shape[rank - 1], lines = n / last, stride[CV_MAX_RANK];
    stride[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; d--)
        stride[d] = stride[d + 1] * dst->shape[d + 2];
    for (int64_t line = 0; line < lines; line++) {
        int64_t at = r * row_values, rest = line;
        for (int d = rank - 2; d >= 0; d--) {
            at += (rest % src->shape[d]) * stride[d];
            rest /= src->shape[d];
        }
        cv_copy_values(dst, at, src, line * last, last, blob);
    }
}

/* The shape [rows] + padded shape of component c, checking every row. */
static CvStatus batch_shape(const PaddedBatchParams *p, const CvElement *bundle, int64_t rows,
                            uint32_t c, int64_t *dims)
{
    uint32_t ncomp = p->shapes.n;
    const CvTensor *padded = &p->shapes.t[c], *pad = &p->values.t[c];
    int rank = (int)padded->shape[0];
    const int64_t *want = (const int64_t *)padded->data;
    if (rank + 1 > CV_MAX_RANK)
        return cv_error(CV_INVALID_ARGUMENT, "padded_batch: component %u would exceed rank %d", c,
                        CV_MAX_RANK);
    dims[0] = rows;
    for (int d = 0; d < rank; d++)
        dims[d + 1] = want[d] == -1 ? 0 : want[d];
    for (int64_t r = 0; r < rows; r++) {
        const CvTensor *t = &bundle->t[r * ncomp + c];
        if (t->rank != rank)
            return cv_error(CV_INVALID_ARGUMENT,
                            "All elements in a batch must have the same rank as the padded shape "
                            "for component %u: expected rank %d but got element with rank %d",
                            c, rank, t->rank);
        if (t->dtype != pad->dtype)
            return cv_error(CV_INVALID_ARGUMENT, "padded_batch: component %u of element %lld has "
                            "dtype %s, expected %s", c, (long long)r, cv_dtype_name(t->dtype),
                            cv_dtype_name(pad->dtype));
        for (int d = 0; d < rank; d++) {
            if (want[d] == -1 && t->shape[d] > dims[d + 1])
                dims[d + 1] = t->shape[d];
            else if (want[d] != -1 && t->shape[d] > want[d])
                return cv_error(CV_DATA_LOSS, "Attempted to pad to a smaller size than the input "
                                "element (component %u, dimension %d: %lld > %lld).", c, d,
                                (long long)t->shape[d], (long long)want[d]);
        }
    }
    return CV_STATUS_OK;
}

/* Pad and stack a bundle of `rows` rows into one element. Takes the bundle. */
static CvStatus pad_stack(const PaddedBatchParams *p, CvElement *bundle, int64_t rows,
                          CvElement *out, const CvBufferAllocator *a)
{
    uint32_t ncomp = p->shapes.n;
    CvStatus s = CV_STATUS_OK;
    if (bundle->n != rows * ncomp)
        s = cv_error(CV_INVALID_ARGUMENT,
                     "padded_batch: elements have %lld components, expected %u",
                     (long long)(bundle->n / rows), ncomp);
    if (!s)
        s = cv_element_init(out, ncomp);
    for (uint32_t c = 0; c < ncomp && !s; c++) {
        int64_t dims[CV_MAX_RANK];
        if ((s = batch_shape(p, bundle, rows, c, dims)))
            break;
        const CvTensor *pad = &p->values.t[c];
        size_t blob_bytes = pad->dtype == CV_STRING ? cv_string_bytes(pad) : 0;
        for (int64_t r = 0; r < rows; r++)
            blob_bytes += cv_string_bytes(&bundle->t[r * ncomp + c]);
        char *blob = NULL;
        CvTensor *t = &out->t[c];
        int rank = (int)p->shapes.t[c].shape[0] + 1;
        if ((s = pad->dtype == CV_STRING
                     ? cv_tensor_alloc(t, pad->dtype, rank, dims, blob_bytes, &blob)
                     : cv_tensor_alloc_from(t, pad->dtype, rank, dims, a)))
            break;
        fill(t, pad, &blob);
        for (int64_t r = 0; r < rows; r++)
            copy_padded(t, r, &bundle->t[r * ncomp + c], &blob);
    }
    if (s)
        cv_element_clear(out);
    cv_element_clear(bundle);
    return s;
}

static CvStatus padded_batch_next(CvIterator *base, CvElement *out, bool *end)
{
    PaddedBatchIterator *it = (PaddedBatchIterator *)base;
    const PaddedBatchParams *p = base->dataset->params;
    CvElement bundle = {0};
    int64_t rows = 0;
    CvStatus s = cv_gather_rows(&it->rows, it->base.input, p->batch_size, p->drop_remainder,
                                &bundle, &rows, end);
    if (s || *end)
        return s;
    return pad_stack(p, &bundle, rows, out, it->out_alloc);
}

/* Whether the input ended, the rows gathered for a batch by an
 * interrupted next() (by value: the input is past them; none otherwise),
 * then the input's position. */
static CvStatus padded_batch_save(CvIterator *base, CvStateWriter *w)
{
    PaddedBatchIterator *it = (PaddedBatchIterator *)base;
    cv_state_put_i64(w, it->rows.input_done);
    cv_state_put_i64(w, it->rows.partial_rows);
    if (it->rows.partial_rows > 0) {
        cv_state_put_i64(w, it->rows.ncomp);
        cv_state_put_element(w, &it->rows.partial);
    }
    return cv_iterator_save(it->base.input, w);
}

static CvStatus padded_batch_restore(CvIterator *base, CvStateReader *r)
{
    PaddedBatchIterator *it = (PaddedBatchIterator *)base;
    const PaddedBatchParams *p = base->dataset->params;
    CvRowGatherer *g = &it->rows;
    int64_t rows = 0, ncomp = 0;
    CvStatus s = cv_state_get_bool(r, &g->input_done);
    if (!s)
        s = cv_state_get_range(r, "padded_batch rows", 0, p->batch_size - 1, &rows);
    if (!s && rows > 0)
        s = cv_state_get_range(r, "padded_batch components", 0, 1 << 20, &ncomp);
    if (!s && rows > 0)
        s = cv_state_get_element(r, &g->partial);
    if (!s && rows > 0 && g->partial.n != (uint64_t)rows * (uint64_t)ncomp)
        s = cv_state_corrupt("padded_batch: the saved rows do not match their count");
    if (!s)
        s = cv_iterator_restore(it->base.input, r);
    if (s) {
        cv_row_gatherer_clear(g);
        return s;
    }
    g->partial_rows = rows;
    g->ncomp = (uint32_t)ncomp;
    return CV_STATUS_OK;
}

static void padded_batch_destroy(CvIterator *base)
{
    cv_row_gatherer_clear(&((PaddedBatchIterator *)base)->rows);
    cv_unary_iterator_destroy(base);
}

static bool padded_batch_build_outputs_in(CvIterator *base, const CvBufferAllocator *a)
{
    ((PaddedBatchIterator *)base)->out_alloc = a;
    return true;
}

const CvKernel cv_kernel_padded_batch = {
    .name = "PaddedBatch",
    .make_iterator = padded_batch_make_iterator,
    .cardinality = padded_batch_cardinality,
    .free_dataset = padded_batch_free,
    .next = padded_batch_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = padded_batch_destroy,
    .save = padded_batch_save,
    .restore = padded_batch_restore,
    .build_outputs_in = padded_batch_build_outputs_in,
};

CvStatus cv_padded_batch_dataset(CvDataset *input, int64_t batch_size, CvElement *padded_shapes,
                                 CvElement *padding_values, bool drop_remainder, CvDataset **out)
{
    CvStatus s = CV_STATUS_OK;
    PaddedBatchParams *p = calloc(1, sizeof(*p));
    if (!p) {
        cv_element_clear(padded_shapes);
        cv_element_clear(padding_values);
        return cv_error_nomem();
    }
    cv_element_move(&p->shapes, padded_shapes);
    cv_element_move(&p->values, padding_values);
    p->batch_size = batch_size;
    p->drop_remainder = drop_remainder;
    if (batch_size <= 0) {
        s = cv_error(CV_INVALID_ARGUMENT, "Batch size must be greater than zero, got %lld.",
                     (long long)batch_size);
        goto error;
    }
    if (p->shapes.n != p->values.n) {
        s = cv_error(CV_INVALID_ARGUMENT, "padded_batch: %u padded shapes for %u padding values",
                     p->shapes.n, p->values.n);
        goto error;
    }
    for (uint32_t c = 0; c < p->shapes.n; c++) {
        const CvTensor *shape = &p->shapes.t[c], *value = &p->values.t[c];
        if (shape->dtype != CV_INT64 || shape->rank != 1 || value->rank != 0) {
            s = cv_error(CV_INVALID_ARGUMENT, "padded_batch: component %u needs an int64 vector "
                         "shape and a scalar padding value", c);
            goto error;
        }
        for (int64_t d = 0; d < shape->shape[0]; d++) {
            if (((const int64_t *)shape->data)[d] < -1) {
                s = cv_error(CV_INVALID_ARGUMENT, "padded_batch: dimension %lld of padded shape "
                             "%u is negative", (long long)d, c);
                goto error;
            }
        }
    }
    return cv_dataset_new(&cv_kernel_padded_batch, &input, 1, p, false, out);
error:;
    CvDataset unused = {.params = p};
    padded_batch_free(&unused);
    return s;
}
