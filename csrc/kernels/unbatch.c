/* unbatch: split every input element along its first dimension; row r of
 * each component is output element r. Rows share the input's memory (no
 * copy). An input whose components are scalars or disagree on the first
 * dimension raises InvalidArgumentError at that input element and the
 * unbatch goes on with the next one, as tf.data's UnbatchDataset does.
 */
#include <stdlib.h>

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
};

CvStatus cv_unbatch_dataset(CvDataset *input, int64_t static_batch_size, CvDataset **out)
{
    int64_t *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = static_batch_size;
    return cv_dataset_new(&cv_kernel_unbatch, &input, 1, p, false, out);
}
