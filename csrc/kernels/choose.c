/* choose_from_datasets: tf.data's DirectedInterleave.
 *
 * Each selector element (a scalar int64) picks the data input to take the
 * next element from. An index out of range is an InvalidArgumentError at
 * that position (the iterator goes on). When the picked input is exhausted:
 * with stop_on_empty_dataset the whole dataset ends; otherwise that input is
 * closed and later picks of it are skipped, and the dataset ends when every
 * input is exhausted or the selector ends.
 *
 * Any number of data inputs: they are held in the params (owned
 * references), not in CvDataset.inputs, whose only input is the selector.
 */
#include <stdlib.h>

#include "core/thread.h"
#include "kernels/kernels.h"

typedef struct {
    int n;
    CvDataset **data; /* [n] owned references */
    bool stop_on_empty;
} ChooseParams;

typedef struct {
    CvUnaryIterator base; /* input: the selector */
    pthread_mutex_t mu;   /* guards data[] against cancel() from another thread */
    CvIterator **data;    /* [n]; NULL once exhausted */
    int active;
    int64_t pending; /* a pick whose element is not delivered yet (interrupted), or -1 */
    bool done;
} ChooseIterator;

static void choose_free(CvDataset *ds)
{
    ChooseParams *p = ds->params;
    for (int i = 0; i < p->n; i++)
        cv_dataset_unref(p->data[i]);
    free(p->data);
    free(p);
}

/* As tf.data: infinite when a data input is, otherwise unknown (the picks
 * decide), whatever the selector's cardinality. */
static int64_t choose_cardinality(const CvDataset *ds)
{
    const ChooseParams *p = ds->params;
    for (int i = 0; i < p->n; i++)
        if (cv_dataset_cardinality(p->data[i]) == CV_INFINITE_CARDINALITY)
            return CV_INFINITE_CARDINALITY;
    return CV_UNKNOWN_CARDINALITY;
}

static void close_data(ChooseIterator *it, int i)
{
    pthread_mutex_lock(&it->mu);
    CvIterator *d = it->data[i];
    it->data[i] = NULL;
    pthread_mutex_unlock(&it->mu);
    cv_iterator_destroy(d);
}

static void close_all(ChooseIterator *it)
{
    const ChooseParams *p = it->base.base.dataset->params;
    for (int i = 0; i < p->n; i++)
        close_data(it, i);
}

static void choose_destroy(CvIterator *base)
{
    ChooseIterator *it = (ChooseIterator *)base;
    if (it->data) {
        close_all(it);
        free(it->data);
    }
    pthread_mutex_destroy(&it->mu);
    cv_unary_iterator_destroy(base);
}

static CvStatus choose_make_iterator(const CvDataset *ds, CvIterator **out)
{
    const ChooseParams *p = ds->params;
    CvStatus s = cv_unary_iterator_new(ds, sizeof(ChooseIterator), out);
    if (s)
        return s;
    ChooseIterator *it = (ChooseIterator *)*out;
    pthread_mutex_init(&it->mu, NULL);
    it->pending = -1;
    it->data = calloc((size_t)p->n, sizeof(CvIterator *));
    if (!it->data)
        s = cv_error_nomem();
    for (int i = 0; i < p->n && !s; i++) {
        s = cv_iterator_make(p->data[i], &it->data[i]);
        it->active += !s;
    }
    if (s) {
        choose_destroy(*out);
        *out = NULL;
    }
    return s;
}

static CvStatus choose_next(CvIterator *base, CvElement *out, bool *end)
{
    ChooseIterator *it = (ChooseIterator *)base;
    const ChooseParams *p = base->dataset->params;
    for (;;) {
        if (it->done) {
            *end = true;
            return CV_STATUS_OK;
        }
        if (it->pending < 0) {
            CvElement pick = {0};
            bool selector_end = false;
            CvStatus s = cv_iterator_next(it->base.input, &pick, &selector_end);
            if (s)
                return s;
            if (selector_end) {
                it->done = true;
                close_all(it);
                continue;
            }
            if (pick.n != 1 || pick.t[0].dtype != CV_INT64 || pick.t[0].rank != 0) {
                cv_element_clear(&pick);
                return cv_error(CV_INVALID_ARGUMENT, "DirectedInterleave: the selector must "
                                "produce scalar int64 elements");
            }
            int64_t index = *(const int64_t *)pick.t[0].data;
            cv_element_clear(&pick);
            if (index < 0 || index >= p->n)
                return cv_error(CV_INVALID_ARGUMENT, "Selector index out of range: %lld >= %d",
                                (long long)index, p->n);
            it->pending = index;
        }
        int i = (int)it->pending;
        if (!it->data[i]) { /* exhausted earlier: pick again */
            it->pending = -1;
            continue;
        }
        bool data_end = false;
        CvStatus s = cv_iterator_next(it->data[i], out, &data_end);
        if (s && (s->code == CV_INTERRUPTED || s->code == CV_CANCELLED))
            return s; /* keep the pick: the next call delivers its element */
        it->pending = -1;
        if (s || !data_end) {
            *end = false;
            return s;
        }
        if (p->stop_on_empty) {
            it->done = true;
            close_all(it);
            continue;
        }
        close_data(it, i);
        if (--it->active == 0) {
            it->done = true;
            close_all(it);
        }
    }
}

static void choose_cancel(CvIterator *base)
{
    ChooseIterator *it = (ChooseIterator *)base;
    const ChooseParams *p = base->dataset->params;
    cv_unary_iterator_cancel(base);
    pthread_mutex_lock(&it->mu);
    for (int i = 0; i < p->n; i++)
        cv_iterator_cancel(it->data[i]);
    pthread_mutex_unlock(&it->mu);
}

/* Whether it ended, the pick held back by an interrupted next() (-1:
 * none), then each data input's position (or that it is exhausted) and
 * the selector's. */
static CvStatus choose_save(CvIterator *base, CvStateWriter *w)
{
    ChooseIterator *it = (ChooseIterator *)base;
    const ChooseParams *p = base->dataset->params;
    cv_state_put_i64(w, it->done);
    cv_state_put_i64(w, it->pending);
    CvStatus s = CV_STATUS_OK;
    for (int i = 0; i < p->n && !s; i++) {
        cv_state_put_i64(w, it->data[i] != NULL);
        if (it->data[i])
            s = cv_iterator_save(it->data[i], w);
    }
    return s ? s : cv_iterator_save(it->base.input, w);
}

static CvStatus choose_restore(CvIterator *base, CvStateReader *r)
{
    ChooseIterator *it = (ChooseIterator *)base;
    const ChooseParams *p = base->dataset->params;
    CvStatus s = cv_state_get_bool(r, &it->done);
    if (!s)
        s = cv_state_get_range(r, "choose pick", -1, p->n - 1, &it->pending);
    for (int i = 0; i < p->n && !s; i++) {
        bool open = false;
        if ((s = cv_state_get_bool(r, &open)))
            break;
        if (open) {
            s = cv_iterator_restore(it->data[i], r);
        } else {
            close_data(it, i);
            it->active--;
        }
    }
    if (!s && it->active == 0 && !it->done)
        s = cv_state_corrupt("choose: every input exhausted but not done");
    if (!s)
        s = cv_iterator_restore(it->base.input, r);
    return s;
}

const CvKernel cv_kernel_choose = {
    .name = "DirectedInterleave",
    .make_iterator = choose_make_iterator,
    .cardinality = choose_cardinality,
    .free_dataset = choose_free,
    .next = choose_next,
    .cancel = choose_cancel,
    .destroy = choose_destroy,
    .save = choose_save,
    .restore = choose_restore,
};

CvStatus cv_choose_dataset(CvDataset *selector, CvDataset *const *data, int n,
                           bool stop_on_empty_dataset, CvDataset **out)
{
    if (n <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "Invalid `datasets`. `datasets` should not be empty.");
    ChooseParams *p = calloc(1, sizeof(*p));
    if (!p)
        return cv_error_nomem();
    p->data = calloc((size_t)n, sizeof(CvDataset *));
    if (!p->data) {
        free(p);
        return cv_error_nomem();
    }
    bool may_block = false;
    for (int i = 0; i < n; i++) {
        p->data[i] = cv_dataset_ref(data[i]);
        may_block |= data[i]->may_block;
    }
    p->n = n;
    p->stop_on_empty = stop_on_empty_dataset;
    return cv_dataset_new(&cv_kernel_choose, &selector, 1, p, may_block, out);
}
