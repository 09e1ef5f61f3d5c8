/* CvStage: an ordered, bounded, multi-threaded producer stage.
 *
 * DESIGN
 * The asynchronous kernels (parallel map, parallel batch, prefetch) share
 * one mechanism. The stage is a task of the pipeline's pool (core/pool.h):
 * each turn (1) takes the input lock and pulls up to `chunk` units of work
 * from the input, numbering them with sequence numbers, (2) processes them
 * with no lock held, and (3) stores each {status, element} in its slot. Up
 * to `limit` turns run at once on pool threads (the stage's parallelism).
 * Chunks amortize lock hand-offs and wake-ups (and, for Python functions,
 * GIL acquisitions) over several elements.
 * The consumer takes slots in sequence order (deterministic) or in completion
 * order (non-deterministic). At most `capacity` units are in flight or
 * buffered, so memory is bounded; a turn that finds no room ends (the task
 * goes idle, "full") and the consumer resubmits it when it retires slots. An
 * autotuned stage grows its capacity by one, up to max_capacity, whenever
 * the consumer finds it empty.
 *
 * Errors travel in their slot, so a parallel stage fails at exactly the
 * element where the sequential one would, and goes on afterwards.
 *
 * Hand-offs (what a stage costs per element when its work is cheap):
 *  - The consumer takes every ready slot per lock: under mu it extends its
 *    *run*, the consecutive ready slots from the next sequence number (in
 *    completion order for a non-deterministic stage, so all ready ones), and
 *    hands them out one per next() with no lock. The slots stay reserved
 *    while the run is handed out; the consumer *retires* them (frees them
 *    for the workers) under mu, in groups: when the run is used up (taking
 *    what became ready meanwhile as the next run), or after low_water
 *    elements, whichever comes first: one lock per run, not per element.
 *  - Workers are woken in batches: a retire resubmits a full stage only once
 *    the free room reaches low_water = max(1, capacity / 2) (stage.c says
 *    why), or at once when the consumer is starved (about to wait). A turn pulls up to `chunk`
 *    units. Turns wake the consumer only when it sleeps.
 *  - cv_stage_try_next never waits, so the binding can call it with the GIL
 *    held and release the GIL only when it answers "would block".
 *  - Wake-ups are signalled after unlocking mu. Before sleeping, the
 *    consumer spins for a time fitted to its recent waits: a failed spin
 *    halves the next one (down to none: a slow producer costs no CPU), a
 *    wait shorter than CV_SPIN_NS sets it to twice that wait.
 *
 * Memory: results waiting in slots are charged to a RAM budget
 * (cv_stage_set_memory; the process default otherwise), once per chunk, and
 * released when their slots are retired, once per group: an element handed
 * out stays charged until then, i.e. while fewer than low_water elements of
 * a longer run have been handed out after it; when next() returns with its
 * run used up, nothing handed out is charged. In a stage of fixed sizes a
 * result that does not fit becomes a RESOURCE_EXHAUSTED error in its slot
 * (its element is dropped). An AUTOTUNE stage (buffer or parallelism)
 * takes the budget as a ceiling instead: its capacity grows only while the
 * budget has room for another element of the average size, a turn pulls
 * nothing while it has none (results are buffered), and a result that does
 * not fit waits for the consumer to free room while an older result of the
 * stage is still to be taken. The oldest one never waits (its consumer
 * waits for it): it is charged over the limit, by one result, unless it
 * alone exceeds the budget (then the error).
 *
 * Locks: input_mu (serializes pull) is taken before mu (everything else);
 * never the other way round. Neither is held while calling process() or
 * while the consumer runs its interrupt check. mu guards short bookkeeping
 * only: it is never held across a call out or a wait for another lock, so
 * the consumer may take it while holding a foreign lock (the binding's GIL,
 * in try_next). The consumer never takes input_mu (pull may take the GIL).
 * A consumer on a pool thread (a stage above) that finds nothing ready runs
 * a turn of this stage itself when it can (cv_task_help), and otherwise
 * waits in a blocking section. The task joins the pool on the first next()
 * (the pool current on the thread that made the stage, or a private one of
 * `workers` threads) and leaves it in cv_stage_destroy(). Measurements go
 * to `counters` (see CvStageCounters).
 *
 * Inline (AUTOTUNE only): a stage whose work per unit is smaller than a
 * hand-off costs more in parallel than on its consumer's thread. Such a
 * stage (cv_stage_allow_inline: its parallelism or buffer is AUTOTUNE)
 * starts inline when the autotuner will decide it (its model runs, the
 * stage's statistics node is its own: cv_stats_may_start_inline): at the
 * first next() its task's limit is 0 and the task never joins the pool's
 * queue, so no pool thread runs, wakes or spins for it. It *probes*: it
 * times every unit it runs until CV_STAGE_PROBE_UNITS units or
 * CV_STAGE_PROBE_NS of work, then posts the work per unit (CvGauges.probe)
 * and asks the autotuner for a look at once (cv_stats_want_look). The
 * tuner's verdict (core/autotune.h, "The start probe") is a choice like
 * any other: parallel (the limit goes up and the next next() submits the
 * task) or inline from the start (the limit stays 0). Should no verdict
 * come within CV_STAGE_PROBE_WAIT_NS (the node stopped being the tuner's:
 * a second live iterator), the stage decides alone on its work per unit
 * (CV_STAGE_PROBE_INLINE_NS), with a compare-and-swap on the probe state
 * so that exactly one of the two decides. Later, the autotuner can also
 * make a parallel stage inline by setting the task's limit to 0. The
 * consumer then hands out what was pulled already, pauses
 * the task once no turn runs (cv_task_pause) and from then on runs each
 * unit itself in next(): pull, process, hand out, with no lock, no slot and
 * no wake-up, as the sequential kernel would. try_next does the same when
 * its input cannot wait for another thread (its dataset does not
 * may_block, or ops->try_pull answers without waiting), so that the binding
 * keeps the GIL as it does for a sequential pipeline; otherwise it answers
 * "would block" and next() runs the unit. It times one unit in
 * CV_STAGE_INLINE_SAMPLE into the same counters (scaled), so the autotuner
 * still sees the work per unit, and runs the autotuner's tick itself (no
 * turn runs to run it); the distance doubles up to CV_STAGE_INLINE_SAMPLE_MAX
 * while the timed units cost what they did (within 2x) and drops back at
 * once when one costs more, so growing work is seen within 64 units.
 * Between timed units the kernel takes its sequential path (the *direct*
 * path, cv_stage_inline_fast): a unit the stage runs itself grants the
 * units up to the next timed one (fast_left) when nothing else needs the
 * stage's path, so each costs a counter and one relaxed load of the limit;
 * a prefetch at the pipeline's root hands its grant on to the pipeline
 * (CvKernel.pass_through), which then calls the prefetch's input itself. When the limit goes above 0 again, the next next()
 * resumes the task: nothing is in flight then, so order, values, errors and
 * saved positions are those of either mode.
 *
 * Exact resume (core/iterator_state.h; tf.data's "symbolic checkpoint" idea). A stage
 * runs ahead: it has pulled units that the consumer has not seen, so its
 * input's current position is not the consumer's. save() describes the
 * position right after the last unit handed out, two ways:
 *  - Marks. A turn that pulls a unit (under input_mu, the only place the
 *    input is touched) snapshots the pull side right after it
 *    (ops->save_input: the owner's pull-side fields and the input's frame)
 *    into the unit's slot, a reusable writer (no malloc once warm). run_pop
 *    swaps that mark into last_mark; save() writes no pending units and
 *    last_mark's bytes. A unit of several pulls (batch rows) is marked after
 *    its last pull; an error unit's mark is the position after the error.
 *  - Quiesce (the fallback). Under input_mu (no turn pulls), wait for the
 *    units in flight, then write the pulled-but-not-handed-out results in
 *    hand-out order (status and element) and the input's position now.
 *    restore() puts them in `restored`, handed out before the slots.
 *  - Inline (see Inline), nothing is pulled ahead: the position after the
 *    last unit is the pull side's now. An armed stage takes it as its mark
 *    when a save, a stage above or going parallel again wants it
 *    (mark_pending), not per unit (a fused batch above saves the inline map
 *    below for every batch, and so arms it).
 * Marks cost a save of the input subtree per unit (~10% of prefetch(64)
 * over a range, docs/resume.md), so a stage takes them only once *armed*: by
 * its first save (which quiesces) or a restore. It is not armed, and every
 * save quiesces, when its order is not deterministic (what was handed out is
 * no prefix of the pulls), when the input's position exceeds
 * CV_STAGE_MARK_LIMIT bytes, results in flight below not counted (a shuffle
 * buffer below: a copy per pull would cost more than the in-flight results
 * once per save), or when a stage below
 * stays unarmed (each mark would quiesce it). `base` is the position before
 * unit base_seq (arming's or the restore's): the mark of the units pulled
 * before arming, which carry none.
 */
#ifndef CV_STAGE_H
#define CV_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dataset.h"
#include "core/pool.h"
#include "core/iterator_state.h"
#include "core/stage_probe.h"
#include "core/stage_status.h"
#include "core/stats.h"
#include "core/tensor.h"
#include "core/thread.h"

typedef struct CvStageUnit CvStageUnit;

typedef struct CvStageOps {
    /* Pull one unit of work from the input (input lock held, never
     * concurrent). On OK either *end is set, or *work holds the unit and
     * *aux a kernel-defined count. A non-OK status is delivered at this
     * position. */
    CvStatus (*pull)(void *owner, CvElement *work, int64_t *aux, bool *end);
    /* Turn work into an output element. Concurrent, no lock held. Takes
     * ownership of *work. */
    CvStatus (*process)(void *owner, CvElement *work, int64_t aux, CvElement *out);
    /* Optional: process n units at once (units whose status is already set
     * are skipped); otherwise process() is called for each. */
    void (*process_chunk)(void *owner, CvStageUnit *units, int n);
    /* Exact resume: write / read the pull side's position (the owner's
     * pull-side fields, then the input's frame). save_input runs under the
     * input lock (or before the stage starts); NULL: the stage cannot be
     * saved. */
    CvStatus (*save_input)(void *owner, CvStateWriter *w);
    CvStatus (*restore_input)(void *owner, CvStateReader *r);
    /* Optional, for an inline stage's try_next over an input that may
     * block: pull as the input's try_next does (*would_block: nothing
     * taken). */
    CvStatus (*try_pull)(void *owner, CvElement *work, int64_t *aux, bool *end, bool *would_block);
} CvStageOps;

#define CV_STAGE_MAX_CHUNK 16

/* One unit of work on its way through a worker. */
struct CvStageUnit {
    CvStatus status;  /* a pull error, or the result of processing */
    CvElement work;   /* owned until processed */
    int64_t aux;
    CvElement out;
};

typedef struct CvStageSlot {
    CvStatus status;
    CvElement element;
    size_t bytes; /* charged to the budget for element */
    bool ready;
    bool marked;       /* mark holds the pull side's position after this unit */
    CvStateWriter mark; /* written by the turn that pulled the unit (input_mu) */
} CvStageSlot;

/* What a stage measured, for statistics and the autotuner. Counters only
 * grow; turns add to them once per turn (relaxed atomics, no lock), the
 * consumer once per wait. */
typedef struct CvStageCounters {
    _Atomic uint64_t units;   /* units processed */
    _Atomic uint64_t turns;
    _Atomic uint64_t busy_ns;  /* processing (the stage's own work) */
    _Atomic uint64_t input_ns; /* pulling: the input's work and waits for it */
    _Atomic uint64_t full_ns;  /* idle with a full buffer: waiting for the consumer */
    _Atomic uint64_t wait_ns;  /* the consumer waiting in next() for a result */
    _Atomic uint64_t waits;
    _Atomic uint64_t blocked_ns; /* turns inside blocking sections (core/pool.h) */
    _Atomic uint64_t contended_ns; /* turns waiting to enter a one-thread section (the GIL; core/blocking.h) */
    /* Gauges: turns pulling from the input / processing now (a stall
     * watchdog names the stage and what it waits on). */
    _Atomic int pulling;
    _Atomic int processing;
} CvStageCounters;

typedef struct CvStage {
    const CvStageOps *ops;
    void *owner;
    const char *name;
    int max_workers; /* most turns at once; the autotuner moves the task's limit in [1, max_workers], or 0: inline */
    bool tune_workers; /* num_parallel_calls=AUTOTUNE: the autotuner may change the limit */
    int chunk;     /* units pulled per turn, 1..max_chunk; guarded by mu */
    int max_chunk; /* 1 unless set by cv_stage_set_chunk */
    bool window_follows_chunk;
    bool deterministic;
    bool autotune;
    bool may_inline;       /* cv_stage_allow_inline */
    bool input_may_block;  /* its input's dataset may wait for other threads */
    int capacity;     /* current in-flight limit, guarded by mu */
    int max_capacity; /* number of slots */
    CvMemory *memory; /* borrowed (the owner's dataset holds it); NULL: the default */
    const char *memory_knob;

    pthread_mutex_t input_mu;
    atomic_bool input_contended; /* a turn found input_mu taken: resubmit on unlock */
    pthread_mutex_t mu;
    pthread_cond_t ready_cv; /* the consumer waits here */

    /* Guarded by mu. */
    CvStageSlot *slots;
    uint64_t issued;    /* units pulled from the input */
    uint64_t consumed;  /* units retired: their slots are free for workers */
    uint64_t completed; /* units processed (slot index in completion order) */
    size_t held;        /* bytes of the results in unretired slots, charged to memory */
    CvMemoryHolder holder; /* the same bytes, listed on memory at the first charge */
    bool full;          /* the task went idle for want of room; the consumer resubmits it */
    int64_t full_since; /* when it did */
    bool consumer_waiting; /* the consumer is asleep on ready_cv */
    bool input_done;
    bool cancelled;
    bool started; /* written by the consumer only */

    /* Consumer-private (the thread in next()/try_next(); no lock): slots
     * [consumed, run_next) were handed out and wait to be retired, slots
     * [run_next, run_end) are ready and not yet handed out. Workers never
     * touch a slot before it is retired. */
    uint64_t run_next;
    uint64_t run_end;
    size_t run_bytes;     /* bytes of the handed-out, unretired slots */
    uint64_t run_low_water; /* low_water when the run was last extended (capacity is mu's) */
    int64_t spin_ns;      /* how long to spin before sleeping, fitted to recent waits */
    bool inline_on;       /* the task is paused: next() runs the units (see Inline) */
    int inline_countdown; /* units to the next timed one (1 while probing: every one) */
    int inline_every;     /* the distance between timed units (see Inline) */
    int fast_left;        /* direct units granted before the next timed one (cv_stage_inline_fast) */
    int64_t sample_ns;    /* the timed units' running mean */
    const CvIterator *self; /* the stage's iterator (its statistics node); NULL: no probe */
    CvStageProbe probe;     /* the start probe (see Inline; core/stage_probe.h) */

    CvTask task;       /* attached to the pipeline's pool at the first next() */
    CvStageCounters counters;

    /* Exact resume (see DESIGN). armed: guarded by input_mu. The rest is
     * the consumer's: last_mark is the mark of the last unit handed out when
     * last_marked; mark_pending: inline and armed, the mark is the pull
     * side's position now, taken when wanted (take_pending_mark); base the
     * position before unit base_seq when has_base;
     * restored[restored_next, nrestored) results to hand out first. */
    bool armed;
    bool last_marked, mark_pending, has_base;
    uint64_t base_seq;
    CvStateWriter last_mark, base;
    CvStageSlot *restored;
    int nrestored, restored_next;
} CvStage;

/* Bytes of the input's position above which a stage takes no marks. */
#define CV_STAGE_MARK_LIMIT 4096

/* workers: most turns at once (>= 1); tune_workers: num_parallel_calls was
 * AUTOTUNE, so the autotuner may run fewer. */
CvStatus cv_stage_init(CvStage *st, const CvStageOps *ops, void *owner, const char *name,
                       int workers, bool tune_workers, int capacity, int max_capacity,
                       bool deterministic);
/* Set before the first next(): let workers pull and process up to
 * `max_chunk` units per turn. The chunk starts at 1 and adapts after each
 * turn: as many units as take about CV_STAGE_CHUNK_NS to process and fit in
 * CV_STAGE_CHUNK_BYTES, at least one; pulling stops early once a turn has
 * taken CV_STAGE_CHUNK_NS, so a slow input never holds back what was pulled.
 * Cheap work on small elements is handed over in runs, while slow work (I/O,
 * sleeps) keeps one unit per worker and full parallelism. With
 * window_follows_chunk the window (capacity) follows as 2 x workers x chunk
 * (parallel map); otherwise it stays as set (prefetch's buffer_size). */
void cv_stage_set_chunk(CvStage *st, int max_chunk, bool window_follows_chunk);

/* Set before the first next(): the autotuner may run this stage inline
 * (see Inline). Only for an AUTOTUNE parallelism or buffer: an explicit one
 * is the user's. self: the stage's iterator (borrowed: it embeds the
 * stage); NULL: the stage never starts inline (a Python function may wait
 * for another element's call); input: the stage's input dataset (its
 * may_block). */
void cv_stage_allow_inline(CvStage *st, const CvIterator *self, const CvDataset *input);
#define CV_STAGE_SETTLE_WAIT_NS 200000L /* going inline while a turn ends: look again this soon */

/* Consumer, inline (see Inline): whether this next()/try_next() may run
 * its unit with the kernel's own sequential code instead of the stage's
 * (a few calls less per element). The stage's own inline unit grants
 * fast_left units when it is inline and still wanted, the input not ended,
 * no probe running, up to the next timed
 * unit; anything that needs the stage's path (a save, a restore, arming,
 * the end, leaving inline) takes the grant back. The limit is the
 * autotuner's (another thread): read here, relaxed, for every unit. True
 * counts the unit; the kernel then calls cv_stage_inline_end() if its
 * input ended, or cv_stage_inline_undo() if it took nothing (a try_next
 * that would block). */
static inline bool cv_stage_inline_fast(CvStage *st)
{
    if (st->fast_left <= 0 || atomic_load_explicit(&st->task.limit, memory_order_relaxed) != 0)
        return false;
    st->fast_left--;
    return true;
}
static inline void cv_stage_inline_undo(CvStage *st)
{
    st->fast_left++;
}
/* Consumer, inline: hand the direct units granted to the kernel's consumer
 * (CvKernel.pass_through); they hold while the limit (*gate) is 0. */
static inline int64_t cv_stage_give_grant(CvStage *st, const _Atomic int **gate)
{
    int64_t n = st->fast_left;
    st->fast_left = 0;
    *gate = &st->task.limit;
    return n;
}
void cv_stage_inline_end(CvStage *st);

/* Set before the first next(): charge results to `memory` (borrowed: it must
 * outlive the stage, e.g. the owner's dataset->memory; NULL: the default
 * budget); `knob` says how to lower this stage's buffering in the error
 * ("lower prefetch's buffer_size"). */
void cv_stage_set_memory(CvStage *st, CvMemory *memory, const char *knob);

#define CV_STAGE_CHUNK_NS 200000
#define CV_STAGE_SLACK_UNITS 8                   /* per worker; see adapt_chunk in stage.c */
#define CV_STAGE_SLACK_BYTES ((size_t)32 << 20)
#define CV_STAGE_CHUNK_BYTES ((size_t)1 << 20)
/* The kernel's next(): the next {status, element} in order, waiting for it
 * (in interruptible slices) when none is ready. Consumer only. */
CvStatus cv_stage_next(CvStage *st, CvElement *out, bool *end);
/* The kernel's try_next(): as cv_stage_next when a result or the end is
 * there now; otherwise *would_block (OK returned, nothing taken). Never
 * waits for another thread beyond mu's short holds (see Locks). */
CvStatus cv_stage_try_next(CvStage *st, CvElement *out, bool *end, bool *would_block);
/* Wake everything and make it stop; safe from any thread, idempotent. */
void cv_stage_cancel(CvStage *st);
/* Cancel, wait for the running turns, free buffered elements. Call only
 * after the input has been cancelled too (a turn may be blocked inside
 * pull). */
void cv_stage_destroy(CvStage *st);

/* Exact resume, on the consumer's thread between next() calls. save writes
 * [u64 n][n results: status, element][the pull side's position]; restore
 * (before the first next()) reads that back: the results are handed out
 * first, the position goes to ops->restore_input. */
CvStatus cv_stage_save(CvStage *st, CvStateWriter *w);
CvStatus cv_stage_restore(CvStage *st, CvStateReader *r);
/* For a kernel that keeps its own consumer-side state (map_batch): take
 * marks from the first pull on, and after each next() swap the mark of the
 * unit it returned into *into (false: that unit has none). */
void cv_stage_arm(CvStage *st);
bool cv_stage_take_mark(CvStage *st, CvStateWriter *into);

/* Between stage.c and stage_resume.c (exact resume), not for kernels; the
 * consumer's. fast_stop: take back the direct units granted
 * (cv_stage_inline_fast), so the next unit takes the stage's path;
 * take_pending_mark: an inline stage's pending mark (mark_pending) into
 * last_mark; unlock_input: let go of input_mu, resubmitting the task when
 * a turn found it taken. */
void cv_stage_fast_stop(CvStage *st);
void cv_stage_take_pending_mark(CvStage *st);
void cv_stage_unlock_input(CvStage *st);

/* Iterators of kernels that run a stage over one input start with this. */
typedef struct CvStagedIterator {
    CvIterator base;
    CvIterator *input; /* owned */
    CvStage stage;     /* initialized only when the kernel runs in parallel */
} CvStagedIterator;

/* Kernel vtable slots for such iterators: cancel the stage and the input;
 * destroy = cancel, wait for the turns, destroy the input, free; measure =
 * the stage's counters and gauges (core/stats.h), nothing when sequential. */
void cv_staged_iterator_cancel(CvIterator *it);
void cv_staged_iterator_destroy(CvIterator *it);
void cv_staged_iterator_measure(CvIterator *it, CvNodeTotals *totals, CvGauges *gauges);
/* Add a stage's counters to a node's totals (a kernel that counts its
 * turns as a stage does, interleave, uses it too). */
void cv_stage_counters_measure(CvStageCounters *c, CvNodeTotals *totals);

#endif
