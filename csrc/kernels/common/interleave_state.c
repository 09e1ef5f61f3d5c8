/* interleave's exact resume: see interleave_state.h. Split from
 * interleave.c (the file limit). */
#include "kernels/common/interleave_state.h"

#include "kernels/common/interleave_slots.h"

#include "io/crc32c.h"

static void put_u64_at(CvStateWriter *w, size_t at, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        w->data[at + (size_t)i] = (char)(v >> (8 * i));
}

/* The consumer's view (see DESIGN), after the CRC-32C and length of the
 * rest (written in place once it is there): cycle_length, cycle and block
 * position, end of input; per cycle position 0 (empty), 1 (fresh: its outer
 * element) or 2 (its outer element, the positions to pass over after
 * inner's frame, whether the last is an error, that frame); the input's
 * frame.
 * Sequential, or parallel before the first next(): the live iterators are
 * where the consumer is. Otherwise the marks of what it took. All fields
 * read here are the consumer's: no lock. */
CvStatus cv_interleave_save(CvIterator *base, CvStateWriter *w)
{
    InterleaveIterator *it = (InterleaveIterator *)base;
    const InterleaveParams *p = params_of(it);
    bool marks = p->num_workers > 0 && it->started;
    CvStatus s = CV_STATUS_OK;
    size_t start = w->len;
    cv_state_put_u64(w, 0); /* the checksum */
    cv_state_put_u64(w, 0); /* the length */
    cv_state_put_i64(w, p->cycle_length);
    cv_state_put_i64(w, it->cycle_index);
    cv_state_put_i64(w, it->block_index);
    cv_state_put_i64(w, it->end_of_input);
    for (int64_t k = 0; !s && k < p->cycle_length; k++) {
        const InterleaveSlot *slot = it->cycle[k];
        if (!slot) {
            cv_state_put_i64(w, 0);
        } else if (!marks) {
            cv_state_put_i64(w, 2);
            cv_state_put_element(w, &slot->outer);
            cv_state_put_i64(w, 0);
            cv_state_put_i64(w, 0);
            s = cv_iterator_save(slot->inner, w);
        } else if (slot->mark_status) {
            s = cv_status_copy(slot->mark_status);
        } else {
            cv_state_put_i64(w, slot->marked ? 2 : 1);
            cv_state_put_element(w, &slot->outer);
            if (slot->marked) {
                cv_state_put_i64(w, slot->taken);
                cv_state_put_i64(w, slot->taken_error);
                cv_state_put_raw(w, slot->mark.data, slot->mark.len);
            }
        }
    }
    if (!s && !marks)
        s = cv_iterator_save(it->input, w);
    else if (!s && it->input_mark_status)
        s = cv_status_copy(it->input_mark_status);
    else if (!s)
        cv_state_put_raw(w, it->input_mark.data, it->input_mark.len);
    if (s || w->error)
        return s; /* a writer's error: cv_state_end returns it */
    size_t contents = start + 16;
    put_u64_at(w, start, cv_crc32c(w->data + contents, w->len - contents));
    put_u64_at(w, start + 8, w->len - contents);
    return CV_STATUS_OK;
}

/* Put a restored inner iterator `n` positions on, the last an error when
 * error_last. Only that one was an error when saved (a run ends at an
 * error); one met earlier was not there then (a transient failure): it is
 * counted as the position it takes, as the consumer would have. The last
 * position is passed with next(), whatever it gives now. */
static CvStatus pass_over(CvIterator *inner, int64_t n, bool error_last)
{
    int64_t before = n - error_last;
    while (before > 0) {
        int64_t skipped = 0;
        CvStatus s = cv_iterator_skip(inner, before, &skipped);
        before -= skipped;
        if (s) {
            cv_status_free(s);
            before--;
        } else if (before > 0) {
            return cv_error(CV_FAILED_PRECONDITION,
                            "interleave: an inner dataset ended before its saved position (did "
                            "its data change since the state was saved?)");
        }
    }
    if (error_last) {
        CvElement e = {0};
        bool end = false;
        cv_status_free(cv_iterator_next(inner, &e, &end));
        cv_element_clear(&e);
    }
    return CV_STATUS_OK;
}

/* On a new iterator: every open slot's inner iterator is made again by
 * map_func from its saved outer element, then put at its frame. On an error
 * the binding destroys the iterator (slots placed so far included). */
CvStatus cv_interleave_restore(CvIterator *base, CvStateReader *r)
{
    InterleaveIterator *it = (InterleaveIterator *)base;
    const InterleaveParams *p = params_of(it);
    int64_t cycle_length = 0, end_of_input = 0, len = 0;
    uint64_t crc = 0;
    CvStatus s = cv_state_get_u64(r, &crc);
    if (!s)
        s = cv_state_get_range(r, "interleave's length", 0, (int64_t)(r->len - r->pos), &len);
    if (!s && crc != cv_crc32c(r->data + r->pos, (size_t)len))
        s = cv_state_corrupt("interleave's checksum does not match its contents");
    size_t end = r->pos + (size_t)len;
    if (!s)
        s = cv_state_get_i64(r, &cycle_length);
    if (!s && cycle_length != p->cycle_length)
        s = cv_error(CV_FAILED_PRECONDITION,
                     "the saved state is of an interleave with cycle_length %lld, this one has "
                     "%lld (cycle_length=AUTOTUNE follows the machine's CPU count: pass it "
                     "explicitly to restore on another machine)",
                     (long long)cycle_length, (long long)p->cycle_length);
    if (!s)
        s = cv_state_get_range(r, "interleave's cycle position", 0, p->cycle_length - 1,
                               &it->cycle_index);
    if (!s)
        s = cv_state_get_range(r, "interleave's block position", 0, p->block_length - 1,
                               &it->block_index);
    if (!s)
        s = cv_state_get_range(r, "interleave's end of input", 0, 1, &end_of_input);
    for (int64_t k = 0; !s && k < p->cycle_length; k++) {
        int64_t kind = 0;
        if ((s = cv_state_get_range(r, "interleave's slot kind", 0, 2, &kind)) || kind == 0)
            continue;
        InterleaveSlot *slot = cv_interleave_slot_new(it->ring_size, it->min_limit);
        if (!slot) {
            s = cv_error_nomem();
            break;
        }
        slot->marked = kind == 2;
        int64_t pass = 0, error_last = 0;
        s = cv_state_get_element(r, &slot->outer);
        if (!s && kind == 2 &&
            !(s = cv_state_get_range(r, "interleave's positions past a mark", 0,
                                     CV_INTERLEAVE_MAX_BUFFER, &pass)))
            s = cv_state_get_range(r, "interleave's error flag", 0, pass > 0, &error_last);
        if (!s && (s = cv_interleave_make_inner(it, slot))) /* the user's error, as it was raised */
            s = cv_status_prefix(s, "interleave: map_func, called again on a saved element "
                                 "to restore: ");
        if (!s && kind == 2 && !(s = cv_iterator_restore(slot->inner, r)))
            s = pass_over(slot->inner, pass, error_last != 0);
        if (!s && kind == 1) /* as a slot opened afresh: its I/O starts now */
            cv_iterator_prepare(slot->inner);
        if (s) {
            cv_interleave_slot_destroy(it, slot);
            break;
        }
        cv_interleave_place_slot(it, k, slot);
        it->num_open++;
    }
    if (!s)
        s = cv_iterator_restore(it->input, r);
    if (!s && r->pos != end)
        s = cv_state_corrupt("interleave's contents do not match their length");
    if (!s) {
        it->end_of_input = end_of_input != 0;
        it->input_exhausted = it->end_of_input; /* no futures to open */
    }
    return s;
}
