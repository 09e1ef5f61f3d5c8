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
    st->deterministic = deterministic;
    st->autotune = capacity < max_capacity;
    st->capacity = capacity;
    st->max_capacity = max_capacity;
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

/* Worker loop:
 * 1. Under input_mu, wait (on mu) for room in the window, then pull.
 * 2. Process the unit with no lock held.
 * 3. Store the result in its slot and wake the consumer. */
static void *stage_worker(void *arg)
{
    CvStage *st = arg;
    for (;;) {
        pthread_mutex_lock(&st->input_mu);
        pthread_mutex_lock(&st->mu);
        while (!st->cancelled && !st->input_done && st->issued - st->consumed >= (uint64_t)st->capacity)
            pthread_cond_wait(&st->space_cv, &st->mu);
        if (st->cancelled || st->input_done) {
            pthread_mutex_unlock(&st->mu);
            pthread_mutex_unlock(&st->input_mu);
            break;
        }
        uint64_t seq = st->issued;
        pthread_mutex_unlock(&st->mu);

        CvElement work = {0};
        int64_t aux = 0;
        bool end = false;
        CvStatus s = st->ops->pull(st->owner, &work, &aux, &end);

        pthread_mutex_lock(&st->mu);
        if (!s && end) {
            st->input_done = true;
            pthread_cond_broadcast(&st->ready_cv);
            pthread_cond_broadcast(&st->space_cv);
            pthread_mutex_unlock(&st->mu);
            pthread_mutex_unlock(&st->input_mu);
            break;
        }
        st->issued++;
        pthread_mutex_unlock(&st->mu);
        pthread_mutex_unlock(&st->input_mu);

        CvElement out = {0};
        if (!s)
            s = st->ops->process(st->owner, &work, aux, &out);
        else
            cv_element_clear(&work);

        pthread_mutex_lock(&st->mu);
        uint64_t index = st->deterministic ? seq : st->completed;
        st->completed++;
        CvStageSlot *slot = &st->slots[index % (uint64_t)st->max_capacity];
        slot->status = s;
        cv_element_move(&slot->element, &out);
        slot->ready = true;
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
        if (st->autotune && !waited && st->capacity < st->max_capacity) {
            st->capacity++;
            pthread_cond_signal(&st->space_cv);
        }
        waited = true;
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
    cv_status_free(st->start_error);
    free(st->slots);
    free(st->threads);
    st->slots = NULL;
    pthread_mutex_destroy(&st->input_mu);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->ready_cv);
    pthread_cond_destroy(&st->space_cv);
}
