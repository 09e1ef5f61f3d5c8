#include "core/stage.h"

#include <stdlib.h>

static void *stage_worker(void *arg);

CvStatus cv_stage_init(CvStage *st, const CvStageOps *ops, void *owner, const char *name,
                       int num_workers, int capacity, int max_capacity, bool deterministic)
{
    if (num_workers < 1)
        num_workers = 1;
    if (max_capacity < 1)
        max_capacity = 1;
    if (capacity < 1 || capacity > max_capacity)
        capacity = max_capacity;
    st->ops = ops;
    st->owner = owner;
    st->name = name;
    st->num_workers = num_workers;
    st->chunk = st->max_chunk = 1;
    st->deterministic = deterministic;
    st->autotune = capacity < max_capacity;
    st->capacity = capacity;
    st->max_capacity = max_capacity;
    st->memory = NULL;
    st->memory_knob = "lower this stage's buffering (buffer_size / num_parallel_calls)";
    st->held = 0;
    st->slots = calloc((size_t)max_capacity, sizeof(CvStageSlot));
    st->threads = calloc((size_t)num_workers, sizeof(CvThread));
    if (!st->slots || !st->threads) {
        free(st->slots);
        free(st->threads);
        st->slots = NULL;
        st->threads = NULL;
        return cv_error_nomem();
    }
    pthread_mutex_init(&st->input_mu, NULL);
    pthread_mutex_init(&st->mu, NULL);
    cv_cond_init(&st->ready_cv);
    cv_cond_init(&st->space_cv);
    return CV_STATUS_OK;
}

void cv_stage_set_chunk(CvStage *st, int max_chunk, bool window_follows_chunk)
{
    st->max_chunk = max_chunk < 1 ? 1 : max_chunk > CV_STAGE_MAX_CHUNK ? CV_STAGE_MAX_CHUNK : max_chunk;
    st->chunk = 1;
    st->window_follows_chunk = window_follows_chunk;
    if (window_follows_chunk && st->capacity > 2 * st->num_workers)
        st->capacity = 2 * st->num_workers;
}

void cv_stage_set_memory(CvStage *st, CvMemory *memory, const char *knob)
{
    st->memory = memory;
    if (knob)
        st->memory_knob = knob;
}

/* mu held: fit the chunk (and the window) to the time and bytes the last
 * chunk took. */
static void adapt_chunk(CvStage *st, int n, size_t bytes, int64_t elapsed_ns)
{
    size_t fit_bytes = CV_STAGE_CHUNK_BYTES / (bytes / (size_t)n + 1);
    size_t fit_time = (size_t)(CV_STAGE_CHUNK_NS / (elapsed_ns / n + 1));
    size_t fit = fit_bytes < fit_time ? fit_bytes : fit_time;
    int chunk = fit < 1 ? 1 : fit > (size_t)st->max_chunk ? st->max_chunk : (int)fit;
    if (chunk != st->chunk) {
        st->chunk = chunk;
        if (st->window_follows_chunk) {
            int window = 2 * st->num_workers * chunk;
            st->capacity = window > st->max_capacity ? st->max_capacity : window;
            pthread_cond_broadcast(&st->space_cv);
        }
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
    if (cv_memory_try_charge(st->memory, total)) {
        st->held += total;
        return;
    }
    for (int i = 0; i < n; i++) {
        if (bytes[i] == 0)
            continue;
        if (cv_memory_try_charge(st->memory, bytes[i])) {
            st->held += bytes[i];
            continue;
        }
        cv_status_free(units[i].status);
        units[i].status = cv_memory_exceeded(st->memory, bytes[i], st->name, st->held, st->memory_knob);
        cv_element_clear(&units[i].out);
        bytes[i] = 0;
    }
}

/* mu held: room in the budget for one more result of the average size
 * buffered now (an autotuned capacity grows only then). */
static bool budget_has_room(const CvStage *st)
{
    uint64_t buffered = st->issued - st->consumed;
    size_t average = buffered ? st->held / buffered : 0;
    return cv_memory_used(st->memory) + (int64_t)average <= cv_memory_limit(st->memory);
}

/* Worker loop:
 * 1. Under input_mu, wait (on mu) for room in the window, then pull up to
 *    `chunk` units (no more than the room left).
 * 2. Process them with no lock held.
 * 3. Store each result in its slot and wake the consumer once. */
static void *stage_worker(void *arg)
{
    CvStage *st = arg;
    CvStageUnit units[CV_STAGE_MAX_CHUNK];
    for (bool end = false; !end;) {
        pthread_mutex_lock(&st->input_mu);
        pthread_mutex_lock(&st->mu);
        while (!st->cancelled && !st->input_done && st->issued - st->consumed >= (uint64_t)st->capacity)
            pthread_cond_wait(&st->space_cv, &st->mu);
        if (st->cancelled || st->input_done) {
            pthread_mutex_unlock(&st->mu);
            pthread_mutex_unlock(&st->input_mu);
            break;
        }
        uint64_t first_seq = st->issued;
        uint64_t room = (uint64_t)st->capacity - (st->issued - st->consumed);
        int want = room < (uint64_t)st->chunk ? (int)room : st->chunk;
        pthread_mutex_unlock(&st->mu);

        int n = 0;
        int64_t pull_started = want > 1 ? cv_now_ns() : 0;
        while (n < want) {
            CvStageUnit *u = &units[n];
            *u = (CvStageUnit){0};
            bool unit_end = false;
            u->status = st->ops->pull(st->owner, &u->work, &u->aux, &unit_end);
            if (!u->status && unit_end) {
                end = true;
                break;
            }
            n++;
            /* A slow input must not hold back what was already pulled. */
            if (want > 1 && cv_now_ns() - pull_started > CV_STAGE_CHUNK_NS)
                break;
        }

        pthread_mutex_lock(&st->mu);
        st->issued += (uint64_t)n;
        if (end) {
            st->input_done = true;
            pthread_cond_broadcast(&st->ready_cv);
            pthread_cond_broadcast(&st->space_cv);
        }
        pthread_mutex_unlock(&st->mu);
        pthread_mutex_unlock(&st->input_mu);
        if (n == 0)
            continue;

        for (int i = 0; i < n; i++)
            if (units[i].status)
                cv_element_clear(&units[i].work);
        int64_t started = st->max_chunk > 1 ? cv_now_ns() : 0;
        process_units(st, units, n);
        int64_t elapsed = st->max_chunk > 1 ? cv_now_ns() - started : 0;

        size_t bytes[CV_STAGE_MAX_CHUNK], total = 0;
        for (int i = 0; i < n; i++)
            total += bytes[i] = cv_element_bytes(&units[i].out);

        pthread_mutex_lock(&st->mu);
        if (st->max_chunk > 1)
            adapt_chunk(st, n, total, elapsed);
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
        pthread_cond_signal(&st->ready_cv);
        pthread_mutex_unlock(&st->mu);
    }
    return NULL;
}

static CvStatus stage_start(CvStage *st)
{
    st->started = true;
    for (int i = 0; i < st->num_workers; i++) {
        CvStatus s = cv_thread_start(&st->threads[i], stage_worker, st, st->name);
        if (s) {
            if (i > 0) { /* run with the workers we have */
                cv_status_free(s);
                break;
            }
            return s;
        }
    }
    return CV_STATUS_OK;
}

CvStatus cv_stage_next(CvStage *st, CvElement *out, bool *end)
{
    CvStatus s = CV_STATUS_OK;
    *end = false;
    pthread_mutex_lock(&st->mu);
    if (!st->started) {
        st->start_error = stage_start(st);
    }
    if (st->start_error) {
        s = cv_error(st->start_error->code, "%s", st->start_error->message);
        goto done;
    }
    bool waited = false;
    for (;;) {
        CvStageSlot *slot = &st->slots[st->consumed % (uint64_t)st->max_capacity];
        if (slot->ready) {
            slot->ready = false;
            s = slot->status;
            slot->status = CV_STATUS_OK;
            cv_element_move(out, &slot->element);
            if (slot->bytes) {
                cv_memory_release(st->memory, slot->bytes);
                st->held -= slot->bytes;
                slot->bytes = 0;
            }
            st->consumed++;
            pthread_cond_signal(&st->space_cv);
            break;
        }
        if (st->input_done && st->consumed == st->issued) {
            *end = true;
            break;
        }
        if (st->cancelled) {
            s = cv_error(CV_CANCELLED, "%s: the iterator was cancelled", st->name);
            break;
        }
        if (st->autotune && !waited && st->capacity < st->max_capacity && budget_has_room(st)) {
            st->capacity++;
            pthread_cond_signal(&st->space_cv);
        }
        if (!waited) { /* spin a little first: a result is usually microseconds away */
            waited = true;
            uint64_t seen = st->completed;
            pthread_mutex_unlock(&st->mu);
            cv_spin_for_progress(&st->completed, seen);
            pthread_mutex_lock(&st->mu);
            continue; /* mu was released: everything must be checked again */
        }
        s = cv_wait(&st->ready_cv, &st->mu);
        if (s)
            break;
    }
done:
    pthread_mutex_unlock(&st->mu);
    return s;
}

void cv_stage_cancel(CvStage *st)
{
    if (!st->slots) /* never initialized */
        return;
    pthread_mutex_lock(&st->mu);
    st->cancelled = true;
    pthread_cond_broadcast(&st->ready_cv);
    pthread_cond_broadcast(&st->space_cv);
    pthread_mutex_unlock(&st->mu);
}

void cv_stage_destroy(CvStage *st)
{
    if (!st->slots)
        return;
    cv_stage_cancel(st);
    for (int i = 0; i < st->num_workers; i++)
        cv_thread_join(&st->threads[i]);
    for (int i = 0; i < st->max_capacity; i++) {
        cv_status_free(st->slots[i].status);
        cv_element_clear(&st->slots[i].element);
    }
    cv_memory_release(st->memory, st->held);
    st->held = 0;
    cv_status_free(st->start_error);
    free(st->slots);
    free(st->threads);
    st->slots = NULL;
    pthread_mutex_destroy(&st->input_mu);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->ready_cv);
    pthread_cond_destroy(&st->space_cv);
}

void cv_staged_iterator_cancel(CvIterator *it)
{
    CvStagedIterator *staged = (CvStagedIterator *)it;
    cv_stage_cancel(&staged->stage);
    cv_iterator_cancel(staged->input);
}

void cv_staged_iterator_destroy(CvIterator *it)
{
    CvStagedIterator *staged = (CvStagedIterator *)it;
    cv_staged_iterator_cancel(it);
    cv_stage_destroy(&staged->stage);
    cv_iterator_destroy(staged->input);
    cv_iterator_free(it);
}
