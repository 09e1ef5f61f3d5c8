/* A stage's start probe (core/stage_probe.h). */
#include "core/stage_probe.h"

#include <time.h>

#include "core/stats.h"
#include "core/thread.h"

/* This thread's probe bookkeeping so far (see CvProbeUnit). */
static _Thread_local int64_t overhead_ns;

/* This thread's CPU time: a system call (~0.1-1 us), the probe's units only. */
static int64_t cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void cv_stage_probe_init(CvStageProbe *p)
{
    atomic_init(&p->state, CV_PROBE_OFF);
    p->probing = false;
    p->units = 0;
    p->ns = p->posted_at = 0;
    p->work = 0;
}

bool cv_stage_probe_start(CvStageProbe *p, const CvIterator *self)
{
    if (!self || !cv_stats_may_start_inline(self))
        return false;
    atomic_store_explicit(&p->state, CV_PROBE_RUNNING, memory_order_relaxed);
    p->probing = true;
    return true;
}

void cv_stage_probe_begin(CvProbeUnit *u)
{
    int64_t t = cv_now_ns();
    u->overhead = overhead_ns;
    u->cpu = cpu_ns();
    u->wall = cv_now_ns();
    overhead_ns += u->wall - t;
}

int cv_stage_sample_pace(int every, int64_t *mean_ns, int64_t took)
{
    if (*mean_ns > 0 && took > 2 * *mean_ns)
        every = CV_STAGE_INLINE_SAMPLE;
    else if (every < CV_STAGE_INLINE_SAMPLE_MAX)
        every *= 2;
    *mean_ns = *mean_ns ? (3 * *mean_ns + took) / 4 : took;
    return every;
}

void cv_stage_probe_tick(CvPool *pool)
{
    int64_t t = cv_now_ns();
    cv_pool_run_tick(pool);
    overhead_ns += cv_now_ns() - t;
}

/* Count one unit of `took` ns, post when the probe has seen enough, run the
 * tick, and decide alone after PROBE_WAIT_NS. */
static bool probe_step(CvStageProbe *p, int64_t took, int64_t now, const CvIterator *self, CvPool *pool,
                       _Atomic int *limit, int max_workers)
{
    if (atomic_load_explicit(&p->state, memory_order_relaxed) == CV_PROBE_RUNNING) {
        p->units++;
        p->ns += took;
        if (p->units < CV_STAGE_PROBE_UNITS && p->ns < CV_STAGE_PROBE_NS)
            return false;
        p->work = (double)p->ns / (double)p->units;
        p->posted_at = now;
        atomic_store_explicit(&p->state, CV_PROBE_POSTED, memory_order_release);
        cv_stats_want_look(self->stats);
    }
    cv_pool_run_tick(pool); /* the verdict: normally this very look */
    int posted = CV_PROBE_POSTED;
    if (now - p->posted_at >= CV_STAGE_PROBE_WAIT_NS &&
        atomic_compare_exchange_strong(&p->state, &posted, CV_PROBE_DONE) && p->work >= CV_STAGE_PROBE_INLINE_NS)
        atomic_store_explicit(limit, max_workers, memory_order_relaxed);
    p->probing = atomic_load_explicit(&p->state, memory_order_acquire) != CV_PROBE_DONE;
    return !p->probing;
}

bool cv_stage_probe_end(CvStageProbe *p, const CvProbeUnit *u, int64_t blocked, const CvIterator *self,
                        CvPool *pool, _Atomic int *limit, int max_workers)
{
    int64_t t = cv_now_ns(), cpu = cpu_ns() - u->cpu;
    int64_t nested = overhead_ns - u->overhead; /* the probes' inside this unit */
    int64_t wall = t - u->wall - nested;
    cpu += blocked - nested;
    bool done = probe_step(p, cpu > 0 && cpu < wall ? cpu : wall > 0 ? wall : 0, t, self, pool, limit, max_workers);
    overhead_ns += cv_now_ns() - t;
    return done;
}
