/* from_generator: elements come from a CvSource (the binding's wrapper
 * around a Python generator). Each iterator opens its own source state, so
 * every new iteration and every repeat epoch calls the generator again. */
#include <stdlib.h>

#include "kernels/kernels.h"

typedef struct {
    CvIterator base;
    void *state;
    bool opened;
    bool done;
} GeneratorIterator;

static void generator_free(CvDataset *ds)
{
    CvSource *src = ds->params;
    if (src->release)
        src->release(src->ctx);
    free(src);
}

static int generator_traverse(const CvDataset *ds, CvVisit visit, void *arg)
{
    return cv_source_traverse(ds->params, visit, arg);
}

static int64_t generator_cardinality(const CvDataset *ds)
{
    (void)ds;
    return CV_UNKNOWN_CARDINALITY;
}

static CvStatus generator_make_iterator(const CvDataset *ds, CvIterator **out)
{
    GeneratorIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    *out = &it->base;
    return CV_STATUS_OK;
}

static CvStatus generator_next(CvIterator *base, CvElement *out, bool *end)
{
    GeneratorIterator *it = (GeneratorIterator *)base;
    const CvSource *src = base->dataset->params;
    *end = false;
    if (it->done) {
        *end = true;
        return CV_STATUS_OK;
    }
    if (!it->opened) {
        CvStatus s = src->open(src->ctx, &it->state);
        if (s)
            return s;
        it->opened = true;
    }
    CvStatus s = src->next(src->ctx, it->state, out, end);
    if (!s && *end) {
        it->done = true; /* sticky, and let go of the generator now */
        src->close(src->ctx, it->state);
        it->state = NULL;
        it->opened = false;
    }
    return s;
}

/* A Python generator's position cannot be captured (its frame is not
 * data) nor rebuilt (calling it again starts over, and may not even give
 * the same elements), so its pipelines cannot be saved. Say so at save
 * time, where the user can still change the pipeline. */
static CvStatus generator_save(CvIterator *base, CvStateWriter *w)
{
    (void)base;
    (void)w;
    return cv_error(CV_UNIMPLEMENTED,
                    "the iterator of FromGenerator cannot be saved: a Python generator's position "
                    "cannot be captured or rebuilt. For exact resume, build the source from data "
                    "conveyor can position (from_tensor_slices of the items or their indices, "
                    "range(n).map(load), or record files)");
}

static void generator_destroy(CvIterator *base)
{
    GeneratorIterator *it = (GeneratorIterator *)base;
    const CvSource *src = base->dataset->params;
    if (it->opened)
        src->close(src->ctx, it->state);
    cv_iterator_free(base);
}

const CvKernel cv_kernel_generator = {
    .name = "FromGenerator",
    .make_iterator = generator_make_iterator,
    .cardinality = generator_cardinality,
    .free_dataset = generator_free,
    .next = generator_next,
    .destroy = generator_destroy,
    .traverse = generator_traverse,
    .save = generator_save,
};

CvStatus cv_generator_dataset(CvSource source, CvDataset **out)
{
    CvSource *p = malloc(sizeof(*p));
    if (!p) {
        if (source.release)
            source.release(source.ctx);
        return cv_error_nomem();
    }
    *p = source;
    return cv_dataset_new(&cv_kernel_generator, NULL, 0, p, false, out);
}
