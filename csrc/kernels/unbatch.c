/* unbatch: split every input element along its first dimension; row r of
 * each component is output element r. Rows share the input's memory (no
 * copy). An input whose components are scalars or disagree on the first
 * dimension raises InvalidArgumentError at that input element and the
 * unbatch goes on with the next one, as tf.data's UnbatchDataset does.
 */
#include <stdlib.h>

#include "kernels/common/batch_rows.h"
#include "kernels/kernels.h"

typedef struct {
    CvUnaryIterator base;
    CvElement batch; /* the input element being split */
    int64_t rows, row;
} UnbatchIterator;

static void unbatch_free(CvDataset *ds)
{
    free(ds->params);
}

/* The statically known batch size (-1: unknown) gives the count, as in tf.data. */
static int64_t unbatch_cardinality(const CvDataset *ds)
{
    int64_t n = cv_dataset_cardinality(ds->inputs[0]), batch = *(const int64_t *)ds->params;
    if (n == CV_INFINITE_CARDINALITY || n == CV_UNKNOWN_CARDINALITY)
        return n;
    if (batch <= 0)
        return CV_UNKNOWN_CARDINALITY;
    return n > INT64_MAX / batch ? CV_UNKNOWN_CARDINALITY : n * batch;
}

static CvStatus unbatch_make_iterator(const CvDataset *ds, CvIterator **out)
{
    return cv_unary_iterator_new(ds, sizeof(UnbatchIterator), out);
}

static CvStatus check_batch(const CvElement *e)
{
    for (uint32_t c = 0; c < e->n; c++) {
        if (e->t[c].rank == 0)
            return cv_error(CV_INVALID_ARGUMENT, "unbatch: Input element must have a non-scalar "
                            "value in each component (component %u is a scalar).", c);
        if (e->t[c].shape[0] != e->t[0].shape[0])
            return cv_error(CV_INVALID_ARGUMENT,
                            "unbatch: Input element must have the same batch size in each "
                            "component. Component 0 had size %lld but component %u had size %lld.",
                            (long long)e->t[0].shape[0], c, (long long)e->t[c].shape[0]);
    }
    return CV_STATUS_OK;
}

static CvStatus unbatch_next(CvIterator *base, CvElement *out, bool *end)
{
    UnbatchIterator *it = (UnbatchIterator *)base;
    while (it->row >= it->rows) {
        cv_element_clear(&it->batch);
        it->row = it->rows = 0;
        CvStatus s = cv_iterator_next(it->base.input, &it->batch, end);
        if (!s && !*end)
            s = check_batch(&it->batch);
        if (s || *end) {
            cv_element_clear(&it->batch);
            return s;
        }
        it->rows = it->batch.n ? it->batch.t[0].shape[0] : 0;
    }
    *end = false;
    CvStatus s = cv_element_init(out, it->batch.n);
    if (s)
        return s;
    for (uint32_t c = 0; c < it->batch.n; c++)
        cv_tensor_slice(&out->t[c], &it->batch.t[c], it->row);
    it->row++;
    return CV_STATUS_OK;
}

/* The input has moved past the batch being split, and re-reading it
 * would need the input's position before it (saved on every pull): so the
 * state keeps the rows of the batch not yet returned, by value. Between
 * batches it is the input's position alone. */
static CvStatus unbatch_save(CvIterator *base, CvStateWriter *w)
{
    UnbatchIterator *it = (UnbatchIterator *)base;
    bool splitting = it->row < it->rows;
    cv_state_put_i64(w, splitting);
    if (splitting) {
        CvElement left = {0};
        CvStatus s = cv_element_init(&left, it->batch.n);
        if (s)
            return s;
        for (uint32_t c = 0; c < it->batch.n; c++)
            cv_tensor_rows(&left.t[c], &it->batch.t[c], it->row, it->rows - it->row);
        cv_state_put_element(w, &left);
        cv_element_clear(&left);
    }
    return cv_iterator_save(it->base.input, w);
}

static CvStatus unbatch_restore(CvIterator *base, CvStateReader *r)
{
    UnbatchIterator *it = (UnbatchIterator *)base;
    bool splitting = false;
    CvStatus s = cv_state_get_bool(r, &splitting);
    if (!s && splitting)
        s = cv_state_get_element(r, &it->batch);
    if (!s && splitting) {
        s = check_batch(&it->batch);
        if (s) {
            cv_status_free(s);
            s = cv_state_corrupt("unbatch: the saved batch is not a batch");
        } else if (it->batch.n == 0 || it->batch.t[0].shape[0] == 0) {
            s = cv_state_corrupt("unbatch: the saved batch has no rows left");
        } else {
            it->rows = it->batch.t[0].shape[0];
            it->row = 0;
        }
    }
    if (!s)
        s = cv_iterator_restore(it->base.input, r);
    if (s) {
        cv_element_clear(&it->batch);
        it->row = it->rows = 0;
    }
    return s;
}

static void unbatch_destroy(CvIterator *base)
{
    cv_element_clear(&((UnbatchIterator *)base)->batch);
    cv_unary_iterator_destroy(base);
}

const CvKernel cv_kernel_unbatch = {
    .name = "Unbatch",
    .make_iterator = unbatch_make_iterator,
    .cardinality = unbatch_cardinality,
    .free_dataset = unbatch_free,
    .next = unbatch_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = unbatch_destroy,
    .save = unbatch_save,
    .restore = unbatch_restore,
};

CvStatus cv_unbatch_dataset(CvDataset *input, int64_t static_batch_size, CvDataset **out)
{
    int64_t *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = static_batch_size;
    return cv_dataset_new(&cv_kernel_unbatch, &input, 1, p, false, out);
}
