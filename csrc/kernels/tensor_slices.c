/* from_tensor_slices: element i is row i of every component. The
 * components are held by the dataset; elements share their memory. */
#include <stdlib.h>

#include "kernels/kernels.h"

typedef struct {
    CvElement components; /* owned; every component has rank >= 1 */
    int64_t count;
} SlicesParams;

typedef struct {
    CvIterator base;
    int64_t index;
} SlicesIterator;

static void slices_free(CvDataset *ds)
{
    SlicesParams *p = ds->params;
    cv_element_clear(&p->components);
    free(p);
}

static int64_t slices_cardinality(const CvDataset *ds)
{
    return ((SlicesParams *)ds->params)->count;
}

static CvStatus slices_make_iterator(const CvDataset *ds, CvIterator **out)
{
    SlicesIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    *out = &it->base;
    return CV_STATUS_OK;
}

static CvStatus slices_next(CvIterator *base, CvElement *out, bool *end)
{
    SlicesIterator *it = (SlicesIterator *)base;
    const SlicesParams *p = base->dataset->params;
    if (it->index >= p->count) {
        *end = true;
        return CV_STATUS_OK;
    }
    *end = false;
    CvStatus s = cv_element_init(out, p->components.n);
    if (s)
        return s;
    for (uint32_t i = 0; i < p->components.n; i++)
        cv_tensor_slice(&out->t[i], &p->components.t[i], it->index);
    it->index++;
    return CV_STATUS_OK;
}

/* The position is the next row: the rows themselves are the dataset's. */
static CvStatus slices_save(CvIterator *base, CvStateWriter *w)
{
    cv_state_put_i64(w, ((SlicesIterator *)base)->index);
    return CV_STATUS_OK;
}

static CvStatus slices_restore(CvIterator *base, CvStateReader *r)
{
    const SlicesParams *p = base->dataset->params;
    return cv_state_get_range(r, "tensor_slices row", 0, p->count, &((SlicesIterator *)base)->index);
}

static CvStatus slices_skip(CvIterator *base, int64_t n, int64_t *skipped)
{
    SlicesIterator *it = (SlicesIterator *)base;
    int64_t left = ((const SlicesParams *)base->dataset->params)->count - it->index;
    *skipped = n < left ? n : left;
    it->index += *skipped;
    return CV_STATUS_OK;
}

static void slices_destroy(CvIterator *it)
{
    cv_iterator_free(it);
}

const CvKernel cv_kernel_tensor_slices = {
    .name = "TensorSlice",
    .make_iterator = slices_make_iterator,
    .cardinality = slices_cardinality,
    .free_dataset = slices_free,
    .next = slices_next,
    .destroy = slices_destroy,
    .save = slices_save,
    .restore = slices_restore,
    .skip = slices_skip,
};

CvStatus cv_tensor_slices_dataset(CvElement *components, CvDataset **out)
{
    CvStatus s = CV_STATUS_OK;
    SlicesParams *p = NULL;
    if (components->n == 0) {
        s = cv_error(CV_INVALID_ARGUMENT, "from_tensor_slices needs at least one component");
        goto error;
    }
    for (uint32_t i = 0; i < components->n; i++) {
        const CvTensor *t = &components->t[i];
        if (t->rank < 1) {
            s = cv_error(CV_INVALID_ARGUMENT,
                         "Unbatching a tensor is only supported for rank >= 1 (component %u is a scalar)", i);
            goto error;
        }
        if (t->shape[0] != components->t[0].shape[0]) {
            s = cv_error(CV_INVALID_ARGUMENT,
                         "all components must have the same size in dimension 0: component 0 has %lld "
                         "and component %u has %lld", (long long)components->t[0].shape[0], i,
                         (long long)t->shape[0]);
            goto error;
        }
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        s = cv_error_nomem();
        goto error;
    }
    p->count = components->t[0].shape[0];
    cv_element_move(&p->components, components);
    return cv_dataset_new(&cv_kernel_tensor_slices, NULL, 0, p, false, out);
error:
    cv_element_clear(components);
    return s;
}
