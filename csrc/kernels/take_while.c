/* take_while(predicate): the input elements up to the first for which the
 * predicate returns false; that element and the rest are not read (the
 * dataset ends there, as tf.data's TakeWhileDataset). Sequential: the
 * predicate runs on the thread that calls next(). An error from the input or
 * the predicate is delivered at that element and the next call goes on.
 */
#include <stdlib.h>

#include "kernels/common/element_calls.h"
#include "kernels/kernels.h"

typedef struct {
    CvFunction predicate;
    atomic_uint_least64_t epochs; /* iterators made so far: each gets the next epoch */
} TakeWhileParams;

typedef struct {
    CvUnaryIterator base;
    uint64_t epoch;
    uint64_t index; /* position of the next input element given to the predicate */
    bool done;      /* the predicate returned false: the dataset has ended */
} TakeWhileIterator;

static void take_while_free(CvDataset *ds)
{
    TakeWhileParams *p = ds->params;
    if (p->predicate.release)
        p->predicate.release(p->predicate.ctx);
    free(p);
}

static int take_while_traverse(const CvDataset *ds, CvVisit visit, void *arg)
{
    return cv_function_traverse(&((const TakeWhileParams *)ds->params)->predicate, visit, arg);
}

static int64_t take_while_cardinality(const CvDataset *ds)
{
    (void)ds;
    return CV_UNKNOWN_CARDINALITY;
}

static CvStatus take_while_make_iterator(const CvDataset *ds, CvIterator **out)
{
    TakeWhileParams *p = ds->params;
    CvStatus s = cv_unary_iterator_new(ds, sizeof(TakeWhileIterator), out);
    if (!s)
        ((TakeWhileIterator *)*out)->epoch = atomic_fetch_add(&p->epochs, 1);
    return s;
}

static CvStatus take_while_next(CvIterator *base, CvElement *out, bool *end)
{
    TakeWhileIterator *it = (TakeWhileIterator *)base;
    const TakeWhileParams *p = base->dataset->params;
    *end = it->done;
    if (it->done)
        return CV_STATUS_OK;
    CvElement in = {0};
    CvStatus s = cv_iterator_next(it->base.input, &in, end);
    if (s || *end)
        return s;
    bool keep = false;
    CvElementId id = {it->epoch, it->index++};
    s = cv_predicate_verdict(&p->predicate, &in, &id, "Dataset.take_while", &keep);
    if (!s && keep) {
        cv_element_move(out, &in);
        return CV_STATUS_OK;
    }
    cv_element_clear(&in);
    if (!s)
        *end = it->done = true;
    return s;
}

/* The element ids, whether it has ended, then the input's position. */
static CvStatus take_while_save(CvIterator *base, CvStateWriter *w)
{
    TakeWhileIterator *it = (TakeWhileIterator *)base;
    cv_state_put_u64(w, it->epoch);
    cv_state_put_u64(w, it->index);
    cv_state_put_i64(w, it->done);
    return cv_iterator_save(it->base.input, w);
}

static CvStatus take_while_restore(CvIterator *base, CvStateReader *r)
{
    TakeWhileIterator *it = (TakeWhileIterator *)base;
    TakeWhileParams *p = base->dataset->params;
    int64_t epoch = 0, index = 0;
    bool done = false;
    CvStatus s = cv_state_get_range(r, "take_while epoch", 0, INT64_MAX - 1, &epoch);
    if (!s)
        s = cv_state_get_range(r, "take_while index", 0, INT64_MAX, &index);
    if (!s)
        s = cv_state_get_bool(r, &done);
    if (!s)
        s = cv_iterator_restore(it->base.input, r);
    if (s)
        return s;
    it->epoch = (uint64_t)epoch;
    it->index = (uint64_t)index;
    it->done = done;
    cv_epochs_note_restored(&p->epochs, (uint64_t)epoch);
    return CV_STATUS_OK;
}

const CvKernel cv_kernel_take_while = {
    .name = "TakeWhile",
    .make_iterator = take_while_make_iterator,
    .cardinality = take_while_cardinality,
    .free_dataset = take_while_free,
    .next = take_while_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = cv_unary_iterator_destroy,
    .traverse = take_while_traverse,
    .save = take_while_save,
    .restore = take_while_restore,
};

CvStatus cv_take_while_dataset(CvDataset *input, CvFunction predicate, CvDataset **out)
{
    TakeWhileParams *p = malloc(sizeof(*p));
    if (!p) {
        if (predicate.release)
            predicate.release(predicate.ctx);
        return cv_error_nomem();
    }
    p->predicate = predicate;
    atomic_init(&p->epochs, 0);
    return cv_dataset_new(&cv_kernel_take_while, &input, 1, p, false, out);
}
