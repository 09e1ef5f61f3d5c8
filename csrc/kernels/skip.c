/* skip(count): drop the first `count` elements; count < 0 drops all.
 *
 * The input passes over them with cv_iterator_skip, so an indexed TFRecord
 * reader seeks instead of reading. State: how many were dropped, then the
 * input's. */
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

/* Drop what is left of the first `count` elements. As tf.data's Skip: an
 * input error met while skipping is returned, and the elements skipped in
 * that call do not count (the next call skips them again from where the
 * input now stands), so a corrupt record is never passed over silently
 * (unless an index lets the reader seek past it: docs/resume.md). An
 * interrupt or cancellation is not an element: what was skipped counts.
 * *end: the input ended first. */
static CvStatus skip_prefix(SkipIterator *it, bool *end)
{
    int64_t count = skip_count(it->base.base.dataset);
    *end = false;
    while (count < 0 || it->skipped < count) {
        int64_t want = count < 0 ? INT64_MAX : count - it->skipped, k = 0;
        CvStatus s = cv_iterator_skip(it->base.input, want, &k);
        bool passed = !s || s->code == CV_INTERRUPTED || s->code == CV_CANCELLED;
        if (passed && count >= 0) /* skip(-1) needs no count (and must not overflow one) */
            it->skipped += k;
        if (s)
            return s;
        if (k < want) {
            *end = true;
            return CV_STATUS_OK;
        }
    }
    return CV_STATUS_OK;
}

static CvStatus skip_next(CvIterator *base, CvElement *out, bool *end)
{
    SkipIterator *it = (SkipIterator *)base;
    CvStatus s = skip_prefix(it, end);
    if (s || *end)
        return s;
    return cv_iterator_next(it->base.input, out, end);
}

static CvStatus skip_skip(CvIterator *base, int64_t n, int64_t *skipped)
{
    SkipIterator *it = (SkipIterator *)base;
    bool end = false;
    *skipped = 0;
    CvStatus s = skip_prefix(it, &end);
    if (s || end)
        return s;
    return cv_iterator_skip(it->base.input, n, skipped);
}

static CvStatus skip_save(CvIterator *base, CvStateWriter *w)
{
    cv_state_put_i64(w, ((SkipIterator *)base)->skipped);
    return cv_unary_iterator_save(base, w);
}

static CvStatus skip_restore(CvIterator *base, CvStateReader *r)
{
    SkipIterator *it = (SkipIterator *)base;
    int64_t count = skip_count(base->dataset);
    CvStatus s = cv_state_get_range(r, "Skip's skipped count", 0, count < 0 ? 0 : count,
                                    &it->skipped);
    return s ? s : cv_unary_iterator_restore(base, r);
}

const CvKernel cv_kernel_skip = {
    .name = "Skip",
    .make_iterator = skip_make_iterator,
    .cardinality = skip_cardinality,
    .free_dataset = skip_free,
    .next = skip_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = cv_unary_iterator_destroy,
    .save = skip_save,
    .restore = skip_restore,
    .skip = skip_skip,
};

CvStatus cv_skip_dataset(CvDataset *input, int64_t count, CvDataset **out)
{
    int64_t *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = count < 0 ? -1 : count;
    return cv_dataset_new(&cv_kernel_skip, &input, 1, p, false, out);
}
