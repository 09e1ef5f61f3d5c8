#include "core/dataset.h"

#include <stdlib.h>

#include "core/pool.h"

CvStatus cv_dataset_new(const CvKernel *kernel, CvDataset *const *inputs, int num_inputs,
                        void *params, bool may_block, CvDataset **out)
{
    CvDataset *ds = num_inputs >= 0 ? calloc(1, sizeof(*ds) + (size_t)num_inputs * sizeof(ds->inputs[0])) : NULL;
    if (!ds) {
        if (params) {
            CvDataset orphan = {.kernel = kernel, .params = params};
            kernel->free_dataset(&orphan);
        }
        return cv_error_nomem();
    }
    ds->kernel = kernel;
    atomic_init(&ds->refcount, 1);
    ds->num_inputs = num_inputs;
    ds->params = params;
    ds->may_block = may_block;
    for (int i = 0; i < num_inputs; i++) {
        ds->inputs[i] = cv_dataset_ref(inputs[i]);
        ds->may_block |= inputs[i]->may_block;
    }
    *out = ds;
    return CV_STATUS_OK;
}

CvDataset *cv_dataset_ref(CvDataset *ds)
{
    atomic_fetch_add_explicit(&ds->refcount, 1, memory_order_relaxed);
    return ds;
}

/* Drop `amount` (1 or CV_DATASET_ITERATOR_REF); the last reference of
 * either kind frees. */
static void dataset_release(CvDataset *ds, int64_t amount)
{
    if (!ds || atomic_fetch_sub_explicit(&ds->refcount, amount, memory_order_acq_rel) != amount)
        return;
    if (ds->params && ds->kernel->free_dataset)
        ds->kernel->free_dataset(ds);
    for (int i = 0; i < ds->num_inputs; i++)
        cv_dataset_unref(ds->inputs[i]);
    cv_memory_unref(ds->memory);
    free(ds);
}

void cv_dataset_unref(CvDataset *ds)
{
    dataset_release(ds, 1);
}

long cv_dataset_structural_refs(const CvDataset *ds)
{
    int64_t count = atomic_load_explicit(&((CvDataset *)ds)->refcount, memory_order_acquire);
    return (long)(count & (CV_DATASET_ITERATOR_REF - 1));
}

void cv_dataset_set_memory(CvDataset *ds, CvMemory *m)
{
    CvMemory *old = ds->memory;
    ds->memory = cv_memory_ref(m);
    cv_memory_unref(old);
}

int cv_dataset_traverse_owned(const CvDataset *ds, long holders, CvVisit visit, void *arg)
{
    /* The last input is walked by the loop, not by recursion, so a long
     * chain of unary stages costs no stack. */
    CvDataset *d = (CvDataset *)ds; /* refcount is atomic: read only */
    while (d && cv_dataset_structural_refs(d) == holders) {
        int rc = d->kernel->traverse ? d->kernel->traverse(d, visit, arg) : 0;
        for (int i = 0; !rc && i + 1 < d->num_inputs; i++)
            rc = cv_dataset_traverse_owned(d->inputs[i], 1, visit, arg);
        if (rc)
            return rc;
        d = d->num_inputs > 0 ? d->inputs[d->num_inputs - 1] : NULL;
        holders = 1;
    }
    return 0;
}

int64_t cv_dataset_cardinality(const CvDataset *ds)
{
    return ds->kernel->cardinality(ds);
}

void *cv_iterator_alloc(const CvDataset *ds, size_t size)
{
    CvIterator *it = calloc(1, size);
    if (!it)
        return NULL;
    it->kernel = ds->kernel;
    it->dataset = (CvDataset *)ds;
    atomic_fetch_add_explicit(&it->dataset->refcount, CV_DATASET_ITERATOR_REF, memory_order_relaxed);
    return it;
}

void cv_iterator_free(CvIterator *it)
{
    if (it->unwatch)
        it->unwatch(it); /* no-op unless watched and not yet unwatched */
    dataset_release(it->dataset, CV_DATASET_ITERATOR_REF);
    free(it);
}

CvStatus cv_iterator_make(const CvDataset *ds, CvIterator **out)
{
    *out = NULL;
    CvStatus s = ds->kernel->make_iterator(ds, out);
    /* Attached once made: statistics readers (stats() on another thread,
     * the autotuner on pool threads) measure attached iterators at any
     * time, so they must never see one whose stage or locks are still being
     * set up (inner iterators are made while the pipeline runs). */
    CvPool *pool = cv_pool_current();
    CvPoolWatcher watcher = pool ? cv_pool_watcher(pool) : (CvPoolWatcher){0};
    if (!s && *out && watcher.iterator_made)
        watcher.iterator_made(watcher.arg, *out);
    return s;
}

void cv_iterator_cancel(CvIterator *it)
{
    if (it && it->kernel->cancel)
        it->kernel->cancel(it);
}

void cv_iterator_destroy(CvIterator *it)
{
    if (!it)
        return;
    if (it->unwatch)
        it->unwatch(it); /* first: statistics readers never see a stage being torn down */
    it->kernel->destroy(it);
}

CvStatus cv_iterator_save(CvIterator *it, CvStateWriter *w)
{
    if (!it->kernel->save)
        return cv_error(CV_UNIMPLEMENTED,
                        "the iterator of %s cannot be saved: this stage has no exact resume",
                        it->kernel->name);
    size_t frame = 0;
    cv_state_begin(w, it->kernel->name, &frame);
    CvStatus s = it->kernel->save(it, w);
    CvStatus written = cv_state_end(w, frame);
    if (s) {
        cv_status_free(written);
        return s;
    }
    return written;
}

CvStatus cv_iterator_restore(CvIterator *it, CvStateReader *r)
{
    if (!it->kernel->restore)
        return cv_error(CV_UNIMPLEMENTED,
                        "the iterator of %s cannot be restored: this stage has no exact resume",
                        it->kernel->name);
    size_t end = 0;
    CvStatus s = cv_state_enter(r, it->kernel->name, &end);
    if (!s)
        s = it->kernel->restore(it, r);
    if (!s)
        s = cv_state_leave(r, end);
    return s;
}

CvStatus cv_iterator_skip(CvIterator *it, int64_t n, int64_t *skipped)
{
    *skipped = 0;
    if (it->kernel->skip)
        return it->kernel->skip(it, n, skipped);
    while (*skipped < n) {
        CvElement e = {0};
        bool end = false;
        CvStatus s = cv_iterator_next(it, &e, &end);
        if (s || end)
            return s;
        cv_element_clear(&e);
        ++*skipped;
    }
    return CV_STATUS_OK;
}

CvStatus cv_unary_iterator_save(CvIterator *it, CvStateWriter *w)
{
    return cv_iterator_save(((CvUnaryIterator *)it)->input, w);
}

CvStatus cv_unary_iterator_restore(CvIterator *it, CvStateReader *r)
{
    return cv_iterator_restore(((CvUnaryIterator *)it)->input, r);
}

CvStatus cv_unary_iterator_new(const CvDataset *ds, size_t size, CvIterator **out)
{
    CvUnaryIterator *it = cv_iterator_alloc(ds, size);
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

void cv_unary_iterator_cancel(CvIterator *it)
{
    cv_iterator_cancel(((CvUnaryIterator *)it)->input);
}

void cv_unary_iterator_destroy(CvIterator *it)
{
    cv_iterator_destroy(((CvUnaryIterator *)it)->input);
    cv_iterator_free(it);
}

static _Thread_local CvStopReason stop_reason;

CvStopReason cv_stop_reason(void)
{
    return stop_reason;
}

CvStopReason cv_set_stop_reason(CvStopReason reason)
{
    CvStopReason prev = stop_reason;
    stop_reason = reason;
    return prev;
}
