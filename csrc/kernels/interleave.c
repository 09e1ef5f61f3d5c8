/* interleave(map_func, cycle_length, block_length, num_parallel_calls,
 *            deterministic)
 *
 * DESIGN
 * map_func turns each input element into an inner dataset; the output takes
 * block_length elements from each of cycle_length open inner iterators in
 * turn. The order is tf.data's exactly (tfdata-semantics.md 3.2): a slot whose
 * inner iterator ends is emptied, the cycle moves on, and the slot is refilled
 * from the input only when the cycle comes back to it.
 *
 * Sequential (num_parallel_calls == 0): the consumer runs that algorithm
 * directly.
 *
 * Parallel: the consumer runs the same algorithm, over Slots whose inner
 * iterators turns on the pipeline's pool (core/pool.h) advance ahead of it into small per-slot buffers
 * ({status, element} or an end marker). Workers also open "future" slots
 * ahead of need (pull the input, call map_func, make the iterator, prefetch),
 * in input order, up to max_futures plus the cycle's empty positions; the
 * consumer takes them in that order when the cycle needs a new slot. So open
 * iterators (and file descriptors) stay bounded by cycle_length +
 * max_futures. Each future's inner iterator is prepared once made
 * (cv_iterator_prepare: a file reader opens its file), outside the
 * serialised pull and map_func, so the read-ahead of all the cycle's files
 * runs at once, not only of the few a worker is in; futures are opened
 * before slots are read ahead (one worker opening at a time), so the files
 * of the next cycle are in flight while this one is read. (Sequential mode calls
 * next() right after opening: nothing to prepare.) With deterministic == false the
 * consumer takes any buffered element of any open slot, keeping each inner
 * dataset's own order.
 *
 * Errors: an error from an inner iterator is delivered in its turn without
 * advancing the block (the inner iterator goes on afterwards); an error from
 * the input or from map_func is delivered when the cycle would have opened
 * that slot. Both as in tf.data.
 *
 * Memory: results are charged to the RAM budget when a worker stores a run,
 * released as the consumer takes them. With AUTOTUNE a run waits for room
 * unless the consumer is starved; else a result that does not fit becomes a
 * RESOURCE_EXHAUSTED error in its place (dropped), delivered in its turn.
 *
 * The kernel is a task of the pool, at most num_workers turns at once: a
 * turn reads ahead one slot or opens one future, then ends; with nothing to
 * do it goes idle until the consumer makes room (pop_result, take_future
 * resubmit it).
 *
 * AUTOTUNE (issue 26): the turns are counted as a stage's (interleave_turn),
 * so the autotuner models, climbs and tries the interleave as it does a map
 * (core/autotune.h), limit 0 included: inline, the task is paused and the
 * consumer runs the same turns itself when it finds nothing to take, on the
 * same slots, marks and futures. Nothing changes mode, so order, values,
 * errors and saved states are those of the parallel interleave; a turn of
 * the pool's still running at the switch just finishes beside the
 * consumer's. It starts parallel (no start probe): a cycle of files must
 * open at once. The inline turns cost the marks and buffering the sequential
 * algorithm does without (4-element in-memory inner datasets: 0.7-0.9 of
 * its rate, against 0.3 at 12 workers).
 *
 * Exact resume (core/iterator_state.h): the state is the consumer's view, as the
 * sequential algorithm has it after the last element handed out: cycle and
 * block position, the end of input, for each open slot its outer element
 * (map_func's argument, kept in the slot: restore calls map_func on it
 * again) and its inner iterator's frame, then the input's frame.
 * Sequential mode saves the live iterators directly. In parallel mode the
 * inner iterators and the input run ahead of the consumer, so workers keep
 * marks: before each run of results, the inner iterator's frame
 * (cv_iterator_save into a reusable per-slot writer), and after pulling each
 * future's outer element, the input's frame. Taking a run's first result
 * (or a future) makes its mark the consumer's, and the consumer counts the
 * results it took since. An inner's position is then its mark plus that
 * count, which restore passes over (cv_iterator_skip: a seek for indexed
 * records, else at most one run read again); a run ends at an error, so
 * only the last position counted can be one, and restore passes it with
 * one next(). A mark per result instead cost 20-33% more CPU reading
 * 100-byte records (docs/resume.md). Results and futures read ahead are not in the
 * state: they are read again after restore. A slot nothing was taken from
 * yet saves as fresh (map_func only). An inner or input that cannot be
 * saved is found at its first mark; marking it stops there, and save()
 * raises its error. deterministic == false saves the same way: exact for
 * what was handed out (nothing lost, nothing repeated); the order after
 * restore is as free as in any run. Outer elements are data that no range
 * check can validate (a damaged one would open another inner dataset), so
 * the frame's contents carry a CRC-32C: damage is DATA_LOSS.
 *
 * Locks: mu guards everything below "parallel only"; it is never held while
 * calling into the input, map_func or an inner iterator, except cancel(),
 * which is allowed to take the inner locks (inner code never takes mu).
 * Inner datasets are created at run time and may hold threads of their own,
 * so interleave always declares may_block (next() runs without the GIL).
 */
#include <stdlib.h>
#include <string.h>

#include "core/pipeline.h" /* cv_parallelism */
#include "core/pool.h"
#include "core/stats.h"
#include "kernels/common/interleave_slots.h"
#include "kernels/common/interleave_state.h"
#include "kernels/kernels.h"

#define INTERLEAVE_KNOB "lower interleave's cycle_length or block_length"

static void advance_cycle(InterleaveIterator *it)
{
    it->block_index = 0;
    it->cycle_index = (it->cycle_index + 1) % params_of(it)->cycle_length;
}

/* An element was taken from the current slot. */
/* An inner dataset's error names where it came from ("TFRecordDataset inside interleave:
 * gone.tfrecord; No such file or directory"), as a stage's own error names the stage; a
 * cancellation passes as is. Takes and returns ownership of s; any thread. */
static CvStatus from_inner(const CvIterator *inner, CvStatus s)
{
    if (!s || s->code == CV_CANCELLED)
        return s;
    return cv_status_prefix(s, "%sDataset inside interleave: ", inner->kernel->name);
}

static void advance_block(InterleaveIterator *it)
{
    if (++it->block_index == params_of(it)->block_length)
        advance_cycle(it);
}

/* ------------------------------------------------------------ sequential */

static CvStatus sequential_next(InterleaveIterator *it, CvElement *out, bool *end)
{
    for (;;) {
        if (it->end_of_input && it->num_open == 0) {
            *end = true;
            return CV_STATUS_OK;
        }
        InterleaveSlot **current = &it->cycle[it->cycle_index];
        if (*current) {
            bool inner_end = false;
            CvStatus s = cv_iterator_next((*current)->inner, out, &inner_end);
            if (s)
                return from_inner((*current)->inner, s);
            if (!inner_end) {
                advance_block(it);
                *end = false;
                return CV_STATUS_OK;
            }
            InterleaveSlot *ended = *current;
            cv_interleave_place_slot(it, it->cycle_index, NULL);
            cv_interleave_slot_destroy(it, ended);
            it->num_open--;
            advance_cycle(it);
        } else if (!it->end_of_input) {
            InterleaveSlot *slot = cv_interleave_slot_new(0, 0);
            if (!slot)
                return cv_error_nomem();
            bool input_end = false;
            CvStatus s = cv_interleave_open_inner(it, slot, false, &input_end);
            if (s || input_end) {
                cv_interleave_slot_destroy(it, slot);
                it->end_of_input = input_end;
                if (s)
                    return s;
                continue;
            }
            cv_interleave_place_slot(it, it->cycle_index, slot);
            it->num_open++;
        } else {
            advance_cycle(it);
        }
    }
}

/* -------------------------------------------------------------- parallel */

/* mu held: a slot a worker can advance now, current ones first (from the
 * consumer's position), then futures in input order. */
static InterleaveSlot *pick_work(InterleaveIterator *it)
{
    int64_t n = params_of(it)->cycle_length;
    for (int64_t k = 0; k < n; k++) {
        InterleaveSlot *slot = it->cycle[(it->cycle_index + k) % n];
        if (slot && !slot->busy && !slot->ended && slot->count <= slot->limit / 2)
            return slot;
    }
    for (int k = 0; k < it->future_count; k++) {
        InterleaveSlot *slot = it->futures[(it->future_head + k) % it->future_cap];
        if (!slot->busy && !slot->ended && slot->count <= slot->limit / 2)
            return slot;
    }
    return NULL;
}

/* No lock held; the slot is ours (busy). Read up to `room` (> 0) results
 * ahead, for the ring positions from `tail` on, marking the run first: stop
 * at the end, at an error, or when CV_INTERLEAVE_PUBLISH_NS have passed (seen
 * at the next power of two of results read: at most twice that long). */
static int read_ahead(InterleaveSlot *slot, int tail, InterleaveResult *run, int room,
                      size_t *bytes)
{
    int got = 0;
    int64_t started = cv_now_ns();
    *bytes = 0;
    cv_interleave_mark_take(&slot->marks[tail], slot->inner, &slot->unmarkable);
    while (got < room) {
        InterleaveResult *r = &run[got++];
        bool inner_end = false;
        *r = (InterleaveResult){0};
        r->run_start = got == 1;
        r->status = from_inner(slot->inner, cv_iterator_next(slot->inner, &r->element, &inner_end));
        r->end = !r->status && inner_end;
        if (r->end || r->status)
            break;
        *bytes += r->bytes = cv_element_bytes(&r->element);
        /* The clock at powers of two only: a read per small record cost
         * more than the statistics do (stage.c chunks its pulls alike). */
        if ((got & (got - 1)) == 0 && cv_now_ns() - started > CV_INTERLEAVE_PUBLISH_NS)
            break;
    }
    return got;
}

/* May a run that does not fit wait for room? With AUTOTUNE parallelism, while
 * the consumer is not starved (it frees room as it goes on); a starved one
 * may wait for this very run (-1: cancelled, 0: charge it, 1: wait). */
static int may_wait_for_room(void *arg)
{
    InterleaveIterator *it = arg;
    pthread_mutex_lock(&it->mu);
    int may = it->cancelled ? -1 : it->starved ? 0 : 1;
    pthread_mutex_unlock(&it->mu);
    return may;
}

/* No lock held: charge a run's results to the budget, all at once when they
 * fit (with AUTOTUNE parallelism, after waiting for room: the budget is its
 * ceiling); otherwise one by one, and a result that does not fit becomes
 * the budget's error in its place. */
static void charge_run(InterleaveIterator *it, InterleaveResult *run, int got, size_t total)
{
    if (total == 0)
        return;
    if (params_of(it)->tune_workers
            ? cv_memory_holder_charge_waiting(&it->holder, total, CV_MEMORY_POLL_NS, may_wait_for_room, it)
            : cv_memory_holder_try_charge(&it->holder, total)) {
        atomic_fetch_add_explicit(&it->held, total, memory_order_relaxed);
        return;
    }
    for (int i = 0; i < got; i++) {
        InterleaveResult *r = &run[i];
        if (r->bytes == 0)
            continue;
        if (cv_memory_holder_try_charge(&it->holder, r->bytes)) {
            atomic_fetch_add_explicit(&it->held, r->bytes, memory_order_relaxed);
            continue;
        }
        cv_status_free(r->status);
        r->status = cv_memory_holder_exceeded(&it->holder, r->bytes);
        cv_element_clear(&r->element);
        r->bytes = 0;
        r->dropped = true;
    }
}

/* mu held: how many futures to keep open: max_futures, plus one per empty
 * position of the cycle before the end of the input (the consumer fills
 * those from the futures), so open iterators stay within cycle_length +
 * max_futures. */
static int futures_wanted(const InterleaveIterator *it)
{
    int64_t empty = it->end_of_input ? 0 : params_of(it)->cycle_length - it->num_open;
    return it->max_futures + (int)empty;
}

/* One turn:
 * 1. Open the next future slot, if there is room, input left and no other
 *    worker opening one.
 * 2. Otherwise advance a slot: read a run of results with no lock held,
 *    then buffer them all at once.
 * 3. Otherwise go idle until the consumer makes room.
 * *elements: the inner elements it read. */
static CvTurn take_turn(InterleaveIterator *it, int *elements)
{
    InterleaveResult run[CV_INTERLEAVE_MAX_BUFFER];
    pthread_mutex_lock(&it->mu);
    if (it->cancelled) {
        pthread_mutex_unlock(&it->mu);
        return CV_TURN_DONE;
    }
    /* Futures come before reading ahead: opening one starts its file's
     * read-ahead (cv_iterator_prepare: a remote GET), while a worker reading
     * a slot may wait for its data. With every worker in a slot, a cycle of
     * 32 filled a few files at a time; with futures opened only for empty
     * positions, a cycle of 16 over remote files at 30 ms first-byte latency
     * read in waves of 16 (benchmarks/README.md, issue 27). One worker opens
     * at a time (`opening`), so the others still read slots meanwhile. */
    bool can_open = !it->opening && !it->input_exhausted && it->future_count < futures_wanted(it);
    InterleaveSlot *slot = can_open ? NULL : pick_work(it);
    if (slot) {
        slot->busy = true;
        int room = slot->limit - slot->count;
        int tail = (slot->head + slot->count) % it->ring_size;
        if (tail >= slot->marks_used)
            slot->marks_used = tail + 1;
        pthread_mutex_unlock(&it->mu);
        size_t bytes = 0;
        int got = read_ahead(slot, tail, run, room, &bytes);
        charge_run(it, run, got, bytes);
        pthread_mutex_lock(&it->mu);
        slot->busy = false;
        for (int i = 0; i < got; i++) {
            slot->ring[(slot->head + slot->count++) % it->ring_size] = run[i];
            if (run[i].end)
                slot->ended = true;
        }
        *elements = got - (run[got - 1].end || run[got - 1].status);
        if (*elements > 0) {
            size_t per = bytes / (size_t)*elements + 1;
            size_t fit = (slot->in_cycle ? it->slot_bytes : CV_INTERLEAVE_SLOT_BYTES) / per;
            slot->limit = fit < (size_t)it->min_limit ? it->min_limit
                          : fit > (size_t)it->ring_size ? it->ring_size : (int)fit;
        }
        pthread_cond_signal(&it->ready_cv);
        pthread_mutex_unlock(&it->mu);
        return CV_TURN_AGAIN;
    }
    if (can_open) {
        it->opening = true;
        pthread_mutex_unlock(&it->mu);
        InterleaveSlot *fresh = cv_interleave_slot_new(it->ring_size, it->min_limit);
        bool input_end = false;
        CvStatus s = fresh ? cv_interleave_open_inner(it, fresh, true, &input_end) : cv_error_nomem();
        pthread_mutex_lock(&it->mu);
        it->opening = false;
        if (!fresh) {
            it->fatal = it->fatal ? it->fatal : s;
            if (it->fatal != s)
                cv_status_free(s);
        } else if (!s && input_end) {
            it->input_exhausted = true;
            cv_interleave_slot_destroy(it, fresh);
        } else {
            if (s) { /* delivered when the cycle would open this slot */
                fresh->open_status = s;
                fresh->ended = true;
            }
            it->futures[(it->future_head + it->future_count++) % it->future_cap] = fresh;
            fresh->busy = !s; /* ours until prepared: no worker reads it meanwhile */
        }
        pthread_cond_signal(&it->ready_cv);
        pthread_mutex_unlock(&it->mu);
        if (fresh && !s && !input_end) {
            /* Start its I/O (a file reader opens its file) after `opening`
             * is released: an open that waits (a remote object's metadata)
             * leaves the next opening to another worker meanwhile. */
            cv_iterator_prepare(fresh->inner);
            pthread_mutex_lock(&it->mu);
            fresh->busy = false;
            pthread_cond_signal(&it->ready_cv); /* an inline consumer may wait to read it */
            pthread_mutex_unlock(&it->mu);
        }
        return CV_TURN_AGAIN;
    }
    pthread_mutex_unlock(&it->mu);
    return CV_TURN_IDLE;
}

/* A turn, on a pool thread or on the consumer's (inline), counted for the
 * autotuner as a stage's turns are (core/stage.h, CvStageCounters): an
 * element read is a unit, opening a future is work with none; time in
 * blocking sections (I/O, map_func's Python) and waiting for the GIL is
 * told apart. The gain rule tries a Python-bound interleave with fewer; one
 * that waits on I/O waits for the GIL too little for it (core/autotune.c,
 * CV_AUTOTUNE_GAIN_HINT). */
static CvTurn interleave_turn(void *arg)
{
    InterleaveIterator *it = arg;
    int64_t start = cv_now_ns(), blocked = cv_blocking_ns(), contended = cv_blocking_contended_ns();
    int elements = 0;
    CvTurn turn = take_turn(it, &elements);
    if (turn == CV_TURN_AGAIN) {
        CvStageCounters *c = &it->counters;
        atomic_fetch_add_explicit(&c->turns, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->units, (uint64_t)elements, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->busy_ns, (uint64_t)(cv_now_ns() - start), memory_order_relaxed);
        atomic_fetch_add_explicit(&c->blocked_ns, (uint64_t)(cv_blocking_ns() - blocked), memory_order_relaxed);
        atomic_fetch_add_explicit(&c->contended_ns, (uint64_t)(cv_blocking_contended_ns() - contended),
                                  memory_order_relaxed);
    }
    return turn;
}

/* mu held, the consumer's, AUTOTUNE only: follow the autotuner's limit.
 * At 0 the task is paused once no turn of it runs (no pool thread wakes or
 * spins for it) and the consumer runs the turns itself; above 0 it is
 * resumed. Returns whether the limit is 0 (inline). */
static bool follow_limit(InterleaveIterator *it)
{
    bool inline_now = atomic_load_explicit(&it->task.limit, memory_order_relaxed) == 0;
    if (inline_now && !it->paused) {
        it->paused = cv_task_pause(&it->task);
    } else if (!inline_now && it->paused) {
        it->paused = false;
        cv_task_resume(&it->task);
    }
    return inline_now;
}

/* mu held: take the oldest future. */
static InterleaveSlot *take_future(InterleaveIterator *it)
{
    InterleaveSlot *slot = it->futures[it->future_head];
    it->future_head = (it->future_head + 1) % it->future_cap;
    it->future_count--;
    cv_interleave_mark_accept(&it->input_mark, &it->input_mark_status, &slot->input_mark);
    cv_task_submit(&it->task); /* room for another future */
    return slot;
}

/* mu held, a future is waiting: open it at `position` of the cycle. A future
 * whose opening failed is consumed instead and its error returned (the
 * position stays empty, as in tf.data). */
static CvStatus open_future_at(InterleaveIterator *it, int64_t position)
{
    InterleaveSlot *fresh = take_future(it);
    CvStatus s = fresh->open_status;
    if (s) {
        fresh->open_status = NULL;
        pthread_mutex_unlock(&it->mu);
        cv_interleave_slot_destroy(it, fresh);
        pthread_mutex_lock(&it->mu);
        return s;
    }
    it->cycle[position] = fresh;
    fresh->in_cycle = true;
    it->num_open++;
    return CV_STATUS_OK;
}

/* mu held; the slot has a buffered result. Pops it into *r. */
static void pop_result(InterleaveIterator *it, InterleaveSlot *slot, InterleaveResult *r)
{
    *r = slot->ring[slot->head];
    slot->ring[slot->head] = (InterleaveResult){0};
    if (!r->end) {
        if (r->run_start) {
            cv_interleave_mark_accept(&slot->mark, &slot->mark_status, &slot->marks[slot->head]);
            slot->taken = 0;
        }
        slot->taken++;
        slot->taken_error = r->status && !r->dropped;
        slot->marked = true;
    }
    cv_memory_holder_release(&it->holder, r->bytes);
    atomic_fetch_sub_explicit(&it->held, r->bytes, memory_order_relaxed);
    slot->head = (slot->head + 1) % it->ring_size;
    slot->count--;
    /* Wake a worker when the slot is down to half its limit, not at every
     * pop: a worker then refills a run, instead of one result per wake-up. */
    if (!slot->ended && slot->count == slot->limit / 2)
        cv_task_submit(&it->task);
}

/* mu held: a slot position whose inner ended is emptied; the slot is freed
 * with mu released (freeing may join the inner iterator's own threads). */
static void retire_slot(InterleaveIterator *it, int64_t position)
{
    InterleaveSlot *slot = it->cycle[position];
    it->cycle[position] = NULL;
    it->num_open--;
    pthread_mutex_unlock(&it->mu);
    cv_interleave_slot_destroy(it, slot);
    pthread_mutex_lock(&it->mu);
}

/* mu held. Deterministic: tf.data's algorithm over buffered slots. Returns
 * true when it produced a result (in *s / *out / *end); false to wait. */
static bool deterministic_step(InterleaveIterator *it, CvElement *out, bool *end, CvStatus *s)
{
    for (;;) {
        if (it->end_of_input && it->num_open == 0) {
            *end = true;
            return true;
        }
        InterleaveSlot *slot = it->cycle[it->cycle_index];
        if (slot) {
            if (slot->count == 0)
                return false;
            InterleaveResult r;
            pop_result(it, slot, &r);
            if (r.end) {
                retire_slot(it, it->cycle_index);
                advance_cycle(it);
                continue;
            }
            *s = r.status;
            if (!r.status) {
                cv_element_move(out, &r.element);
                advance_block(it);
            }
            return true;
        }
        if (!it->end_of_input) {
            if (it->future_count > 0) {
                if ((*s = open_future_at(it, it->cycle_index)))
                    return true;
                continue;
            }
            if (!it->input_exhausted)
                return false;
            it->end_of_input = true;
            continue;
        }
        advance_cycle(it);
    }
}

/* mu held. Non-deterministic: any buffered result of any open slot (each
 * inner dataset keeps its own order); empty positions are refilled from the
 * futures as soon as they can be. */
static bool any_step(InterleaveIterator *it, CvElement *out, bool *end, CvStatus *s)
{
    int64_t n = params_of(it)->cycle_length;
    for (;;) {
        for (int64_t k = 0; k < n && !it->end_of_input; k++) {
            int64_t position = (it->cycle_index + k) % n;
            if (it->cycle[position])
                continue;
            if (it->future_count == 0) {
                if (it->input_exhausted)
                    it->end_of_input = true;
                break;
            }
            if ((*s = open_future_at(it, position)))
                return true;
        }
        if (it->end_of_input && it->num_open == 0) {
            *end = true;
            return true;
        }
        bool retired = false;
        for (int64_t k = 0; k < n; k++) {
            int64_t position = (it->cycle_index + k) % n;
            InterleaveSlot *slot = it->cycle[position];
            if (!slot || slot->count == 0)
                continue;
            InterleaveResult r;
            pop_result(it, slot, &r);
            if (r.end) {
                retire_slot(it, position);
                retired = true;
                break;
            }
            *s = r.status;
            cv_element_move(out, &r.element);
            it->cycle_index = (position + 1) % n;
            return true;
        }
        if (!retired)
            return false;
    }
}

/* The consumer, at the first next(), before any worker runs: the marks of
 * the positions the iterator was made or restored at. */
static void start_marks(InterleaveIterator *it)
{
    int64_t n = params_of(it)->cycle_length;
    cv_interleave_mark_take(&it->input_mark, it->input, &it->input_unmarkable);
    it->input_mark_status = it->input_mark.error;
    it->input_mark.error = NULL;
    for (int64_t k = 0; k < n; k++) {
        InterleaveSlot *slot = it->cycle[k];
        if (!slot || !slot->marked)
            continue;
        cv_interleave_mark_take(&slot->mark, slot->inner, &slot->unmarkable);
        slot->mark_status = slot->mark.error;
        slot->mark.error = NULL;
    }
}

/* mu held: wait for a result. A pool thread (an interleave under a stage)
 * waits in slices too, as the consumer thread does (cv_wait), so that the
 * resubmission below runs however the wait ends. */
static CvStatus wait_slice(InterleaveIterator *it)
{
    if (!cv_pool_on_worker())
        return cv_wait(&it->ready_cv, &it->mu);
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_nsec += 20 * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000L;
    }
    cv_blocking_begin();
    pthread_cond_timedwait(&it->ready_cv, &it->mu, &deadline);
    cv_blocking_end();
    return CV_STATUS_OK;
}

static CvStatus parallel_next(InterleaveIterator *it, CvElement *out, bool *end)
{
    CvStatus s = CV_STATUS_OK;
    bool tried_help = false;
    if (!it->started) /* the consumer's own flag */
        start_marks(it);
    pthread_mutex_lock(&it->mu);
    if (!it->started) {
        it->started = true;
        cv_task_submit(&it->task);
    }
    if (params_of(it)->tune_workers)
        follow_limit(it);
    for (;;) {
        if (it->fatal) {
            s = cv_error(it->fatal->code, "%s", it->fatal->message);
            break;
        }
        if (it->cancelled) {
            s = cv_error(CV_CANCELLED, "ParallelInterleave: the iterator was cancelled");
            break;
        }
        bool done = params_of(it)->deterministic ? deterministic_step(it, out, end, &s)
                                                 : any_step(it, out, end, &s);
        if (done)
            break;
        if (!it->starved) { /* turns waiting for room charge now (may_wait_for_room) */
            it->starved = true;
            if (!it->paused)
                cv_memory_wake(it->holder.memory);
        }
        if (params_of(it)->tune_workers && follow_limit(it)) {
            /* Inline: run the turn here, as the sequential kernel would read
             * (and a turn of the pool's still draining runs beside it). It
             * finds nothing to do only while such a turn holds the slot
             * needed: then wait for that turn. No turn runs the tick. */
            pthread_mutex_unlock(&it->mu);
            CvTurn turn = interleave_turn(it);
            if (!cv_pool_on_worker())
                cv_pool_run_tick(it->task.pool);
            pthread_mutex_lock(&it->mu);
            if (turn != CV_TURN_IDLE)
                continue;
        } else if (!tried_help) { /* on a pool thread (a stage above): run a turn rather than wait */
            pthread_mutex_unlock(&it->mu);
            tried_help = !cv_task_help(&it->task); /* after a turn, help again if need be */
            pthread_mutex_lock(&it->mu);
            continue; /* mu was released: everything must be checked again */
        }
        tried_help = false;
        int64_t waited = cv_now_ns();
        s = wait_slice(it);
        atomic_fetch_add_explicit(&it->counters.wait_ns, (uint64_t)(cv_now_ns() - waited), memory_order_relaxed);
        atomic_fetch_add_explicit(&it->counters.waits, 1, memory_order_relaxed);
        if (s)
            break;
        /* After each wake-up (a result, or a slice gone by): make sure a
         * turn is on its way. Every path that leaves work for the task
         * submits it, yet a consumer on a pool thread was seen waiting here
         * for good under load (twice, under a stage, with the task idle and
         * the pool's workers asleep; not reproduced in isolation); one pool
         * lock per wait insures against it. */
        cv_task_submit(&it->task);
    }
    it->starved = false;
    pthread_mutex_unlock(&it->mu);
    return s;
}

/* ------------------------------------------------------------ the kernel */

static void interleave_free(CvDataset *ds)
{
    InterleaveParams *p = ds->params;
    if (p->fn.release)
        p->fn.release(p->fn.ctx);
    pthread_mutex_destroy(&p->live_mu);
    free(p);
}

/* map_func, then the inner datasets of the live iterators' slots (cycle and
 * futures) held by their slot alone, as owned parts: the caller owns this
 * dataset, so every pipeline running it is accounted. Under live_mu and mu:
 * slots enter and leave the cycle and futures under mu and are freed after,
 * and no thread holding mu waits for the caller's lock (the GIL). */
static int interleave_traverse(const CvDataset *ds, CvVisit visit, void *arg)
{
    InterleaveParams *p = ds->params;
    int rc = cv_dataset_function_traverse(&p->fn, visit, arg);
    pthread_mutex_lock(&p->live_mu);
    for (InterleaveIterator *it = p->live; !rc && it; it = it->live_next) {
        pthread_mutex_lock(&it->mu);
        for (int64_t k = 0; !rc && it->cycle && k < p->cycle_length; k++)
            if (it->cycle[k] && it->cycle[k]->inner_ds)
                rc = cv_dataset_traverse_owned(it->cycle[k]->inner_ds, 1, visit, arg);
        for (int k = 0; !rc && k < it->future_count; k++) {
            const InterleaveSlot *slot = it->futures[(it->future_head + k) % it->future_cap];
            if (slot->inner_ds)
                rc = cv_dataset_traverse_owned(slot->inner_ds, 1, visit, arg);
        }
        pthread_mutex_unlock(&it->mu);
    }
    pthread_mutex_unlock(&p->live_mu);
    return rc;
}

/* List / unlist an iterator on its dataset for interleave_traverse. */
static void live_link(InterleaveIterator *it, bool add)
{
    InterleaveParams *p = it->base.dataset->params;
    pthread_mutex_lock(&p->live_mu);
    if (add && !it->listed) {
        it->live_prev = NULL;
        it->live_next = p->live;
        if (p->live)
            p->live->live_prev = it;
        p->live = it;
        it->listed = true;
    } else if (!add && it->listed) {
        if (it->live_prev)
            it->live_prev->live_next = it->live_next;
        else
            p->live = it->live_next;
        if (it->live_next)
            it->live_next->live_prev = it->live_prev;
        it->listed = false;
    }
    pthread_mutex_unlock(&p->live_mu);
}

static int64_t interleave_cardinality(const CvDataset *ds)
{
    (void)ds;
    return CV_UNKNOWN_CARDINALITY;
}

static void interleave_destroy(CvIterator *base);

static CvStatus interleave_make_iterator(const CvDataset *ds, CvIterator **out)
{
    const InterleaveParams *p = ds->params;
    InterleaveIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    pthread_mutex_init(&it->mu, NULL);
    cv_cond_init(&it->ready_cv);
    it->cycle = calloc((size_t)p->cycle_length, sizeof(InterleaveSlot *));
    live_link(it, true);
    CvStatus s = it->cycle ? cv_iterator_make(ds->inputs[0], &it->input) : cv_error_nomem();
    if (!s && p->num_workers > 0) {
        int64_t ring = 2 * p->block_length + 1; /* tf.data's buffer_output_elements */
        it->ring_size = CV_INTERLEAVE_MAX_BUFFER;
        it->min_limit = ring > CV_INTERLEAVE_MAX_BUFFER ? CV_INTERLEAVE_MAX_BUFFER : (int)ring;
        int64_t futures = 2 * p->cycle_length;
        it->max_futures = futures > CV_INTERLEAVE_MAX_FUTURES ? CV_INTERLEAVE_MAX_FUTURES : (int)futures;
        if (p->cycle_length > INT32_MAX - CV_INTERLEAVE_MAX_FUTURES)
            s = cv_error(CV_INVALID_ARGUMENT, "interleave: cycle_length %lld is too large",
                         (long long)p->cycle_length);
        it->future_cap = s ? 0 : (int)p->cycle_length + it->max_futures;
        it->futures = s ? NULL : calloc((size_t)it->future_cap, sizeof(InterleaveSlot *));
        if (!s && !it->futures)
            s = cv_error_nomem();
        size_t shared = CV_INTERLEAVE_READ_AHEAD_BYTES;
        int64_t budget = cv_memory_limit(ds->memory);
        if (budget > 0 && (uint64_t)budget / 4 < shared)
            shared = (size_t)(budget / 4);
        shared /= (size_t)p->cycle_length;
        it->slot_bytes = shared > CV_INTERLEAVE_SLOT_BYTES ? shared : CV_INTERLEAVE_SLOT_BYTES;
        cv_memory_holder_list(&it->holder, ds->memory, "ParallelInterleave", INTERLEAVE_KNOB);
        /* The pipeline's pool, or one of our own when made outside a pipeline. */
        CvPool *pool = cv_pool_current() ? cv_pool_ref(cv_pool_current()) : cv_pool_new(p->num_workers);
        if (pool)
            cv_task_attach(&it->task, pool, interleave_turn, it, "ParallelInterleave", p->num_workers);
        else
            s = cv_error_nomem();
        cv_pool_unref(pool); /* the task holds one */
    }
    if (s) {
        interleave_destroy(&it->base);
        return s;
    }
    *out = &it->base;
    return CV_STATUS_OK;
}

static CvStatus interleave_next(CvIterator *base, CvElement *out, bool *end)
{
    InterleaveIterator *it = (InterleaveIterator *)base;
    *end = false;
    return params_of(it)->num_workers > 0 ? parallel_next(it, out, end)
                                          : sequential_next(it, out, end);
}

static void interleave_cancel(CvIterator *base)
{
    InterleaveIterator *it = (InterleaveIterator *)base;
    int64_t n = params_of(it)->cycle_length;
    pthread_mutex_lock(&it->mu);
    it->cancelled = true;
    pthread_cond_broadcast(&it->ready_cv);
    cv_iterator_cancel(it->input);
    for (int64_t k = 0; it->cycle && k < n; k++)
        if (it->cycle[k])
            cv_iterator_cancel(it->cycle[k]->inner);
    for (int k = 0; k < it->future_count; k++)
        cv_iterator_cancel(it->futures[(it->future_head + k) % it->future_cap]->inner);
    pthread_mutex_unlock(&it->mu);
    if (it->holder.memory) /* turns waiting for room */
        cv_memory_wake(it->holder.memory);
}

/* Statistics (core/stats.h): the turns (a parallel stage's, for the
 * autotuner: with AUTOTUNE it moves the limit, 0 included), the turns
 * allowed and what the slots hold. */
static void interleave_measure(CvIterator *base, CvNodeTotals *totals, CvGauges *gauges)
{
    InterleaveIterator *it = (InterleaveIterator *)base;
    if (!it->task.pool)
        return; /* sequential */
    cv_stage_counters_measure(&it->counters, totals);
    gauges->limit = &it->task.limit;
    gauges->tuned_parallelism |= params_of(it)->tune_workers;
    gauges->may_inline |= params_of(it)->tune_workers;
    int64_t n = params_of(it)->cycle_length, buffered = 0;
    pthread_mutex_lock(&it->mu);
    for (int64_t k = 0; it->cycle && k < n; k++)
        buffered += it->cycle[k] ? it->cycle[k]->count : 0;
    for (int k = 0; k < it->future_count; k++)
        buffered += it->futures[(it->future_head + k) % it->future_cap]->count;
    pthread_mutex_unlock(&it->mu);
    gauges->buffered += buffered;
    gauges->bytes += (int64_t)atomic_load_explicit(&it->held, memory_order_relaxed);
    gauges->parallelism += atomic_load_explicit(&it->task.limit, memory_order_relaxed);
    gauges->max_parallelism += params_of(it)->num_workers;
}

static void interleave_destroy(CvIterator *base)
{
    InterleaveIterator *it = (InterleaveIterator *)base;
    int64_t n = params_of(it)->cycle_length;
    live_link(it, false); /* before any slot is freed */
    interleave_cancel(base);
    cv_task_remove(&it->task); /* waits for the running turns */
    for (int64_t k = 0; it->cycle && k < n; k++)
        cv_interleave_slot_destroy(it, it->cycle[k]);
    for (int k = 0; k < it->future_count; k++)
        cv_interleave_slot_destroy(it, it->futures[(it->future_head + k) % it->future_cap]);
    cv_memory_holder_unlist(&it->holder); /* the slots released what they held */
    cv_iterator_destroy(it->input);
    cv_status_free(it->fatal);
    cv_interleave_mark_free(&it->input_mark);
    cv_status_free(it->input_mark_status);
    free(it->cycle);
    free(it->futures);
    pthread_mutex_destroy(&it->mu);
    pthread_cond_destroy(&it->ready_cv);
    cv_iterator_free(base);
}

const CvKernel cv_kernel_interleave = {
    .name = "Interleave",
    .make_iterator = interleave_make_iterator,
    .cardinality = interleave_cardinality,
    .free_dataset = interleave_free,
    .next = interleave_next,
    .cancel = interleave_cancel,
    .destroy = interleave_destroy,
    .traverse = interleave_traverse,
    .measure = interleave_measure,
    .save = cv_interleave_save,
    .restore = cv_interleave_restore,
};

CvStatus cv_interleave_dataset(CvDataset *input, CvDatasetFunction fn, int64_t cycle_length,
                               int64_t block_length, int64_t num_parallel_calls, bool deterministic,
                               CvDataset **out)
{
    CvStatus s = CV_STATUS_OK;
    int workers = 0;
    bool tune = false;
    if (cycle_length <= 0)
        s = cv_error(CV_INVALID_ARGUMENT, "cycle_length must be greater than zero.");
    else if (block_length <= 0)
        s = cv_error(CV_INVALID_ARGUMENT, "block_length must be greater than zero.");
    else if (cycle_length > 4096)
        s = cv_error(CV_INVALID_ARGUMENT, "cycle_length %lld is too large (limit 4096)",
                     (long long)cycle_length);
    else
        s = cv_parallelism(num_parallel_calls, &workers, &tune);
    InterleaveParams *p = s ? NULL : malloc(sizeof(*p));
    if (!p) {
        if (fn.release)
            fn.release(fn.ctx);
        return s ? s : cv_error_nomem();
    }
    *p = (InterleaveParams){fn, cycle_length, block_length, workers, tune, deterministic};
    pthread_mutex_init(&p->live_mu, NULL);
    p->live = NULL;
    /* Inner datasets appear at run time and may block: always may_block. */
    return cv_dataset_new(&cv_kernel_interleave, &input, 1, p, true, out);
}
