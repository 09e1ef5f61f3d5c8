/* concatenate: all elements of the first input, then all of the second (of
 * every input, in order). The next input's iterator is opened only when the
 * previous one ends, as tf.data's ConcatenateDataset does; errors pass
 * through at their element.
 */
#include <stdlib.h>

#include "core/thread.h"
#include "kernels/kernels.h"

typedef struct {
    CvIterator base;
    pthread_mutex_t mu; /* guards `current` against cancel() from another thread */
    CvIterator *current; /* NULL once every input has ended */
    int index;           /* the input `current` iterates */
    bool cancelled;
} ConcatenateIterator;

static int64_t concatenate_cardinality(const CvDataset *ds)
{
    int64_t total = 0;
    bool unknown = false;
    for (int i = 0; i < ds->num_inputs; i++) {
        int64_t n = cv_dataset_cardinality(ds->inputs[i]);
        if (n == CV_INFINITE_CARDINALITY)
            return n;
        if (n == CV_UNKNOWN_CARDINALITY || unknown)
            unknown = true;
        else
            total = n > INT64_MAX - total ? INT64_MAX : total + n;
    }
    return unknown ? CV_UNKNOWN_CARDINALITY : total;
}

static CvStatus concatenate_make_iterator(const CvDataset *ds, CvIterator **out)
{
    ConcatenateIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    pthread_mutex_init(&it->mu, NULL);
    CvStatus s = cv_iterator_make(ds->inputs[0], &it->current);
    if (s) {
        pthread_mutex_destroy(&it->mu);
        cv_iterator_free(&it->base);
        return s;
    }
    *out = &it->base;
    return CV_STATUS_OK;
}

/* The current input ended: open the next one, or stop (current NULL). An
 * input that fails to open ends this iterator after its error. */
static CvStatus next_input(ConcatenateIterator *it)
{
    const CvDataset *ds = it->base.dataset;
    CvIterator *old = it->current, *fresh = NULL;
    CvStatus s = CV_STATUS_OK;
    if (++it->index < ds->num_inputs)
        s = cv_iterator_make(ds->inputs[it->index], &fresh);
    pthread_mutex_lock(&it->mu);
    bool cancelled = it->cancelled;
    it->current = cancelled ? NULL : fresh;
    pthread_mutex_unlock(&it->mu);
    cv_iterator_destroy(old);
    if (cancelled && fresh) {
        cv_iterator_destroy(fresh);
        return cv_error(CV_CANCELLED, "Concatenate: the iterator was cancelled");
    }
    return s;
}

static CvStatus concatenate_next(CvIterator *base, CvElement *out, bool *end)
{
    ConcatenateIterator *it = (ConcatenateIterator *)base;
    for (;;) {
        if (!it->current) {
            *end = true;
            return CV_STATUS_OK;
        }
        CvStatus s = cv_iterator_next(it->current, out, end);
        if (s || !*end)
            return s;
        if ((s = next_input(it)))
            return s;
    }
}

/* Through each input's skip, in turn. */
static CvStatus concatenate_skip(CvIterator *base, int64_t n, int64_t *skipped)
{
    ConcatenateIterator *it = (ConcatenateIterator *)base;
    *skipped = 0;
    while (*skipped < n && it->current) {
        int64_t want = n - *skipped, k = 0;
        CvStatus s = cv_iterator_skip(it->current, want, &k);
        *skipped += k;
        if (s)
            return s;
        if (k < want && (s = next_input(it)))
            return s;
    }
    return CV_STATUS_OK;
}

static void concatenate_cancel(CvIterator *base)
{
    ConcatenateIterator *it = (ConcatenateIterator *)base;
    pthread_mutex_lock(&it->mu);
    it->cancelled = true;
    cv_iterator_cancel(it->current);
    pthread_mutex_unlock(&it->mu);
}

/* Which input is current, then its position. The inputs before it are
 * done and the ones after it not opened yet. */
static CvStatus concatenate_save(CvIterator *base, CvStateWriter *w)
{
    ConcatenateIterator *it = (ConcatenateIterator *)base;
    cv_state_put_i64(w, it->index);
    cv_state_put_i64(w, it->current != NULL);
    return it->current ? cv_iterator_save(it->current, w) : CV_STATUS_OK;
}

static CvStatus concatenate_restore(CvIterator *base, CvStateReader *r)
{
    ConcatenateIterator *it = (ConcatenateIterator *)base;
    const CvDataset *ds = base->dataset;
    int64_t index = 0;
    bool has_current = false;
    CvIterator *fresh = NULL;
    CvStatus s = cv_state_get_range(r, "concatenate input", 0, ds->num_inputs, &index);
    if (!s)
        s = cv_state_get_bool(r, &has_current);
    if (!s && has_current && index == ds->num_inputs)
        s = cv_state_corrupt("concatenate: an iterator past the last input");
    if (s)
        return s;
    if (index == 0 && has_current)
        return cv_iterator_restore(it->current, r);
    if (has_current) {
        s = cv_iterator_make(ds->inputs[index], &fresh);
        if (!s)
            s = cv_iterator_restore(fresh, r);
        if (s) {
            cv_iterator_destroy(fresh);
            return s;
        }
    }
    pthread_mutex_lock(&it->mu);
    CvIterator *old = it->current;
    it->current = fresh;
    it->index = (int)index;
    pthread_mutex_unlock(&it->mu);
    cv_iterator_destroy(old);
    return CV_STATUS_OK;
}

static void concatenate_destroy(CvIterator *base)
{
    ConcatenateIterator *it = (ConcatenateIterator *)base;
    cv_iterator_destroy(it->current);
    pthread_mutex_destroy(&it->mu);
    cv_iterator_free(base);
}

const CvKernel cv_kernel_concatenate = {
    .name = "Concatenate",
    .make_iterator = concatenate_make_iterator,
    .cardinality = concatenate_cardinality,
    .free_dataset = NULL,
    .next = concatenate_next,
    .cancel = concatenate_cancel,
    .destroy = concatenate_destroy,
    .save = concatenate_save,
    .restore = concatenate_restore,
    .skip = concatenate_skip,
};

CvStatus cv_concatenate_dataset(CvDataset *const *inputs, int num_inputs, CvDataset **out)
{
    if (num_inputs < 1)
        return cv_error(CV_INVALID_ARGUMENT, "concatenate needs at least one dataset.");
    return cv_dataset_new(&cv_kernel_concatenate, inputs, num_inputs, NULL, false, out);
}
