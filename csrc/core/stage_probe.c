/* A stage's start probe (core/stage.h, "Inline"; core/stage_probe.h). */
#include "core/stage_probe.h"

#include "core/stats.h"

/* Consumer, the first next(): start inline and probe (see Inline) when the
 * autotuner will give the verdict; nothing was pulled yet, so nothing is in
 * flight. The task is never submitted until the limit goes above 0. */
bool cv_stage_probe_start(CvStage *st)
{
    if (!st->may_inline || !st->self || st->restored_next < st->nrestored ||
        !cv_stats_may_start_inline(st->self))
        return false;
    atomic_store_explicit(&st->task.limit, 0, memory_order_relaxed);
    atomic_store_explicit(&st->probe, CV_PROBE_RUNNING, memory_order_relaxed);
    st->probing = true;
    st->inline_countdown = 1;
    st->inline_on = true;
    st->started = true;
    return true;
}

/* Consumer, probing: count one timed unit of `took` ns; post the work per
 * unit when the probe has seen enough, ask for a look, and wait (running
 * the tick) for the verdict, or give it alone after PROBE_WAIT_NS. */
void cv_stage_probe_step(CvStage *st, int64_t took, int64_t now)
{
    int state = atomic_load_explicit(&st->probe, memory_order_acquire);
    if (state == CV_PROBE_RUNNING) {
        st->probe_units++;
        st->probe_ns += took;
        if (st->probe_units < CV_STAGE_PROBE_UNITS && st->probe_ns < CV_STAGE_PROBE_NS)
            return;
        st->probe_work = (double)st->probe_ns / (double)st->probe_units;
        st->probe_posted_at = now;
        atomic_store_explicit(&st->probe, CV_PROBE_POSTED, memory_order_release);
        cv_stats_want_look(st->self->stats);
    }
    cv_pool_run_tick(st->task.pool); /* the verdict: normally this very look */
    int posted = CV_PROBE_POSTED;
    if (now - st->probe_posted_at >= CV_STAGE_PROBE_WAIT_NS &&
        atomic_compare_exchange_strong(&st->probe, &posted, CV_PROBE_DONE) &&
        st->probe_work >= CV_STAGE_PROBE_INLINE_NS)
        atomic_store_explicit(&st->task.limit, st->max_workers < 2 ? st->max_workers : 2, memory_order_relaxed);
    if (atomic_load_explicit(&st->probe, memory_order_acquire) == CV_PROBE_DONE) {
        st->probing = false;
        st->inline_countdown = CV_STAGE_INLINE_SAMPLE;
    }
}
