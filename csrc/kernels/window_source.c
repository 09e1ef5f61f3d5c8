/* The elements of one packed window (kernels/common/packed_rows.h), as a
 * source: the inner datasets that window() and group_by_window() hand to the
 * user. Rows are views of the packed tensors (no copy). */
#include <stdlib.h>
#include <string.h>

#include "kernels/common/packed_rows.h"
#include "kernels/kernels.h"

typedef struct {
    CvElement packed; /* owned */
    uint32_t ncomp;
    int64_t n;
    bool *ragged;      /* [ncomp] */
    uint32_t *first;   /* [ncomp]: index of component c's first tensor in packed */
    int64_t **offsets; /* [ncomp]: ragged: n + 1 value offsets of the rows; else NULL */
} WindowSourceParams;

typedef struct {
    CvIterator base;
    int64_t row;
} WindowSourceIterator;

static void params_free(WindowSourceParams *p)
{
    cv_element_clear(&p->packed);
    if (p->offsets)
        for (uint32_t c = 0; c < p->ncomp; c++)
            free(p->offsets[c]);
    free(p->offsets);
    free(p->first);
    free(p->ragged);
    free(p);
}

static void window_source_free(CvDataset *ds)
{
    params_free(ds->params);
}

static int64_t window_source_cardinality(const CvDataset *ds)
{
    return ((const WindowSourceParams *)ds->params)->n;
}

static CvStatus window_source_make_iterator(const CvDataset *ds, CvIterator **out)
{
    WindowSourceIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    *out = &it->base;
    return CV_STATUS_OK;
}

static CvStatus window_source_next(CvIterator *base, CvElement *out, bool *end)
{
    WindowSourceIterator *it = (WindowSourceIterator *)base;
    const WindowSourceParams *p = base->dataset->params;
    if (it->row >= p->n) {
        *end = true;
        return CV_STATUS_OK;
    }
    CvStatus s = cv_element_init(out, p->ncomp);
    if (s)
        return s;
    int64_t r = it->row++;
    for (uint32_t c = 0; c < p->ncomp; c++) {
        const CvTensor *src = &p->packed.t[p->first[c]];
        if (!p->ragged[c]) {
            cv_tensor_slice(&out->t[c], src, r);
            continue;
        }
        const int64_t *dims = (const int64_t *)p->packed.t[p->first[c] + 1].data;
        int64_t width = p->packed.t[p->first[c] + 1].shape[1];
        CvTensor *t = &out->t[c];
        t->dtype = src->dtype;
        t->rank = (int)dims[r * width];
        memcpy(t->shape, dims + r * width + 1, (size_t)t->rank * sizeof(int64_t));
        t->data = src->data + (size_t)p->offsets[c][r] * cv_dtype_size(src->dtype);
        t->buf = cv_buffer_ref(src->buf);
    }
    *end = false;
    return CV_STATUS_OK;
}

/* The next row: the rows are the dataset's (the window's packed element). */
static CvStatus window_source_save(CvIterator *base, CvStateWriter *w)
{
    cv_state_put_i64(w, ((WindowSourceIterator *)base)->row);
    return CV_STATUS_OK;
}

static CvStatus window_source_restore(CvIterator *base, CvStateReader *r)
{
    const WindowSourceParams *p = base->dataset->params;
    return cv_state_get_range(r, "window row", 0, p->n, &((WindowSourceIterator *)base)->row);
}

static CvStatus window_source_skip(CvIterator *base, int64_t n, int64_t *skipped)
{
    WindowSourceIterator *it = (WindowSourceIterator *)base;
    int64_t left = ((const WindowSourceParams *)base->dataset->params)->n - it->row;
    *skipped = n < left ? n : left;
    it->row += *skipped;
    return CV_STATUS_OK;
}

static void window_source_destroy(CvIterator *base)
{
    cv_iterator_free(base);
}

const CvKernel cv_kernel_window_source = {
    .name = "WindowElements",
    .make_iterator = window_source_make_iterator,
    .cardinality = window_source_cardinality,
    .free_dataset = window_source_free,
    .next = window_source_next,
    .cancel = NULL,
    .destroy = window_source_destroy,
    .save = window_source_save,
    .restore = window_source_restore,
    .skip = window_source_skip,
};

/* Check a ragged component's (values, shapes) pair and compute its row
 * offsets. */
static CvStatus ragged_offsets(const CvTensor *values, const CvTensor *shapes, int64_t n,
                               int64_t **out)
{
    if (values->rank != 1 || shapes->dtype != CV_INT64 || shapes->rank != 2 ||
        shapes->shape[0] != n || shapes->shape[1] < 1 || shapes->shape[1] > 1 + CV_MAX_RANK)
        return cv_error(CV_INVALID_ARGUMENT, "window elements: malformed ragged component");
    int64_t width = shapes->shape[1];
    int64_t *offsets = malloc((size_t)(n + 1) * sizeof(int64_t));
    if (!offsets)
        return cv_error_nomem();
    const int64_t *dims = (const int64_t *)shapes->data;
    offsets[0] = 0;
    for (int64_t r = 0; r < n; r++, dims += width) {
        int64_t count = 1;
        bool ok = dims[0] >= 0 && dims[0] < width;
        for (int64_t d = 1; ok && d <= dims[0]; d++) {
            ok = dims[d] >= 0 && (dims[d] == 0 || count <= values->shape[0] / dims[d]);
            count *= ok ? dims[d] : 1;
        }
        if (!ok || count > values->shape[0] - offsets[r]) {
            free(offsets);
            return cv_error(CV_INVALID_ARGUMENT, "window elements: row %lld's shape does not fit "
                            "the values", (long long)r);
        }
        offsets[r + 1] = offsets[r] + count;
    }
    *out = offsets;
    return CV_STATUS_OK;
}

CvStatus cv_window_source_dataset(CvElement *packed, const bool *ragged, uint32_t ncomp,
                                  CvDataset **out)
{
    CvStatus s = CV_STATUS_OK;
    WindowSourceParams *p = calloc(1, sizeof(*p));
    if (!p) {
        cv_element_clear(packed);
        return cv_error_nomem();
    }
    cv_element_move(&p->packed, packed);
    p->ncomp = ncomp;
    p->ragged = malloc((ncomp ? ncomp : 1) * sizeof(bool));
    p->first = malloc((ncomp ? ncomp : 1) * sizeof(uint32_t));
    p->offsets = calloc(ncomp ? ncomp : 1, sizeof(int64_t *));
    if (!p->ragged || !p->first || !p->offsets) {
        s = cv_error_nomem();
        goto fail;
    }
    if (ncomp == 0 || p->packed.n != cv_rows_width(ncomp, ragged)) {
        s = cv_error(CV_INVALID_ARGUMENT, "window elements: expected %u tensors for %u components, "
                     "got %u", ncomp ? cv_rows_width(ncomp, ragged) : 0, ncomp, p->packed.n);
        goto fail;
    }
    memcpy(p->ragged, ragged, ncomp * sizeof(bool));
    uint32_t k = 0;
    for (uint32_t c = 0; c < ncomp; c++) {
        const CvTensor *t = &p->packed.t[k];
        p->first[c] = k;
        int64_t n = ragged[c] ? p->packed.t[k + 1].shape[0] : (t->rank >= 1 ? t->shape[0] : -1);
        if (c == 0)
            p->n = n;
        if (n < 0 || n != p->n || (ragged[c] && p->packed.t[k + 1].rank != 2)) {
            s = cv_error(CV_INVALID_ARGUMENT, "window elements: components disagree on the number "
                         "of elements");
            goto fail;
        }
        if (ragged[c] && (s = ragged_offsets(t, &p->packed.t[k + 1], n, &p->offsets[c])))
            goto fail;
        k += ragged[c] ? 2 : 1;
    }
    return cv_dataset_new(&cv_kernel_window_source, NULL, 0, p, false, out);
fail:
    params_free(p);
    return s;
}
