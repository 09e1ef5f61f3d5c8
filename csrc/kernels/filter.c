/* filter(predicate): the input elements for which the predicate returns
 * true. Sequential, as tf.data's FilterDataset: the predicate runs on the
 * thread that calls next() (or try_next()). An error from the input or the
 * predicate (or a predicate result that is not a scalar bool) is delivered
 * at that element and the filter goes on with the next one.
 */
#include <stdlib.h>

#include "kernels/common/element_calls.h"
#include "kernels/kernels.h"

typedef struct {
    CvFunction predicate;
    atomic_uint_least64_t epochs; /* iterators made so far: each gets the next epoch */
} FilterParams;

typedef struct {
    CvUnaryIterator base;
    uint64_t epoch;
    uint64_t index; /* position of the next input element given to the predicate */
} FilterIterator;

static void filter_free(CvDataset *ds)
{
    FilterParams *p = ds->params;
    if (p->predicate.release)
        p->predicate.release(p->predicate.ctx);
    free(p);
}

static int filter_traverse(const CvDataset *ds, CvVisit visit, void *arg)
{
    return cv_function_traverse(&((const FilterParams *)ds->params)->predicate, visit, arg);
}

static int64_t filter_cardinality(const CvDataset *ds)
{
    (void)ds;
    return CV_UNKNOWN_CARDINALITY; /* even for an infinite input, as tf.data reports */
}

static CvStatus filter_make_iterator(const CvDataset *ds, CvIterator **out)
{
    FilterParams *p = ds->params;
    CvStatus s = cv_unary_iterator_new(ds, sizeof(FilterIterator), out);
    if (!s)
        ((FilterIterator *)*out)->epoch = atomic_fetch_add(&p->epochs, 1);
    return s;
}

/* next(), or try_next() when would_block is not NULL: the input's try_next
 * (an element it has now, or *would_block with nothing taken), and the
 * predicate on this thread either way, as a pipeline without threads runs
 * it (under the binding's GIL); else a pipeline over an inline AUTOTUNE
 * stage would let go of the GIL and take it back for every element. */
static CvStatus filter_pull(CvIterator *base, CvElement *out, bool *end, bool *would_block)
{
    FilterIterator *it = (FilterIterator *)base;
    const FilterParams *p = base->dataset->params;
    for (;;) {
        CvElement in = {0};
        CvStatus s = would_block ? cv_iterator_try_next(it->base.input, &in, end, would_block)
                                 : cv_iterator_next(it->base.input, &in, end);
        if (s || *end || (would_block && *would_block))
            return s;
        bool keep = false;
        CvElementId id = {it->epoch, it->index++};
        s = cv_predicate_verdict(&p->predicate, &in, &id, "Dataset.filter", &keep);
        if (!s && keep) {
            cv_element_move(out, &in);
            return CV_STATUS_OK;
        }
        cv_element_clear(&in);
        if (s)
            return s;
    }
}

static CvStatus filter_next(CvIterator *base, CvElement *out, bool *end)
{
    return filter_pull(base, out, end, NULL);
}

static CvStatus filter_try_next(CvIterator *base, CvElement *out, bool *end, bool *would_block)
{
    *would_block = false;
    return filter_pull(base, out, end, would_block);
}

/* The element ids (epoch, next index: a predicate's random ops seed from
 * them), then the input's position. */
static CvStatus filter_save(CvIterator *base, CvStateWriter *w)
{
    FilterIterator *it = (FilterIterator *)base;
    cv_state_put_u64(w, it->epoch);
    cv_state_put_u64(w, it->index);
    return cv_iterator_save(it->base.input, w);
}

/* Later iterators of the dataset (the next repeat() epochs) number on
 * from the restored epoch, as they would have in the saved run. */
static CvStatus filter_restore(CvIterator *base, CvStateReader *r)
{
    FilterIterator *it = (FilterIterator *)base;
    FilterParams *p = base->dataset->params;
    int64_t epoch = 0, index = 0;
    CvStatus s = cv_state_get_range(r, "filter epoch", 0, INT64_MAX - 1, &epoch);
    if (!s)
        s = cv_state_get_range(r, "filter index", 0, INT64_MAX, &index);
    if (!s)
        s = cv_iterator_restore(it->base.input, r);
    if (s)
        return s;
    it->epoch = (uint64_t)epoch;
    it->index = (uint64_t)index;
    cv_epochs_note_restored(&p->epochs, (uint64_t)epoch);
    return CV_STATUS_OK;
}

const CvKernel cv_kernel_filter = {
    .name = "Filter",
    .make_iterator = filter_make_iterator,
    .cardinality = filter_cardinality,
    .free_dataset = filter_free,
    .next = filter_next,
    .try_next = filter_try_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = cv_unary_iterator_destroy,
    .traverse = filter_traverse,
    .save = filter_save,
    .restore = filter_restore,
};

CvStatus cv_filter_dataset(CvDataset *input, CvFunction predicate, CvDataset **out)
{
    FilterParams *p = malloc(sizeof(*p));
    if (!p) {
        if (predicate.release)
            predicate.release(predicate.ctx);
        return cv_error_nomem();
    }
    p->predicate = predicate;
    atomic_init(&p->epochs, 0);
    return cv_dataset_new(&cv_kernel_filter, &input, 1, p, false, out);
}
