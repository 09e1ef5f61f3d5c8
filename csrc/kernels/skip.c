/* skip(count): drop the first `count` elements; count < 0 drops all. */
#include <stdlib.h>

#include "kernels/kernels.h"

typedef struct {
    CvUnaryIterator base;
    int64_t skipped;
} SkipIterator;

static int64_t skip_count(const CvDataset *ds)
{
    return *(const int64_t *)ds->params;
}

static void skip_free(CvDataset *ds)
{
    free(ds->params);
}

static int64_t skip_cardinality(const CvDataset *ds)
{
    int64_t n = cv_dataset_cardinality(ds->inputs[0]), count = skip_count(ds);
    if (n == CV_INFINITE_CARDINALITY || n == CV_UNKNOWN_CARDINALITY)
        return n; /* as tf.data: skip(-1) of an infinite input is still infinite */
    if (count < 0)
        return 0;
    return n > count ? n - count : 0;
}

static CvStatus skip_make_iterator(const CvDataset *ds, CvIterator **out)
{
    return cv_unary_iterator_new(ds, sizeof(SkipIterator), out);
}

/* Errors met while skipping are returned and do not count as skipped
 * elements (tf.data's rule), so a corrupt record is never passed over
 * silently. */
static CvStatus skip_next(CvIterator *base, CvElement *out, bool *end)
{
    SkipIterator *it = (SkipIterator *)base;
    int64_t count = skip_count(base->dataset);
    while (count < 0 || it->skipped < count) {
        CvElement dropped = {0};
        CvStatus s = cv_iterator_next(it->base.input, &dropped, end);
        if (s || *end)
            return s;
        it->skipped++;
        cv_element_clear(&dropped);
    }
    return cv_iterator_next(it->base.input, out, end);
}

const CvKernel cv_kernel_skip = {
    .name = "Skip",
    .make_iterator = skip_make_iterator,
    .cardinality = skip_cardinality,
    .free_dataset = skip_free,
    .next = skip_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = cv_unary_iterator_destroy,
};

CvStatus cv_skip_dataset(CvDataset *input, int64_t count, CvDataset **out)
{
    int64_t *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = count < 0 ? -1 : count;
    return cv_dataset_new(&cv_kernel_skip, &input, 1, p, false, out);
}
