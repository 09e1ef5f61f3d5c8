#include "core/stage.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

static CvTurn stage_turn(void *arg);
static void stage_drained(void *arg);
/* The stage whose consumer this thread is while it runs one of its turns. */
static _Thread_local const CvStage *helping;

CvStatus cv_stage_init(CvStage *st, const CvStageOps *ops, void *owner, const char *name,
                       int workers, bool tune_workers, int capacity, int max_capacity,
                       bool deterministic)
{
    if (workers < 1)
        workers = 1;
    if (max_capacity < 1)
        max_capacity = 1;
    if (capacity < 1 || capacity > max_capacity)
        capacity = max_capacity;
    st->ops = ops;
    st->owner = owner;
    st->name = name;
    st->max_workers = workers;
    st->tune_workers = tune_workers && workers > 1;
    st->chunk = st->max_chunk = 1;
    st->deterministic = deterministic;
    st->autotune = capacity < max_capacity;
    st->may_inline = false;
    st->inline_on = false;
    st->inline_countdown = st->inline_every = CV_STAGE_INLINE_SAMPLE;
    st->fast_left = 0;
    st->sample_ns = 0;
    st->self = NULL;
    cv_stage_probe_init(&st->probe);
    st->capacity = capacity;
    st->max_capacity = max_capacity;
    st->memory = NULL;
    st->memory_knob = "lower this stage's buffering (buffer_size / num_parallel_calls)";
    st->held = 0;
    st->holder = (CvMemoryHolder){0};
    st->run_next = st->run_end = 0;
    st->run_bytes = 0;
    st->run_low_water = 1;
    st->spin_ns = CV_SPIN_NS;
    st->task = (CvTask){0};
    st->armed = st->last_marked = st->mark_pending = st->has_base = false;
    st->base_seq = 0;
    cv_state_writer_init(&st->last_mark);
    cv_state_writer_init(&st->base);
    st->restored = NULL;
    st->nrestored = st->restored_next = 0;
    st->slots = calloc((size_t)max_capacity, sizeof(CvStageSlot));
    /* The pipeline's pool, or one of our own when made outside a pipeline. */
    CvPool *pool = cv_pool_current() ? cv_pool_ref(cv_pool_current()) : cv_pool_new(workers);
    if (!st->slots || !pool) {
        free(st->slots);
        st->slots = NULL;
        cv_pool_unref(pool);
        return cv_error_nomem();
    }
    pthread_mutex_init(&st->input_mu, NULL);
    atomic_init(&st->input_contended, false);
    pthread_mutex_init(&st->mu, NULL);
    cv_cond_init(&st->ready_cv);
    cv_task_attach(&st->task, pool, stage_turn, st, name, workers);
    st->task.drained = stage_drained; /* before any submit: the pool reads it after one */
    cv_pool_unref(pool); /* the task holds one */
    return CV_STATUS_OK;
}

/* mu held: fit the chunk (and the window) to the time and bytes the last
 * chunk took. The window is two chunks per worker. Units too slow to share a
 * chunk get slack on top, up to CV_STAGE_SLACK_UNITS per worker while their
 * results fit in CV_STAGE_SLACK_BYTES: results are taken in order, so a turn
 * that the OS deschedules while it holds the oldest unit (more turns than
 * cores) fills a tight window behind it and idles every other worker. With
 * two units per worker that cost a JPEG pipeline (read, decode, resize) 15%
 * of 2 cores; with eight, under 4%. */
static void adapt_chunk(CvStage *st, int n, size_t bytes, int64_t elapsed_ns)
{
    size_t unit_bytes = bytes / (size_t)n + 1;
    size_t fit_bytes = CV_STAGE_CHUNK_BYTES / unit_bytes;
    size_t fit_time = (size_t)(CV_STAGE_CHUNK_NS / (elapsed_ns / n + 1));
    size_t fit = fit_bytes < fit_time ? fit_bytes : fit_time;
    int chunk = fit < 1 ? 1 : fit > (size_t)st->max_chunk ? st->max_chunk : (int)fit;
    st->chunk = chunk;
    if (st->window_follows_chunk) {
        size_t window = 2 * (size_t)st->max_workers * (size_t)chunk;
        if (chunk == 1 && fit_time <= 1) {
            size_t slack = CV_STAGE_SLACK_BYTES / unit_bytes;
            size_t most = CV_STAGE_SLACK_UNITS * (size_t)st->max_workers;
            slack = slack < most ? slack : most;
            window = slack > window ? slack : window;
        }
        st->capacity = window > (size_t)st->max_capacity ? st->max_capacity : (int)window;
    }
}

static void process_units(CvStage *st, CvStageUnit *units, int n)
{
    if (st->ops->process_chunk) {
        st->ops->process_chunk(st->owner, units, n);
        return;
    }
    for (int i = 0; i < n; i++)
        if (!units[i].status)
            units[i].status = st->ops->process(st->owner, &units[i].work, units[i].aux, &units[i].out);
}

/* mu held: charge the results of a chunk to the budget, all at once when
 * they fit; otherwise one by one, and a result that does not fit becomes
 * the budget's error (its element dropped, bytes[i] = 0). */
static void charge_units(CvStage *st, CvStageUnit *units, size_t *bytes, int n, size_t total)
{
    if (total == 0)
        return;
    cv_memory_holder_list(&st->holder, st->memory, st->name, st->memory_knob);
    if (cv_memory_holder_try_charge(&st->holder, total)) {
        st->held += total;
        return;
    }
    for (int i = 0; i < n; i++) {
        if (bytes[i] == 0 || cv_memory_holder_try_charge(&st->holder, bytes[i])) {
            st->held += bytes[i];
            continue;
        }
        cv_status_free(units[i].status);
        units[i].status = cv_memory_holder_exceeded(&st->holder, bytes[i]);
        cv_element_clear(&units[i].out);
        bytes[i] = 0;
    }
}

/* mu held: room in the budget for one more result of the average size
 * buffered now (only then an autotuned capacity grows, an AUTOTUNE turn pulls). */
static bool budget_has_room(const CvStage *st)
{
    uint64_t buffered = st->issued - st->consumed;
    size_t average = buffered ? st->held / buffered : 0;
    return cv_memory_used(st->memory) + (int64_t)average <= cv_memory_limit(st->memory);
}

/* May a turn's result wait for room (stage.h, Memory)? 1 while an older one is to be
 * taken (the consumer frees room going on); 0 for the oldest (its consumer waits for
 * it) or a turn the consumer runs itself (cv_task_help); -1 once cancelled. */
typedef struct { CvStage *st; uint64_t first_seq; } RoomWait;

static int may_wait_for_room(void *arg)
{
    RoomWait *w = arg;
    CvStage *st = w->st;
    pthread_mutex_lock(&st->mu);
    int may = st->cancelled ? -1 : helping == st ? 0
              : st->deterministic ? w->first_seq > st->consumed : st->completed > st->consumed;
    pthread_mutex_unlock(&st->mu);
    return may;
}

static void count(_Atomic uint64_t *counter, uint64_t n)
{
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

/* The input lock, if free. A turn that finds another pulling ends at once
 * (the pool thread runs other work) and leaves a note: the puller
 * resubmits the task when it lets go (cv_stage_unlock_input), so the next chunk is
 * pulled as soon as it can be. The second try closes the race with an
 * unlock that came before the note. */
static bool lock_input(CvStage *st)
{
    if (pthread_mutex_trylock(&st->input_mu) == 0)
        return true;
    atomic_store_explicit(&st->input_contended, true, memory_order_seq_cst);
    if (pthread_mutex_trylock(&st->input_mu) == 0)
        return true;
    return false;
}

void cv_stage_unlock_input(CvStage *st)
{
    pthread_mutex_unlock(&st->input_mu);
    if (atomic_exchange_explicit(&st->input_contended, false, memory_order_seq_cst))
        cv_task_submit(&st->task);
}

/* The pull side's position now into w (whoever touches the input: a turn
 * under input_mu, or the consumer inline). A failed save leaves its error
 * in the mark, for save() to report. */
static void save_mark(CvStage *st, CvStateWriter *w)
{
    cv_state_writer_reset(w);
    CvStatus s = st->ops->save_input(st->owner, w);
    if (s && !w->error)
        w->error = s;
    else
        cv_status_free(s);
}

/* input_mu held: the pull side's position after the unit just pulled, into
 * its slot (free: its unit is at most capacity ahead of the consumer's). */
static void take_mark(CvStage *st, CvStageSlot *slot)
{
    save_mark(st, &slot->mark);
    slot->marked = true;
}

/* One turn:
 * 1. Under input_mu, pull up to `chunk` units (no more than the room left);
 *    with no room, end the turn: the task is idle ("full") until the
 *    consumer resubmits it.
 * 2. Process them with no lock held.
 * 3. Store each result in its slot and wake the consumer once. */
static CvTurn stage_turn(void *arg)
{
    CvStage *st = arg;
    CvStageUnit units[CV_STAGE_MAX_CHUNK];
    bool end = false;
    int64_t turn_started = cv_now_ns();
    int64_t blocked_before = cv_blocking_ns(), contended_before = cv_blocking_contended_ns();
    if (!lock_input(st))
        return CV_TURN_IDLE; /* another turn is pulling: it resubmits the task */
    pthread_mutex_lock(&st->mu);
    if (st->cancelled || st->input_done) {
        pthread_mutex_unlock(&st->mu);
        cv_stage_unlock_input(st);
        return CV_TURN_DONE;
    }
    if (st->issued - st->consumed >= (uint64_t)st->capacity ||
        ((st->autotune || st->tune_workers) && st->issued > st->consumed && !budget_has_room(st))) {
        if (!st->full) {
            st->full = true;
            st->full_since = turn_started;
        }
        pthread_mutex_unlock(&st->mu);
        cv_stage_unlock_input(st);
        return CV_TURN_IDLE;
    }
    uint64_t first_seq = st->issued;
    uint64_t room = (uint64_t)st->capacity - (st->issued - st->consumed);
    int want = room < (uint64_t)st->chunk ? (int)room : st->chunk;
    pthread_mutex_unlock(&st->mu);

    int n = 0;
    int64_t pull_started = cv_now_ns();
    atomic_fetch_add_explicit(&st->counters.pulling, 1, memory_order_relaxed);
    while (n < want) {
        CvStageUnit *u = &units[n];
        *u = (CvStageUnit){0};
        bool unit_end = false;
        u->status = st->ops->pull(st->owner, &u->work, &u->aux, &unit_end);
        if (!u->status && unit_end) {
            end = true;
            break;
        }
        if (st->armed)
            take_mark(st, &st->slots[(first_seq + (uint64_t)n) % (uint64_t)st->max_capacity]);
        n++;
        /* A slow input must not hold back what was already pulled. The
         * clock is read after units 1, 2, 4, 8, ...: a turn's pulls take
         * at most about twice CV_STAGE_CHUNK_NS, for a few clock reads. */
        if (want > 1 && (n & (n - 1)) == 0 && cv_now_ns() - pull_started > CV_STAGE_CHUNK_NS)
            break;
    }

    pthread_mutex_lock(&st->mu);
    st->issued += (uint64_t)n;
    bool wake = false;
    if (end) {
        st->input_done = true;
        wake = st->consumer_waiting;
    }
    pthread_mutex_unlock(&st->mu);
    cv_stage_unlock_input(st);
    atomic_fetch_sub_explicit(&st->counters.pulling, 1, memory_order_relaxed);
    int64_t pulled = cv_now_ns();
    count(&st->counters.input_ns, (uint64_t)(pulled - turn_started));
    count(&st->counters.turns, 1);
    if (n == 0) {
        if (wake)
            pthread_cond_broadcast(&st->ready_cv);
        return end ? CV_TURN_DONE : CV_TURN_AGAIN;
    }

    for (int i = 0; i < n; i++)
        if (units[i].status)
            cv_element_clear(&units[i].work);
    atomic_fetch_add_explicit(&st->counters.processing, 1, memory_order_relaxed);
    process_units(st, units, n);
    atomic_fetch_sub_explicit(&st->counters.processing, 1, memory_order_relaxed);
    int64_t elapsed = cv_now_ns() - pulled;
    count(&st->counters.busy_ns, (uint64_t)elapsed);
    count(&st->counters.units, (uint64_t)n);
    count(&st->counters.blocked_ns, (uint64_t)(cv_blocking_ns() - blocked_before));
    count(&st->counters.contended_ns, (uint64_t)(cv_blocking_contended_ns() - contended_before));

    size_t bytes[CV_STAGE_MAX_CHUNK], total = 0;
    for (int i = 0; i < n; i++)
        total += bytes[i] = cv_element_bytes(&units[i].out);

    bool charged = false; /* an AUTOTUNE stage waits for room (stage.h, Memory) */
    if ((st->autotune || st->tune_workers) && total > 0) {
        pthread_mutex_lock(&st->mu);
        cv_memory_holder_list(&st->holder, st->memory, st->name, st->memory_knob);
        pthread_mutex_unlock(&st->mu);
        RoomWait w = {st, first_seq};
        charged = cv_memory_holder_charge_waiting(&st->holder, total, CV_MEMORY_POLL_NS,
                                                  may_wait_for_room, &w);
    }
    pthread_mutex_lock(&st->mu);
    st->held += charged ? total : 0;
    if (st->max_chunk > 1 || st->window_follows_chunk)
        adapt_chunk(st, n, total, elapsed);
    if (!charged)
        charge_units(st, units, bytes, n, total);
    for (int i = 0; i < n; i++) {
        uint64_t index = st->deterministic ? first_seq + (uint64_t)i : st->completed;
        __atomic_store_n(&st->completed, st->completed + 1, __ATOMIC_RELEASE); /* spun on */
        CvStageSlot *slot = &st->slots[index % (uint64_t)st->max_capacity];
        slot->status = units[i].status;
        cv_element_move(&slot->element, &units[i].out);
        slot->bytes = bytes[i];
        slot->ready = true;
    }
    wake |= st->consumer_waiting; /* a spinning or busy consumer needs no wake-up */
    bool done = st->input_done || st->cancelled;
    pthread_mutex_unlock(&st->mu);
    if (wake) /* after unlocking: woken, it would only wait for mu */
        pthread_cond_broadcast(&st->ready_cv);
    return done ? CV_TURN_DONE : CV_TURN_AGAIN;
}

/* The pool, as the last turn at limit 0 ends (CvTask.drained): a consumer
 * that began to wait while the limit was above 0 is woken to go inline
 * (cv_stage_next); no turn would wake it, and on a pool thread its wait
 * has no timeout. */
static void stage_drained(void *arg)
{
    CvStage *st = arg;
    pthread_mutex_lock(&st->mu);
    bool wake = st->consumer_waiting;
    pthread_mutex_unlock(&st->mu);
    if (wake)
        pthread_cond_broadcast(&st->ready_cv);
}

/* Free room in the window below which a retire does not wake workers: half
 * the window, so the consumer has half of it to hand out while the worker
 * starts. A worker that waits for the next submit spins for it first
 * (core/pool.c), so the submit costs no futex wake-up when elements come
 * fast; when they come slowly the consumer's turn is not the bottleneck.
 * Measured with range(n).prefetch(64) on the 2-core VM: about 180 ns per
 * element at 1/2, 220 ns at 3/4 (before the spinning worker, when each
 * wake-up cost two context switches, 3/4 did best). */
static uint64_t low_water(const CvStage *st)
{
    return st->capacity / 2 > 1 ? (uint64_t)st->capacity / 2 : 1;
}

/* Consumer only, no lock: hand out the next slot of the run. The slot stays
 * reserved (and charged) until retired. */
static CvStatus run_pop(CvStage *st, CvElement *out)
{
    CvStageSlot *slot = &st->slots[st->run_next % (uint64_t)st->max_capacity];
    CvStatus s = slot->status;
    slot->status = CV_STATUS_OK;
    cv_element_move(out, &slot->element);
    st->run_bytes += slot->bytes;
    slot->bytes = 0;
    slot->ready = false;
    st->last_marked = slot->marked;
    if (slot->marked) { /* swap: the slot gets the old buffer to reuse */
        CvStateWriter mark = st->last_mark;
        st->last_mark = slot->mark;
        slot->mark = mark;
        slot->marked = false;
    }
    st->run_next++;
    return s;
}

/* Consumer: the next restored result (see cv_stage_restore). */
static CvStatus restored_pop(CvStage *st, CvElement *out)
{
    CvStageSlot *slot = &st->restored[st->restored_next++];
    CvStatus s = slot->status;
    slot->status = CV_STATUS_OK;
    cv_element_move(out, &slot->element);
    st->last_marked = false;
    if (st->restored_next == st->nrestored) {
        free(st->restored);
        st->restored = NULL;
        st->nrestored = st->restored_next = 0;
    }
    return s;
}

/* mu held, consumer: retire the slots handed out so far (one budget release
 * for all of them). Returns true when a full stage should be resubmitted:
 * the room reached low_water, or the consumer is starved and there is any.
 * The caller submits after unlocking mu (wake_workers). */
static bool run_retire(CvStage *st, bool starved)
{
    if (st->run_next != st->consumed) {
        st->consumed = st->run_next;
        if (st->run_bytes) {
            cv_memory_holder_release(&st->holder, st->run_bytes);
            st->held -= st->run_bytes;
            st->run_bytes = 0;
        }
    }
    if (!st->full)
        return false;
    uint64_t in_flight = st->issued - st->consumed;
    uint64_t room = in_flight < (uint64_t)st->capacity ? (uint64_t)st->capacity - in_flight : 0;
    if (room >= low_water(st) || (starved && room > 0)) {
        st->full = false; /* resubmitted: not again before a turn finds it full again */
        count(&st->counters.full_ns, (uint64_t)(cv_now_ns() - st->full_since));
        return true;
    }
    return false;
}

static void wake_workers(CvStage *st, bool wake)
{
    if (wake)
        cv_task_submit(&st->task);
}

/* mu held, consumer: add the ready slots that follow the run to it. Also
 * notes low_water for run_next, which reads it with no lock (turns move the
 * capacity under mu). */
static bool run_extend(CvStage *st)
{
    st->run_low_water = low_water(st);
    while (st->run_end < st->issued && st->slots[st->run_end % (uint64_t)st->max_capacity].ready)
        st->run_end++;
    return st->run_next < st->run_end;
}

/* Consumer: the next element of a non-empty run. Retires a group once
 * low_water elements were handed out since the last retire, so workers get
 * room (and the budget its bytes) while a long run is handed out, and when
 * the run is used up, taking whatever became ready meanwhile as the next
 * run: one lock per run (or per low_water elements). */
static CvStatus run_next(CvStage *st, CvElement *out)
{
    CvStatus s = run_pop(st, out);
    bool used_up = st->run_next == st->run_end;
    if (used_up || st->run_next - st->consumed >= st->run_low_water) {
        pthread_mutex_lock(&st->mu);
        bool wake = run_retire(st, false);
        if (used_up)
            run_extend(st);
        pthread_mutex_unlock(&st->mu);
        wake_workers(st, wake);
    }
    return s;
}

/* -- inline (see Inline in stage.h) ------------------------------------------ */

/* Consumer: the autotuner asks for inline (the task's limit is 0). */
static bool inline_wanted(CvStage *st)
{
    return st->may_inline && atomic_load_explicit(&st->task.limit, memory_order_relaxed) == 0;
}

/* Consumer, mu held: wait on ready_cv for CV_STAGE_SETTLE_WAIT_NS at most
 * (in a blocking section, as cv_wait on a pool thread). */
static void settle_wait(CvStage *st)
{
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_nsec += CV_STAGE_SETTLE_WAIT_NS;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000L;
    }
    st->consumer_waiting = true;
    cv_blocking_begin();
    pthread_cond_timedwait(&st->ready_cv, &st->mu, &deadline);
    cv_blocking_end();
    st->consumer_waiting = false;
}

/* Consumer: go inline when everything pulled was handed out and no turn
 * runs: the task is paused, so from now on only this thread touches the
 * input and the pull side. False: not yet (a turn runs, or results are in
 * flight: next() hands them out first). */
static bool inline_settle(CvStage *st)
{
    if (st->restored_next < st->nrestored || st->run_next < st->run_end || !cv_task_pause(&st->task))
        return false;
    pthread_mutex_lock(&st->mu);
    bool idle = st->run_next == st->issued; /* a turn may have pulled before the pause */
    if (idle) {
        run_retire(st, false);
        st->full = false; /* cv_task_resume queues it again */
    }
    pthread_mutex_unlock(&st->mu);
    if (!idle) {
        cv_task_resume(&st->task); /* at limit 0 no turn starts: it only stays queued */
        return false;
    }
    st->inline_on = true;
    st->started = true;
    return true;
}

/* Consumer, inline, after a unit's pull: its mark would be the pull side's
 * position after it, as a turn's is. Inline, nothing is pulled ahead, so
 * that is the pull side's position now until the next unit: an armed stage
 * takes it only when it is wanted (a save, a stage above taking its mark,
 * going parallel again), not per unit, and the direct path may run
 * meanwhile. The base no longer is the position. */
static void inline_mark(CvStage *st)
{
    st->has_base = false;
    st->last_marked = false;
    st->mark_pending = st->armed;
}

void cv_stage_take_pending_mark(CvStage *st)
{
    if (!st->mark_pending)
        return;
    st->mark_pending = false;
    st->last_marked = true;
    save_mark(st, &st->last_mark);
}

void cv_stage_fast_stop(CvStage *st)
{
    st->inline_countdown += st->fast_left;
    st->fast_left = 0;
}

/* Consumer, inline: the limit went above 0 again, and nothing is in flight:
 * the stage's turns take over from the position now. */
static void inline_leave(CvStage *st)
{
    cv_stage_take_pending_mark(st);
    st->inline_on = false;
    cv_stage_fast_stop(st);
    cv_task_resume(&st->task);
}

/* Consumer, inline: one unit pulled, processed and handed out on this
 * thread; one in inline_every is timed (scaled into the counters the
 * autotuner reads) and runs the autotuner's tick; afterwards the units to
 * the next timed one are granted to the direct path when it may take them.
 * would_block: from try_next, pull with ops->try_pull when the input may
 * block (NULL: from next()). */
static CvStatus inline_next(CvStage *st, CvElement *out, bool *end, bool *would_block)
{
    if ((*end = st->input_done))
        return CV_STATUS_OK;
    bool timed = st->probe.probing || --st->inline_countdown <= 0;
    int64_t started = timed ? cv_now_ns() : 0, blocked = timed ? cv_blocking_ns() : 0, pulled = 0;
    CvProbeUnit probe_unit;
    if (st->probe.probing)
        cv_stage_probe_begin(&probe_unit);
    CvStageUnit u = {0};
    bool unit_end = false;
    if (would_block && st->input_may_block) {
        u.status = st->ops->try_pull(st->owner, &u.work, &u.aux, &unit_end, would_block);
        if (!u.status && *would_block) {
            st->inline_countdown += !st->probe.probing; /* nothing taken */
            return CV_STATUS_OK;
        }
    } else {
        u.status = st->ops->pull(st->owner, &u.work, &u.aux, &unit_end);
    }
    if ((*end = !u.status && unit_end)) {
        cv_stage_inline_end(st);
        return CV_STATUS_OK;
    }
    inline_mark(st);
    if (timed)
        pulled = cv_now_ns();
    if (u.status) /* one unit: process(), not a chunk call's set-up for one */
        cv_element_clear(&u.work);
    else
        u.status = st->ops->process(st->owner, &u.work, u.aux, &u.out);
    if (timed) {
        int64_t now = cv_now_ns();
        const uint64_t k = st->probe.probing ? 1 : (uint64_t)st->inline_every;
        count(&st->counters.input_ns, k * (uint64_t)(pulled - started));
        count(&st->counters.busy_ns, k * (uint64_t)(now - pulled));
        blocked = cv_blocking_ns() - blocked;
        count(&st->counters.blocked_ns, k * (uint64_t)blocked);
        count(&st->counters.units, k);
        count(&st->counters.turns, 1);
        if (st->probe.probing) {
            if (cv_stage_probe_end(&st->probe, &probe_unit, blocked, st->self, st->task.pool, &st->task.limit,
                                   st->max_workers))
                st->inline_countdown = st->inline_every;
        } else {
            st->inline_every = cv_stage_sample_pace(st->inline_every, &st->sample_ns, now - started);
            st->inline_countdown = st->inline_every;
            cv_stage_probe_tick(st->task.pool);
        }
    }
    if (st->inline_on && !st->probe.probing && st->inline_countdown > 1) {
        st->fast_left = st->inline_countdown - 1; /* the direct path's, up to the next timed unit */
        st->inline_countdown = 1;
    }
    cv_element_move(out, &u.out);
    return u.status;
}

void cv_stage_inline_end(CvStage *st)
{
    cv_stage_fast_stop(st);
    pthread_mutex_lock(&st->mu);
    st->input_done = true;
    pthread_mutex_unlock(&st->mu);
}

CvStatus cv_stage_try_next(CvStage *st, CvElement *out, bool *end, bool *would_block)
{
    *end = false;
    *would_block = false;
    if (st->restored_next < st->nrestored)
        return restored_pop(st, out);
    if (st->run_next < st->run_end)
        return run_next(st, out);
    if (st->inline_on) {
        if (inline_wanted(st)) {
            if (!st->input_may_block || st->ops->try_pull)
                return inline_next(st, out, end, would_block);
            *would_block = true; /* the unit runs in next() */
            return CV_STATUS_OK;
        }
        inline_leave(st);
    }
    if (!st->started) { /* starting is next()'s work */
        *would_block = true;
        return CV_STATUS_OK;
    }
    pthread_mutex_lock(&st->mu);
    bool wake = run_retire(st, false);
    bool ready = run_extend(st);
    if (!ready) {
        if (st->input_done && st->consumed == st->issued)
            *end = true;
        else
            *would_block = true; /* errors, cancellation, waiting: next()'s work */
    }
    pthread_mutex_unlock(&st->mu);
    wake_workers(st, wake);
    return ready ? run_next(st, out) : CV_STATUS_OK;
}

CvStatus cv_stage_next(CvStage *st, CvElement *out, bool *end)
{
    CvStatus s = CV_STATUS_OK;
    bool wake = false;
    *end = false;
    if (st->run_next < st->run_end)
        return run_next(st, out);
    if (!st->started && st->may_inline && st->restored_next >= st->nrestored &&
        cv_stage_probe_start(&st->probe, st->self)) { /* start inline: nothing is in flight */
        atomic_store_explicit(&st->task.limit, 0, memory_order_relaxed); /* the task is not submitted */
        st->inline_countdown = 1;
        st->inline_on = st->started = true;
        return inline_next(st, out, end, NULL);
    }
    if (st->inline_on) {
        if (inline_wanted(st))
            return inline_next(st, out, end, NULL);
        inline_leave(st);
    } else if (st->started && inline_wanted(st) && inline_settle(st)) {
        return inline_next(st, out, end, NULL);
    } else if (st->may_inline) { /* once per run: the autotuner looks when due, turns or none */
        cv_pool_run_tick(st->task.pool);
    }
    pthread_mutex_lock(&st->mu);
    if (!st->started) { /* the first next(): the task joins the pool's queue */
        st->started = true;
        cv_task_submit(&st->task); /* under mu: the pool's mutex is a leaf */
    }
    if (st->restored_next < st->nrestored) { /* the workers run ahead meanwhile */
        pthread_mutex_unlock(&st->mu);
        return restored_pop(st, out);
    }
    wake = run_retire(st, false);
    bool spun = false, tried_help = false, tried_inline = false;
    int64_t wait_started = 0, settle_waits = 0;
    for (;;) {
        if (run_extend(st)) {
            pthread_mutex_unlock(&st->mu);
            wake_workers(st, wake);
            if (wait_started) {
                int64_t waited = cv_now_ns() - wait_started;
                cv_spin_fit_wait(&st->spin_ns, waited);
                count(&st->counters.wait_ns, (uint64_t)waited);
                count(&st->counters.waits, 1);
            }
            return run_next(st, out);
        }
        if (st->input_done && st->consumed == st->issued) {
            *end = true;
            break;
        }
        if (st->cancelled) {
            s = cv_error(CV_CANCELLED, "%s: the iterator was cancelled", st->name);
            break;
        }
        if (!wait_started) { /* starved: grow an autotuned window, wake the workers now */
            wait_started = cv_now_ns();
            if (st->autotune && st->capacity < st->max_capacity && budget_has_room(st))
                st->capacity++;
            wake |= run_retire(st, true);
        }
        if (!spun && st->spin_ns > 0) { /* a result may be microseconds away */
            spun = true;
            uint64_t seen = st->completed;
            pthread_mutex_unlock(&st->mu);
            wake_workers(st, wake);
            wake = false;
            cv_spin_fit(&st->spin_ns, cv_spin_for_progress(&st->completed, seen, st->spin_ns));
            pthread_mutex_lock(&st->mu);
            continue; /* mu was released: everything must be checked again */
        }
        spun = true;
        if (!tried_help && !st->full) { /* on a pool thread (a stage above): run a turn */
            pthread_mutex_unlock(&st->mu);
            wake_workers(st, wake);
            wake = false;
            const CvStage *outer = helping; /* the turn it runs must not wait for us */
            helping = st;
            tried_help = !cv_task_help(&st->task); /* after a turn, help again if need be */
            helping = outer;
            pthread_mutex_lock(&st->mu);
            continue; /* mu was released: everything must be checked again */
        }
        if (!tried_inline && st->run_next == st->issued && inline_wanted(st)) {
            /* Made inline while this thread waited: no turn may come. A
             * turn still running ends in microseconds (or wakes us). */
            tried_inline = true;
            pthread_mutex_unlock(&st->mu);
            wake_workers(st, wake);
            wake = false;
            for (int i = 0; i < 64 && !inline_settle(st); i++)
                sched_yield();
            if (st->inline_on)
                return inline_next(st, out, end, NULL);
            pthread_mutex_lock(&st->mu);
            continue; /* mu was released: everything must be checked again */
        }
        if (tried_inline && st->run_next == st->issued && inline_wanted(st)) {
            /* Still not settled: a turn that ended is counted running until
             * the pool has its lock back, and wakes no one, so a plain wait
             * (untimed on a pool thread) could last forever. Look again
             * after SETTLE_WAIT_NS; interrupts as cv_wait's slices would. */
            wake_workers(st, wake);
            wake = false;
            settle_wait(st);
            if (++settle_waits % (CV_WAIT_SLICE_MS * 1000000LL / CV_STAGE_SETTLE_WAIT_NS) == 0) {
                pthread_mutex_unlock(&st->mu);
                bool stop = cv_interrupt_pending();
                pthread_mutex_lock(&st->mu);
                if (stop) {
                    s = cv_error(CV_INTERRUPTED, "interrupted");
                    break;
                }
            }
            tried_inline = false;
            continue;
        }
        wake_workers(st, wake); /* under mu: the pool's mutex is a leaf */
        wake = false;
        st->consumer_waiting = true;
        s = cv_wait(&st->ready_cv, &st->mu);
        st->consumer_waiting = false;
        tried_help = false;
        tried_inline = false;
        if (s)
            break;
    }
    pthread_mutex_unlock(&st->mu);
    wake_workers(st, wake);
    return s;
}

void cv_stage_cancel(CvStage *st)
{
    if (!st->slots) /* never initialized */
        return;
    pthread_mutex_lock(&st->mu);
    st->cancelled = true;
    pthread_cond_broadcast(&st->ready_cv);
    pthread_mutex_unlock(&st->mu);
    cv_memory_wake(st->memory); /* turns waiting for room */
}

void cv_stage_destroy(CvStage *st)
{
    if (!st->slots)
        return;
    cv_stage_cancel(st);
    cv_task_remove(&st->task); /* waits for the running turns */
    for (int i = 0; i < st->max_capacity; i++) {
        cv_status_free(st->slots[i].status);
        cv_element_clear(&st->slots[i].element);
        cv_state_writer_clear(&st->slots[i].mark);
    }
    for (int i = st->restored_next; i < st->nrestored; i++) {
        cv_status_free(st->restored[i].status);
        cv_element_clear(&st->restored[i].element);
    }
    free(st->restored);
    st->restored = NULL;
    st->nrestored = st->restored_next = 0;
    cv_state_writer_clear(&st->last_mark);
    cv_state_writer_clear(&st->base);
    if (st->held)
        cv_memory_holder_release(&st->holder, st->held);
    cv_memory_holder_unlist(&st->holder);
    st->held = 0;
    free(st->slots);
    st->slots = NULL;
    pthread_mutex_destroy(&st->input_mu);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->ready_cv);
}
