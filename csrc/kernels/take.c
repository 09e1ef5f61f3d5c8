/* take(count): the first `count` elements; count < 0 takes everything. */
#include <stdlib.h>

#include "kernels/kernels.h"

typedef struct {
    CvUnaryIterator base;
    int64_t taken;
} TakeIterator;

static int64_t take_count(const CvDataset *ds)
{
    return *(const int64_t *)ds->params;
}

static void take_free(CvDataset *ds)
{
    free(ds->params);
}

static int64_t take_cardinality(const CvDataset *ds)
{
    int64_t n = cv_dataset_cardinality(ds->inputs[0]), count = take_count(ds);
    if (count < 0)
        return n;
    if (n == CV_INFINITE_CARDINALITY)
        return count;
    if (n == CV_UNKNOWN_CARDINALITY)
        return n; /* even for take(0), as tf.data reports */
    return n < count ? n : count;
}

static CvStatus take_make_iterator(const CvDataset *ds, CvIterator **out)
{
    return cv_unary_iterator_new(ds, sizeof(TakeIterator), out);
}

static CvStatus take_next(CvIterator *base, CvElement *out, bool *end)
{
    TakeIterator *it = (TakeIterator *)base;
    int64_t count = take_count(base->dataset);
    if (count >= 0 && it->taken >= count) {
        *end = true;
        return CV_STATUS_OK;
    }
    CvStatus s = cv_iterator_next(it->base.input, out, end);
    if (!s && !*end)
        it->taken++; /* an error does not count, as in tf.data */
    return s;
}

/* How many were taken, then the input's position. */
static CvStatus take_save(CvIterator *base, CvStateWriter *w)
{
    cv_state_put_i64(w, ((TakeIterator *)base)->taken);
    return cv_iterator_save(((TakeIterator *)base)->base.input, w);
}

static CvStatus take_restore(CvIterator *base, CvStateReader *r)
{
    TakeIterator *it = (TakeIterator *)base;
    int64_t count = take_count(base->dataset);
    CvStatus s = cv_state_get_range(r, "take count", 0, count < 0 ? INT64_MAX : count, &it->taken);
    if (!s)
        s = cv_iterator_restore(it->base.input, r);
    return s;
}

/* Through the input's skip (a seek where it has one), up to the count. */
static CvStatus take_skip(CvIterator *base, int64_t n, int64_t *skipped)
{
    TakeIterator *it = (TakeIterator *)base;
    int64_t count = take_count(base->dataset);
    if (count >= 0 && n > count - it->taken)
        n = count - it->taken;
    CvStatus s = cv_iterator_skip(it->base.input, n, skipped);
    it->taken += *skipped;
    return s;
}

/* A take that reached its count ends its input's pass on purpose: say so
 * to the subtree (cache keeps quiet about such a preview). */
static void take_destroy(CvIterator *base)
{
    TakeIterator *it = (TakeIterator *)base;
    int64_t count = take_count(base->dataset);
    CvStopReason prev = cv_stop_reason();
    if (count >= 0 && it->taken >= count)
        cv_set_stop_reason(prev == CV_STOP_EPOCH || prev == CV_STOP_TAKE_EPOCH ? CV_STOP_TAKE_EPOCH
                                                                               : CV_STOP_TAKE);
    cv_unary_iterator_destroy(base);
    cv_set_stop_reason(prev);
}

const CvKernel cv_kernel_take = {
    .name = "Take",
    .make_iterator = take_make_iterator,
    .cardinality = take_cardinality,
    .free_dataset = take_free,
    .next = take_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = take_destroy,
    .save = take_save,
    .restore = take_restore,
    .skip = take_skip,
};

CvStatus cv_take_dataset(CvDataset *input, int64_t count, CvDataset **out)
{
    int64_t *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = count < 0 ? -1 : count;
    return cv_dataset_new(&cv_kernel_take, &input, 1, p, false, out);
}
