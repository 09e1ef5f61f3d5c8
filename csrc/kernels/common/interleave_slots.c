/* interleave's slots and marks: see interleave_slots.h. */
#include "kernels/common/interleave_slots.h"

#include <stdlib.h>

/* ------------------------------------------------------------------ marks */

/* it's frame into w, unless an earlier one failed (*unmarkable). A failure
 * is kept in w->error and stops marking. */
void cv_interleave_mark_take(CvStateWriter *w, CvIterator *it, bool *unmarkable)
{
    cv_state_writer_reset(w);
    if (*unmarkable)
        return;
    CvStatus s = cv_iterator_save(it, w);
    if (s) {
        cv_state_writer_reset(w);
        w->error = s;
        *unmarkable = true;
    }
}

/* The consumer took what `theirs` marks: it becomes `mine` (buffers are
 * swapped, not copied). After a failure (*status) later marks are empty and
 * ignored; a failed mark comes before them, as marking stops there. */
void cv_interleave_mark_accept(CvStateWriter *mine, CvStatus *status, CvStateWriter *theirs)
{
    if (*status)
        return;
    CvStateWriter t = *mine;
    *mine = *theirs;
    *theirs = t;
    *status = mine->error;
    mine->error = NULL;
}

void cv_interleave_mark_free(CvStateWriter *w)
{
    cv_state_writer_clear(w);
}

/* ------------------------------------------------------------------ slots */

InterleaveSlot *cv_interleave_slot_new(int ring_size, int limit)
{
    InterleaveSlot *slot = calloc(1, sizeof(*slot));
    if (slot)
        slot->limit = limit;
    if (slot && ring_size > 0) {
        slot->ring = calloc((size_t)ring_size, sizeof(InterleaveResult));
        slot->marks = calloc((size_t)ring_size, sizeof(CvStateWriter));
        if (!slot->ring || !slot->marks) {
            free(slot->ring);
            free(slot->marks);
            free(slot);
            slot = NULL;
        }
    }
    return slot;
}

void cv_interleave_slot_destroy(InterleaveIterator *it, InterleaveSlot *slot)
{
    if (!slot)
        return;
    for (int i = 0; i < slot->count; i++) {
        InterleaveResult *r = &slot->ring[(slot->head + i) % it->ring_size];
        cv_status_free(r->status);
        cv_element_clear(&r->element);
        cv_memory_holder_release(&it->holder, r->bytes);
        atomic_fetch_sub_explicit(&it->held, r->bytes, memory_order_relaxed);
    }
    cv_status_free(slot->open_status);
    cv_iterator_destroy(slot->inner);
    cv_dataset_unref(slot->inner_ds); /* after its iterator */
    cv_element_clear(&slot->outer);
    for (int i = 0; i < slot->marks_used; i++)
        cv_interleave_mark_free(&slot->marks[i]);
    cv_interleave_mark_free(&slot->input_mark);
    cv_interleave_mark_free(&slot->mark);
    cv_status_free(slot->mark_status);
    free(slot->marks);
    free(slot->ring);
    free(slot);
}

/* Call map_func on slot->outer and make the inner iterator. */
CvStatus cv_interleave_make_inner(InterleaveIterator *it, InterleaveSlot *slot)
{
    const InterleaveParams *p = params_of(it);
    CvDataset *inner_ds = NULL;
    CvStatus s = p->fn.call(p->fn.ctx, &slot->outer, &inner_ds);
    if (!s) {
        /* The slot keeps the dataset (not only its iterator): a dataset
         * reached this way then counts a holder that the binding's gc
         * cannot account for, so nothing it runs is reported while it runs. */
        s = cv_iterator_make(inner_ds, &slot->inner);
        CvDataset *old = slot->inner_ds;
        slot->inner_ds = inner_ds;
        cv_dataset_unref(old); /* last: it may run Python code (a collection) */
    }
    return s;
}

/* Pull the next input element into slot->outer and open its inner iterator.
 * In parallel mode the input's frame right after the pull (an error's
 * included) goes into slot->input_mark. Never called concurrently (the
 * consumer in sequential mode, one worker at a time in parallel mode). */
CvStatus cv_interleave_open_inner(InterleaveIterator *it, InterleaveSlot *slot, bool parallel, bool *input_end)
{
    CvStatus s = cv_iterator_next(it->input, &slot->outer, input_end);
    if (!s && *input_end)
        return s;
    if (parallel)
        cv_interleave_mark_take(&slot->input_mark, it->input, &it->input_unmarkable);
    return s ? s : cv_interleave_make_inner(it, slot);
}

/* Under mu: cancel() reads the cycle from other threads. */
void cv_interleave_place_slot(InterleaveIterator *it, int64_t position, InterleaveSlot *slot)
{
    pthread_mutex_lock(&it->mu);
    it->cycle[position] = slot;
    if (slot)
        slot->in_cycle = true;
    if (slot && it->cancelled)
        cv_iterator_cancel(slot->inner);
    pthread_mutex_unlock(&it->mu);
}
