/* skip(count): drop the first `count` elements; count < 0 drops all. */
#include <stdlib.h>

#include "kernels/kernels.h"

typedef struct {
    CvIterator base;
    CvIterator *input;
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
    if (n == CV_INFINITE_CARDINALITY)
        return count < 0 ? 0 : n;
    if (n == CV_UNKNOWN_CARDINALITY)
        return n;
    if (count < 0)
        return 0;
    return n > count ? n - count : 0;
}

static CvStatus skip_make_iterator(const CvDataset *ds, CvIterator **out)
{
    SkipIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    CvStatus s = cv_iterator_make(ds->inputs[0], &it->input);
    if (s) {
        cv_iterator_free(&it->base);
        return s;
    }
    *out = &it->base;
    return CV_STATUS_OK;
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
        CvStatus s = cv_iterator_next(it->input, &dropped, end);
        if (s || *end)
            return s;
        it->skipped++;
        cv_element_clear(&dropped);
    }
    return cv_iterator_next(it->input, out, end);
}

static void skip_cancel(CvIterator *base)
{
    cv_iterator_cancel(((SkipIterator *)base)->input);
}

static void skip_destroy(CvIterator *base)
{
    cv_iterator_destroy(((SkipIterator *)base)->input);
    cv_iterator_free(base);
}

const CvKernel cv_kernel_skip = {
    .name = "Skip",
    .make_iterator = skip_make_iterator,
    .cardinality = skip_cardinality,
    .free_dataset = skip_free,
    .next = skip_next,
    .cancel = skip_cancel,
    .destroy = skip_destroy,
};

CvStatus cv_skip_dataset(CvDataset *input, int64_t count, CvDataset **out)
{
    int64_t *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = count < 0 ? -1 : count;
    return cv_dataset_new(&cv_kernel_skip, &input, 1, p, false, out);
}
