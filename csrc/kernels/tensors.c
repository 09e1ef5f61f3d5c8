/* from_tensors: one element, the whole structure. */
#include <stdlib.h>

#include "kernels/kernels.h"

typedef struct {
    CvIterator base;
    bool done;
} TensorsIterator;

static void tensors_free(CvDataset *ds)
{
    cv_element_clear(ds->params);
    free(ds->params);
}

static int64_t tensors_cardinality(const CvDataset *ds)
{
    (void)ds;
    return 1;
}

static CvStatus tensors_make_iterator(const CvDataset *ds, CvIterator **out)
{
    TensorsIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    *out = &it->base;
    return CV_STATUS_OK;
}

static CvStatus tensors_next(CvIterator *base, CvElement *out, bool *end)
{
    TensorsIterator *it = (TensorsIterator *)base;
    const CvElement *value = base->dataset->params;
    *end = it->done;
    if (it->done)
        return CV_STATUS_OK;
    CvStatus s = cv_element_init(out, value->n);
    if (s)
        return s;
    for (uint32_t i = 0; i < value->n; i++)
        cv_tensor_copy_ref(&out->t[i], &value->t[i]);
    it->done = true;
    return CV_STATUS_OK;
}

static CvStatus tensors_save(CvIterator *base, CvStateWriter *w)
{
    cv_state_put_i64(w, ((TensorsIterator *)base)->done);
    return CV_STATUS_OK;
}

static CvStatus tensors_restore(CvIterator *base, CvStateReader *r)
{
    return cv_state_get_bool(r, &((TensorsIterator *)base)->done);
}

static CvStatus tensors_skip(CvIterator *base, int64_t n, int64_t *skipped)
{
    TensorsIterator *it = (TensorsIterator *)base;
    *skipped = n > 0 && !it->done;
    if (n > 0)
        it->done = true;
    return CV_STATUS_OK;
}

static void tensors_destroy(CvIterator *it)
{
    cv_iterator_free(it);
}

const CvKernel cv_kernel_tensors = {
    .name = "Tensor",
    .make_iterator = tensors_make_iterator,
    .cardinality = tensors_cardinality,
    .free_dataset = tensors_free,
    .next = tensors_next,
    .destroy = tensors_destroy,
    .save = tensors_save,
    .restore = tensors_restore,
    .skip = tensors_skip,
};

CvStatus cv_tensors_dataset(CvElement *components, CvDataset **out)
{
    CvElement *value = malloc(sizeof(*value));
    if (!value) {
        cv_element_clear(components);
        return cv_error_nomem();
    }
    cv_element_move(value, components);
    return cv_dataset_new(&cv_kernel_tensors, NULL, 0, value, false, out);
}
