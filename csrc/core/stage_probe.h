/* A stage's start probe (core/stage.h, "Inline"): an AUTOTUNE stage that
 * may run inline starts inline, times its first units and posts their work
 * per unit for the autotuner's verdict (core/autotune.h, "The start
 * probe"). The consumer's thread only (the stage's next()), but for
 * `state`, which the autotuner reads and moves from POSTED to DONE. */
#ifndef CV_STAGE_PROBE_H
#define CV_STAGE_PROBE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/dataset.h"
#include "core/pool.h"

#define CV_STAGE_PROBE_UNITS 64
#define CV_STAGE_INLINE_SAMPLE 64
#define CV_STAGE_INLINE_SAMPLE_MAX 256
#define CV_STAGE_PROBE_NS 200000LL       /* 200 us of work: a slow unit says enough */
#define CV_STAGE_PROBE_WAIT_NS 2000000LL /* no verdict in 2 ms: the stage decides */
#define CV_STAGE_PROBE_INLINE_NS 2000.0  /* its rule then (autotune.c's INLINE_NS) */

/* state: a CvProbe (core/stats.h), the consumer's and the autotuner's
 * (POSTED to DONE by compare-and-swap, so that one of them decides). The
 * rest is the consumer's; work is written before POSTED (release) and read
 * by the stage's measure() after it (acquire). */
typedef struct CvStageProbe {
    _Atomic int state;
    bool probing; /* RUNNING or POSTED: every unit is timed */
    uint64_t units;
    int64_t ns, posted_at;
    double work; /* ns per unit, posted */
} CvStageProbe;

void cv_stage_probe_init(CvStageProbe *p);
/* At the first next(): whether to start inline and probe; true when the
 * autotuner will give the verdict (self: the stage's iterator, NULL: no
 * probe), and the probe is then RUNNING. */
bool cv_stage_probe_start(CvStageProbe *p, const CvIterator *self);

/* One unit, timed from begin to end (blocked: its ns in blocking sections,
 * cv_blocking_ns). Its work is the smaller of its wall time and its CPU
 * time plus blocked time: time descheduled on a busy machine is not the
 * stage's work, waiting for I/O or sleeping is. The probes' own bookkeeping
 * (CPU clock reads, the autotuner's looks) is counted per thread and left
 * out of the units of the probes around it (a prefetch over a probing map). */
typedef struct CvProbeUnit {
    int64_t wall, cpu, overhead;
} CvProbeUnit;
void cv_stage_probe_begin(CvProbeUnit *u);
/* Counts the unit; posts the work per unit when the probe has seen enough
 * and asks for a look (the pool's tick: the verdict, normally in that very
 * look); with no verdict after PROBE_WAIT_NS, decides alone (limit: the
 * task's, set to max_workers when going parallel). Returns whether the
 * probe is over (DONE). */
bool cv_stage_probe_end(CvStageProbe *p, const CvProbeUnit *u, int64_t blocked, const CvIterator *self,
                        CvPool *pool, _Atomic int *limit, int max_workers);
/* An inline stage's distance between timed units (core/stage.h, Inline),
 * after a timed unit that took `took` ns: doubled up to
 * CV_STAGE_INLINE_SAMPLE_MAX while it costs no more than twice the running
 * mean (*mean_ns, updated), back to CV_STAGE_INLINE_SAMPLE otherwise. */
int cv_stage_sample_pace(int every, int64_t *mean_ns, int64_t took);
/* The pool's tick from an inline stage, its time counted as bookkeeping. */
void cv_stage_probe_tick(CvPool *pool);

#endif
