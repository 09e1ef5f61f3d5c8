/* A stage's exact resume: arming, marks handed to the kernel, save and
 * restore (see "Exact resume" in stage.h). The consumer's, but for
 * input_mu, which keeps the turns from pulling while a save looks. */
#include "core/stage.h"

#include <stdlib.h>

void cv_stage_arm(CvStage *st)
{
    cv_stage_fast_stop(st); /* the next unit takes the stage's path, which marks */
    pthread_mutex_lock(&st->input_mu);
    st->armed = true;
    pthread_mutex_unlock(&st->input_mu);
}

bool cv_stage_take_mark(CvStage *st, CvStateWriter *into)
{
    cv_stage_take_pending_mark(st);
    if (!st->last_marked)
        return false;
    CvStateWriter mark = *into;
    *into = st->last_mark;
    st->last_mark = mark;
    st->last_marked = false;
    return true;
}

/* Consumer: input_mu held (no turn pulls), wait until every unit pulled
 * and not handed out, [run_next, issued), has its result. */
static CvStatus wait_in_flight(CvStage *st)
{
    CvStatus s = CV_STATUS_OK;
    pthread_mutex_lock(&st->mu);
    for (;;) {
        uint64_t seq = st->run_next;
        while (seq < st->issued && st->slots[seq % (uint64_t)st->max_capacity].ready)
            seq++;
        if (seq == st->issued)
            break;
        if (st->cancelled) {
            s = cv_error(CV_CANCELLED, "%s: the iterator was cancelled", st->name);
            break;
        }
        st->consumer_waiting = true;
        s = cv_wait(&st->ready_cv, &st->mu);
        st->consumer_waiting = false;
        if (s)
            break;
    }
    pthread_mutex_unlock(&st->mu);
    return s;
}

/* Set by a save that left a stage unarmed (it will quiesce again): a stage
 * above whose position includes it takes no marks either, or every pull of
 * it would quiesce the stage below (deterministic=False under a prefetch). */
static _Thread_local bool quiesces_again;
/* Bytes of in-flight results that the saves below wrote into the position
 * being saved: gone from the next save (they get handed out), so not held
 * against CV_STAGE_MARK_LIMIT (a first save below a prefetch is big). */
static _Thread_local size_t in_flight_bytes;

/* The fallback: quiesce, write the results pulled but not handed out and
 * the input's position now, and arm the stage when marks can take over
 * (deterministic, small position, no stage below that quiesces): the
 * position is then `base`, the mark of unit issued - 1. */
static CvStatus save_quiesced(CvStage *st, CvStateWriter *w)
{
    bool outer = quiesces_again;
    size_t outer_bytes = in_flight_bytes, mine = 0;
    quiesces_again = false;
    in_flight_bytes = 0;
    pthread_mutex_lock(&st->input_mu);
    CvStatus s = wait_in_flight(st);
    if (s)
        goto cleanup;
    /* Slots [run_next, issued) are ready and no turn touches them now. */
    mine = w->len;
    cv_state_put_u64(w, st->issued - st->run_next);
    for (uint64_t seq = st->run_next; seq < st->issued; seq++) {
        const CvStageSlot *slot = &st->slots[seq % (uint64_t)st->max_capacity];
        cv_stage_put_status(w, slot->status);
        if (!slot->status)
            cv_state_put_element(w, &slot->element);
    }
    mine = w->len - mine;
    cv_state_writer_reset(&st->base);
    st->has_base = false;
    if ((s = st->ops->save_input(st->owner, &st->base)))
        goto cleanup;
    if (st->base.error) {
        s = cv_status_copy(st->base.error);
        goto cleanup;
    }
    cv_state_put_raw(w, st->base.data, st->base.len);
    st->has_base = true;
    st->base_seq = st->issued;
    st->armed = st->deterministic && st->base.len - in_flight_bytes <= CV_STAGE_MARK_LIMIT &&
                !quiesces_again;
cleanup:
    cv_stage_unlock_input(st);
    quiesces_again = outer || !st->armed;
    in_flight_bytes += outer_bytes + mine;
    return s;
}

CvStatus cv_stage_save(CvStage *st, CvStateWriter *w)
{
    cv_stage_fast_stop(st); /* the position changes kind (base or marks): the stage's path next */
    if (!st->ops->save_input)
        return cv_error(CV_UNIMPLEMENTED, "the iterator of %s cannot be saved", st->name);
    cv_stage_take_pending_mark(st); /* calls save_input */
    if (st->restored_next < st->nrestored) { /* base follows the restored results */
        size_t start = w->len;
        cv_state_put_u64(w, (uint64_t)(st->nrestored - st->restored_next));
        for (int i = st->restored_next; i < st->nrestored; i++) {
            cv_stage_put_status(w, st->restored[i].status);
            if (!st->restored[i].status)
                cv_state_put_element(w, &st->restored[i].element);
        }
        in_flight_bytes += w->len - start;
        cv_state_put_raw(w, st->base.data, st->base.len);
        quiesces_again |= !st->armed;
        return CV_STATUS_OK;
    }
    const CvStateWriter *mark = st->has_base && st->run_next == st->base_seq ? &st->base
                              : st->last_marked ? &st->last_mark : NULL;
    if (!mark)
        return save_quiesced(st, w);
    if (mark->error)
        return cv_status_copy(mark->error);
    cv_state_put_u64(w, 0);
    cv_state_put_raw(w, mark->data, mark->len);
    quiesces_again |= !st->armed;
    return CV_STATUS_OK;
}

CvStatus cv_stage_restore(CvStage *st, CvStateReader *r)
{
    cv_stage_fast_stop(st);
    st->mark_pending = false;
    int64_t n = 0;
    size_t first = r->pos;
    CvStatus s = cv_state_get_range(r, "results in flight", 0, INT32_MAX, &n);
    if (s)
        return s;
    if (n > 0) {
        /* Each result takes at least 8 bytes: bound the allocation by the
         * state. Restored results are not charged to the RAM budget (they
         * were when saved, and are handed out before any new one). */
        if ((uint64_t)n > (r->len - r->pos) / 8)
            return cv_state_corrupt("more results in flight than bytes");
        if (!(st->restored = calloc((size_t)n, sizeof(CvStageSlot))))
            return cv_error_nomem();
        st->nrestored = (int)n;
        for (int i = 0; i < st->nrestored && !s; i++) {
            s = cv_stage_get_status(r, &st->restored[i].status);
            if (!s && !st->restored[i].status)
                s = cv_state_get_element(r, &st->restored[i].element);
        }
        if (s)
            return s; /* the rest is freed with the stage */
    }
    size_t start = r->pos, mine = r->pos - first, outer_bytes = in_flight_bytes;
    bool outer = quiesces_again;
    quiesces_again = false;
    in_flight_bytes = 0;
    s = st->ops->restore_input(st->owner, r);
    bool below = quiesces_again;
    size_t below_bytes = in_flight_bytes;
    quiesces_again = outer;
    in_flight_bytes = outer_bytes + mine + below_bytes;
    if (s)
        return s;
    /* The position restored is the base: the mark of what comes before
     * unit 0 of the slots. */
    cv_state_writer_reset(&st->base);
    cv_state_put_raw(&st->base, r->data + start, r->pos - start);
    if (st->base.error)
        return cv_status_copy(st->base.error);
    st->has_base = true;
    st->base_seq = 0;
    st->armed = st->deterministic && st->base.len - below_bytes <= CV_STAGE_MARK_LIMIT && !below;
    quiesces_again = outer || !st->armed;
    return CV_STATUS_OK;
}
