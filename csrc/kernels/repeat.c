/* repeat(count): the input `count` times (count < 0: forever). Each epoch
 * opens a new input iterator, so random inputs re-randomize. An input that
 * is empty on its first epoch ends the dataset instead of spinning. */
#include <stdlib.h>

#include "core/thread.h"
#include "kernels/kernels.h"

typedef struct {
    CvIterator base;
    pthread_mutex_t mu; /* guards input against cancel() from another thread */
    CvIterator *input;
    int64_t epoch;
    bool cancelled;
    bool epoch_had_element;
} RepeatIterator;

static int64_t repeat_count(const CvDataset *ds)
{
    return *(const int64_t *)ds->params;
}

static void repeat_free(CvDataset *ds)
{
    free(ds->params);
}

static int64_t repeat_cardinality(const CvDataset *ds)
{
    int64_t n = cv_dataset_cardinality(ds->inputs[0]), count = repeat_count(ds);
    if (count == 0 || n == 0)
        return 0;
    if (count < 0 || n == CV_INFINITE_CARDINALITY)
        return CV_INFINITE_CARDINALITY;
    if (n == CV_UNKNOWN_CARDINALITY)
        return n;
    return n > INT64_MAX / count ? CV_INFINITE_CARDINALITY : n * count;
}

static CvStatus repeat_make_iterator(const CvDataset *ds, CvIterator **out)
{
    RepeatIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    pthread_mutex_init(&it->mu, NULL);
    if (repeat_count(ds) != 0) {
        CvStatus s = cv_iterator_make(ds->inputs[0], &it->input);
        if (s) {
            pthread_mutex_destroy(&it->mu);
            cv_iterator_free(&it->base);
            return s;
        }
    }
    *out = &it->base;
    return CV_STATUS_OK;
}

/* The epoch ended: open the next one, or stop (input NULL). */
static CvStatus next_epoch(RepeatIterator *it)
{
    int64_t count = repeat_count(it->base.dataset);
    CvIterator *old = it->input, *fresh = NULL;
    CvStatus s = CV_STATUS_OK;
    it->epoch++;
    bool again = count < 0 ? it->epoch_had_element : it->epoch < count;
    it->epoch_had_element = false;
    if (again)
        s = cv_iterator_make(it->base.dataset->inputs[0], &fresh);
    pthread_mutex_lock(&it->mu);
    bool cancelled = it->cancelled;
    it->input = cancelled ? NULL : fresh;
    pthread_mutex_unlock(&it->mu);
    CvStopReason prev = cv_set_stop_reason(CV_STOP_EPOCH);
    cv_iterator_destroy(old);
    cv_set_stop_reason(prev);
    if (cancelled && fresh) {
        cv_iterator_destroy(fresh);
        return cv_error(CV_CANCELLED, "Repeat: the iterator was cancelled");
    }
    return s;
}

/* An element or an error is progress; an interruption is not. */
static void note_progress(RepeatIterator *it, CvStatus s)
{
    if (!s || (s->code != CV_INTERRUPTED && s->code != CV_CANCELLED))
        it->epoch_had_element = true;
}

static CvStatus repeat_next(CvIterator *base, CvElement *out, bool *end)
{
    RepeatIterator *it = (RepeatIterator *)base;
    for (;;) {
        if (!it->input) {
            *end = true;
            return CV_STATUS_OK;
        }
        CvStatus s = cv_iterator_next(it->input, out, end);
        if (s || !*end) {
            note_progress(it, s);
            return s;
        }
        if ((s = next_epoch(it)))
            return s;
    }
}

/* Through each epoch's skip: a seek per epoch where the input has one. */
static CvStatus repeat_skip(CvIterator *base, int64_t n, int64_t *skipped)
{
    RepeatIterator *it = (RepeatIterator *)base;
    *skipped = 0;
    while (*skipped < n && it->input) {
        int64_t want = n - *skipped, k = 0;
        CvStatus s = cv_iterator_skip(it->input, want, &k);
        *skipped += k;
        if (k > 0)
            it->epoch_had_element = true;
        if (s) {
            note_progress(it, s);
            return s;
        }
        if (k < want && (s = next_epoch(it)))
            return s;
    }
    return CV_STATUS_OK;
}

static void repeat_cancel(CvIterator *base)
{
    RepeatIterator *it = (RepeatIterator *)base;
    pthread_mutex_lock(&it->mu);
    it->cancelled = true;
    cv_iterator_cancel(it->input);
    pthread_mutex_unlock(&it->mu);
}

/* The epoch, whether it has produced anything yet (an empty first epoch
 * of repeat() forever ends it), then the current epoch's input position
 * when one is open (none once the last epoch ended). */
static CvStatus repeat_save(CvIterator *base, CvStateWriter *w)
{
    RepeatIterator *it = (RepeatIterator *)base;
    cv_state_put_i64(w, it->epoch);
    cv_state_put_i64(w, it->epoch_had_element);
    cv_state_put_i64(w, it->input != NULL);
    return it->input ? cv_iterator_save(it->input, w) : CV_STATUS_OK;
}

/* The fresh iterator's input is the one to restore, whatever the epoch:
 * an iterator made later of the same dataset is alike. Where the saved one
 * had ended, it is dropped unused (an abandoned, empty pass). */
static CvStatus repeat_restore(CvIterator *base, CvStateReader *r)
{
    RepeatIterator *it = (RepeatIterator *)base;
    int64_t count = repeat_count(base->dataset), epoch = 0;
    bool had_element = false, has_input = false;
    CvStatus s = cv_state_get_range(r, "repeat epoch", 0, count < 0 ? INT64_MAX : count, &epoch);
    if (!s)
        s = cv_state_get_bool(r, &had_element);
    if (!s)
        s = cv_state_get_bool(r, &has_input);
    if (!s && has_input && (!it->input || (count >= 0 && epoch >= count)))
        s = cv_state_corrupt("repeat: an input open past the last epoch");
    if (!s && has_input)
        s = cv_iterator_restore(it->input, r);
    if (s)
        return s;
    it->epoch = epoch;
    it->epoch_had_element = had_element;
    if (!has_input) {
        pthread_mutex_lock(&it->mu);
        CvIterator *old = it->input;
        it->input = NULL;
        pthread_mutex_unlock(&it->mu);
        cv_iterator_destroy(old);
    }
    return CV_STATUS_OK;
}

static void repeat_destroy(CvIterator *base)
{
    RepeatIterator *it = (RepeatIterator *)base;
    cv_iterator_destroy(it->input);
    pthread_mutex_destroy(&it->mu);
    cv_iterator_free(base);
}

const CvKernel cv_kernel_repeat = {
    .name = "Repeat",
    .make_iterator = repeat_make_iterator,
    .cardinality = repeat_cardinality,
    .free_dataset = repeat_free,
    .next = repeat_next,
    .cancel = repeat_cancel,
    .destroy = repeat_destroy,
    .save = repeat_save,
    .restore = repeat_restore,
    .skip = repeat_skip,
};

CvStatus cv_repeat_dataset(CvDataset *input, int64_t count, CvDataset **out)
{
    int64_t *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = count < 0 ? -1 : count;
    return cv_dataset_new(&cv_kernel_repeat, &input, 1, p, false, out);
}
