/* CvAutotuner: picks the parallelism of a pipeline's AUTOTUNE stages.
 *
 * DESIGN (tf.data's model, tensorflow/core/framework/model.cc, is the
 * anchor; docs/design.md has the comparison)
 * Every period a pool thread, at a turn boundary, takes the statistics of
 * the window since the last look (core/stats.h) and models the pipeline:
 *  - per parallel stage s: w_s, the work per unit (busy time plus the part
 *    of pulling that is not waiting for a stage below it), from the window,
 *    and its CPU part (less the blocking sections: GIL, Python code, I/O);
 *    k_s, units of s per element of the root, from the totals so far
 *    (tf.data's ratios, measured instead of declared);
 *  - the stage's output interval with p workers, k_s * w_s / p (tf.data's
 *    self time over parallelism; the pull is serial: its share does not
 *    shrink with p);
 *  - the target interval: the slower of the consumer's own time per element
 *    (time between next() calls, less its waits: STAGE_BASED's target) and
 *    the CPU floor sum_s k_s * cpu_s / cpu_budget (HILL_CLIMB's stop rule).
 * Then it climbs as tf.data's HILL_CLIMB does: from p = 2 everywhere (one
 * turn pulls while another processes), add a worker to the stage whose
 * interval is the longest, until every stage is within the target (with 25%
 * headroom) or the slowest one is at its most. Starting low each time lets
 * parallelism go down as well as up: a stage that stops being the
 * bottleneck gives its workers back, once three looks in a row agree
 * (more workers are given at once). Buffers keep
 * their own rule (grow when the consumer finds them empty, core/stage.h).
 *
 * Inline (issue 26): a stage that AUTOTUNE made parallel or buffered
 * (CvGauges.may_inline) whose work per unit is below CV_AUTOTUNE_INLINE_NS
 * costs more in hand-offs (slots, wake-ups, a thread's cache) than it
 * gains; tf.data's model charges every parallel node the same per-element
 * overhead. Such a stage gets parallelism 0: its consumer runs it inline
 * (core/stage.h), as the sequential kernel would. A buffer (a prefetch,
 * most parallelism 1) goes inline only when no stage in its subtree runs
 * turns: over inline work it is a pass-through, over parallel work it
 * still hides bursts. An inline stage still reports its work per unit
 * (sampled) and goes back to parallel (p = 2, then the climb) above
 * CV_AUTOTUNE_PARALLEL_NS in two looks in a row; while one is inline the
 * period stays at CV_AUTOTUNE_FIRST_NS. The stages below are decided first, so a
 * prefetch over a tiny map goes inline in the same look. Inline stages take
 * no part in the climb.
 *
 * The hand-off rule (issue 26): a stage whose work per unit is above
 * CV_AUTOTUNE_INLINE_NS but small per root element (a fused map+batch of a
 * tiny map: microseconds per batch) may still cost more in hand-offs than
 * it gains, which its own counters do not show (the consumer's wake-ups,
 * a spinning pool thread, cache lines crossing cores). The tuner compares
 * the root's measured interval (wall time per element) with the pipeline's
 * sequential estimate (the consumer's own time per element plus every
 * stage's work per root element): when parallel is not faster, it tries
 * the stage inline (a trial), and after at least 2 ms and 64 root elements
 * compares the interval inline with the one it had in parallel: slower by
 * more than 5%, the stage goes back to parallel and the rule waits before
 * trying it again (20 ms, doubled at each refusal). A stage that went
 * inline goes back to parallel when its work per unit grows 4x (at least
 * above CV_AUTOTUNE_PARALLEL_NS); a buffer over it goes back with it.
 * In the first period the tuner looks every
 * CV_AUTOTUNE_QUICK_NS, at everything since the start, and makes the inline
 * decisions only: an epoch of a tiny pipeline lasts a few tens of
 * milliseconds.
 *
 * The start probe (issue 26): going parallel first and inline after the
 * first looks cost every epoch its first milliseconds in hand-offs (pool
 * threads started and spinning, the trial). So a stage that may go inline
 * *starts* inline when this tuner will decide it (core/stage.h, "Inline":
 * the model runs, the stage's node is its own, its function is native),
 * times every unit it runs, by CPU time, until CV_STAGE_PROBE_UNITS units
 * or CV_STAGE_PROBE_NS of work, and posts the work per unit; the tuner
 * looks at once (cv_stats_want_look: a look asked for before its time is a
 * quick one) and gives the verdict, stages below first, recorded as a
 * choice with `probe` set: parallel (at its most, as a stage that never
 * started inline: the climb then takes back what is not needed) when its
 * own work (less the inline stages right below, run inside its pulls) is
 * above CV_AUTOTUNE_INLINE_NS per input element (a batch's unit has many),
 * or above CV_AUTOTUNE_HANDOFF_MAX_NS per root element (what the hand-off
 * rule keeps parallel); for a buffer, above CV_AUTOTUNE_PARALLEL_NS (over
 * inline stages its own work is their kernels' glue), or when a stage below
 * runs turns; otherwise inline from the start (from 0 to 0), with no
 * parallel phase. No other rule moves a stage before its verdict. After
 * it, everything is as above (the 4x rule from the probe's work, the
 * trial).
 *
 * The gain rule (issue 26): more workers may buy nothing: a Python map
 * that computes under the GIL runs one call at a time however many turns
 * it has, and the turns only take the GIL from each other (and from the
 * consumer). Its work per unit grows with its parallelism, so the model
 * above, which sees work, never finds it. So the tuner measures what the
 * workers gain. A parallel AUTOTUNE stage whose turns spent at least half
 * their time in blocking sections and at least 2% of it waiting for the
 * GIL (CvNodeTotals.contended_ns, timed where the binding takes it; turns
 * that wait on I/O and call Python now and then wait less) is tried
 * with fewer: after at least 5 ms and 16 root elements at one parallelism,
 * the root's interval then is compared with the interval over the next
 * such window; no more than 25% slower (short windows on a shared machine
 * differ by 10-20%; within that, fewer threads cost less CPU), the stage
 * keeps it and the climb may give it no more (its cap). The trial is
 * inline at once when the turns waited for the GIL a tenth of their time
 * or more, the stage may go inline and a root element takes 100 us or
 * more (a batch of a Python map): one turn would still pass the GIL back
 * and forth with its consumer, which waits up to the interpreter's switch
 * interval (5 ms) for it each time (one worker measured 2-4x slower than
 * three under load). Otherwise it is at one turn, then inline against one
 * turn the same way; a stage whose inline trial lost tries it again
 * later, in turn with the most. Slower, or already slower than the old
 * interval allows for the root elements so far (a sleeping Python map,
 * I/O), it goes back; a contended stage is tried again after 20 ms
 * (doubled at each refusal), another after 50 ms. An AUTOTUNE buffer
 * right above a stage that this rule made inline with root elements of
 * 100 us or more (a prefetch over a batched Python map) goes inline with
 * it (gain_carry): left parallel it runs the stage on its own thread and
 * takes the GIL from its consumer for every element (0.89x the sequential
 * pipeline). A capped stage is tried at its most after a back-off (50 ms,
 * doubled at each refusal, up to 10 s), with the carried buffer still
 * inline: more than 25% faster lifts the cap (a function that started
 * releasing the GIL, NumPy on large arrays) and the buffer follows;
 * slower than the slack allows after 1 ms, it goes back at once (a
 * GIL-bound stage at its most costs most). Trials take no part in the
 * climb, and while one runs the tuner's looks are quick ones, every
 * CV_AUTOTUNE_QUICK_NS. The amount of contention is no measure of the
 * loss: a thread the interpreter makes drop the GIL waits for it again
 * inside the function, unseen; the throughput is the measure. The
 * hand-off rule may then take a stage at one turn inline. Choices made by
 * this rule have `gain` set.
 *
 * A parallel interleave (kernels/interleave.c) takes part as a stage: its
 * turns are counted as units of work, the climb and the inline rules move
 * its limit, and at 0 its consumer runs its turns; the gain rule tries it
 * when its interleave function's Python takes the GIL from its turns. It
 * has no start probe: it starts at its most, so a cycle of files opens at
 * once.
 *
 * The period starts at CV_AUTOTUNE_FIRST_NS, doubles up to
 * CV_AUTOTUNE_MAX_NS, and drops back after a change. Every change is
 * recorded (cv_autotuner_history) for the statistics API.
 *
 * Algorithms: CV_AUTOTUNE_MODEL (the above; tf.data's DEFAULT, HILL_CLIMB,
 * GRADIENT_DESCENT and STAGE_BASED all select it) and CV_AUTOTUNE_FIXED
 * (MAX_PARALLELISM: every AUTOTUNE stage at its most, as before the model),
 * kept for comparison in benchmarks.
 */
#ifndef CV_AUTOTUNE_H
#define CV_AUTOTUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/stats.h"

#define CV_AUTOTUNE_QUICK_NS 1000000LL  /* 1 ms: looks in the first period, inline decisions only */
#define CV_AUTOTUNE_FIRST_NS 20000000LL /* 20 ms */
#define CV_AUTOTUNE_MAX_NS 200000000LL  /* 0.2 s: adapts within half a second */
#define CV_AUTOTUNE_HISTORY 256

typedef enum CvAutotuneAlgorithm {
    CV_AUTOTUNE_MODEL = 0,
    CV_AUTOTUNE_FIXED = 1,
} CvAutotuneAlgorithm;

/* One change of one stage's parallelism. */
typedef struct CvAutotuneChoice {
    int64_t at_ns;      /* since the pipeline started */
    int node;           /* the stage's statistics node */
    int from, to;       /* parallelism; 0: inline, on the consumer's thread */
    int bottleneck;     /* the node with the longest interval before the change */
    double target_ns;   /* the target interval per root element */
    double interval_ns; /* the modelled interval of the stage after the change */
    bool probe;         /* the verdict on the stage's start probe (from 0: it started inline) */
    bool gain;          /* the gain rule's: a trial of other parallelism, or the way back from one */
} CvAutotuneChoice;
/* Its fields by name (core/stats.h), ending with a NULL name. */
extern const CvField cv_autotune_choice_fields[];

typedef struct CvAutotuner CvAutotuner;

CvAutotuner *cv_autotuner_new(CvStats *stats, int cpu_budget, CvAutotuneAlgorithm algorithm);
void cv_autotuner_free(CvAutotuner *tuner);
/* Called by pool threads between turns (core/pipeline.c installs it as the
 * pool's tick): runs the model when a period has passed (one thread at a
 * time; the others return at once). The model publishes each stage's
 * parallelism in the stage's shared parameter (CvGauges.limit), never
 * calling into the pool; returns whether it changed one, so that the pool
 * can wake a thread for a raised limit. */
bool cv_autotuner_tick(CvAutotuner *tuner);
/* Copy up to `cap` of the latest choices, oldest first; returns how many
 * were made in all (so a caller can tell when some were dropped). */
int64_t cv_autotuner_history(CvAutotuner *tuner, CvAutotuneChoice *out, int cap, int *copied);
/* Model runs so far, and the last modelled bottleneck node (-1: none yet). */
int64_t cv_autotuner_runs(CvAutotuner *tuner);
int cv_autotuner_bottleneck(CvAutotuner *tuner);
CvAutotuneAlgorithm cv_autotuner_algorithm(const CvAutotuner *tuner);
int cv_autotuner_budget(const CvAutotuner *tuner);

#endif
