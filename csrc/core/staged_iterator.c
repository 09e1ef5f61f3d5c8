/* A stage's setup calls, made by its kernel before the first next(), and
 * the vtable slots that iterators running a stage over one input
 * (core/stage.h, CvStagedIterator) share. No state of their own; each
 * follows the thread rules of the stage call it makes. Split from stage.c
 * (the file limit). */
#include <pthread.h>

#include "core/stage.h"

void cv_stage_set_chunk(CvStage *st, int max_chunk, bool window_follows_chunk)
{
    st->max_chunk = max_chunk < 1 ? 1 : max_chunk > CV_STAGE_MAX_CHUNK ? CV_STAGE_MAX_CHUNK : max_chunk;
    st->chunk = 1;
    st->window_follows_chunk = window_follows_chunk;
    if (window_follows_chunk && st->capacity > 2 * st->max_workers)
        st->capacity = 2 * st->max_workers;
}

void cv_stage_allow_inline(CvStage *st, const CvIterator *self, const CvDataset *input)
{
    st->may_inline = true;
    st->self = self;
    st->input_may_block = input->may_block;
}

void cv_stage_set_memory(CvStage *st, CvMemory *memory, const char *knob)
{
    st->memory = memory;
    if (knob)
        st->memory_knob = knob;
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

static uint64_t counted(_Atomic uint64_t *counter)
{
    return atomic_load_explicit(counter, memory_order_relaxed);
}

void cv_stage_counters_measure(CvStageCounters *c, CvNodeTotals *totals)
{
    totals->units += counted(&c->units);
    totals->turns += counted(&c->turns);
    totals->busy_ns += counted(&c->busy_ns);
    totals->input_ns += counted(&c->input_ns);
    totals->full_ns += counted(&c->full_ns);
    totals->wait_ns += counted(&c->wait_ns);
    totals->waits += counted(&c->waits);
    totals->blocked_ns += counted(&c->blocked_ns);
    totals->contended_ns += counted(&c->contended_ns);
}

void cv_staged_iterator_measure(CvIterator *it, CvNodeTotals *totals, CvGauges *gauges)
{
    CvStage *st = &((CvStagedIterator *)it)->stage;
    if (!st->slots) /* sequential */
        return;
    cv_stage_counters_measure(&st->counters, totals);
    pthread_mutex_lock(&st->mu);
    gauges->buffer += st->capacity;
    gauges->buffered += (int64_t)(st->issued - st->consumed);
    gauges->bytes += (int64_t)st->held;
    pthread_mutex_unlock(&st->mu);
    gauges->pulling += atomic_load_explicit(&st->counters.pulling, memory_order_relaxed);
    gauges->processing += atomic_load_explicit(&st->counters.processing, memory_order_relaxed);
    gauges->max_buffer += st->max_capacity;
    gauges->tuned_buffer |= st->autotune;
    gauges->parallelism += atomic_load_explicit(&st->task.limit, memory_order_relaxed);
    gauges->max_parallelism += st->max_workers;
    gauges->tuned_parallelism |= st->tune_workers;
    gauges->may_inline |= st->may_inline;
    gauges->limit = &st->task.limit;
    gauges->probe = &st->probe.state;
    gauges->probe_state = atomic_load_explicit(&st->probe.state, memory_order_acquire);
    if (gauges->probe_state == CV_PROBE_POSTED)
        gauges->probe_work_ns = st->probe.work; /* written before POSTED */
}
