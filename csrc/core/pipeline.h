/* CvPipeline: the root of one pass over a dataset, as TensorFlow's
 * RootDataset is. It owns everything a running pipeline shares: the root
 * iterator, the worker pool (the CPU budget), the statistics, the autotuner
 * and cancellation with detached teardown. The binding's Iterator wraps
 * one and keeps only what is Python's: the GIL, the element structure,
 * elements held back by an interrupt, and the Python object. A C program
 * drives it the same way (tests/c/pipeline_test.c).
 *
 * Ownership: a pipeline is reference counted. Its creator holds the first
 * reference; cv_pipeline_stop() ends the running part (iterator and pool)
 * and may hand it to a detached thread that holds a reference of its own
 * until the work in flight returns, so the statistics stay readable
 * (stats() after the end) until the last reference goes.
 *
 * Budgets are resolved here, once: cv_cpu_budget() turns
 * options.autotune.cpu_budget (0: the CPUs this process may use) into the
 * pool's size, and cv_autotune_ceiling() is the most turns an AUTOTUNE
 * stage may run at once on that budget, whoever asks (the Python layer
 * through _engine, kernels through cv_parallelism).
 *
 * Threads: next, try_next, wait, save, restore and restart are the
 * consumer's (one thread at a time, as an iterator's next). cancel, the
 * statistics accessors and stop may be called from another thread; stop
 * never waits on user code or a blocked read for more than
 * CV_PIPELINE_RELEASE_WAIT_NS. */
#ifndef CV_PIPELINE_H
#define CV_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/autotune.h"
#include "core/dataset.h"
#include "core/iterator_state.h"
#include "core/stats.h"

/* How long stop() waits for the pipeline's turns to end after cancelling
 * them before it hands the rest to a thread of its own. Native turns end
 * within a turn (~200 us); what takes longer is user code (a Python
 * function mid-call) or a read that cannot be interrupted. */
#define CV_PIPELINE_RELEASE_WAIT_NS 100000000LL

/* The CPUs a pipeline runs on: `requested` when positive, else the CPUs this
 * process may use (affinity and cgroup quota, core/thread.h). */
int cv_cpu_budget(int requested);
/* The most turns an AUTOTUNE stage runs at once on `budget` CPUs: one more
 * than the budget, since a turn pulls its own input element, so with one per
 * CPU all can be busy processing while nobody reads ahead (a slow source
 * then stalls the stage). */
int cv_autotune_ceiling(int budget);
/* Worker count for a num_parallel_calls argument: 0 (sequential), a
 * positive count (capped at 1024), or AUTOTUNE: -1 (up to the ceiling of
 * the process's CPUs) or -n (up to n workers, the binding's form), which
 * sets *autotune (the autotuner may run fewer). */
CvStatus cv_parallelism(int64_t num_parallel_calls, int *workers, bool *autotune);

typedef struct CvPipelineOptions {
    int cpu_budget;                /* 0: cv_cpu_budget(0) */
    CvAutotuneAlgorithm algorithm; /* the autotuner's */
    bool statistics;               /* false: neither statistics nor autotuner */
} CvPipelineOptions;

typedef struct CvPipeline CvPipeline;

/* Make the root iterator of ds (a new reference is taken) in a new pool.
 * *out holds one reference. */
CvStatus cv_pipeline_new(const CvDataset *ds, const CvPipelineOptions *options, CvPipeline **out);
CvPipeline *cv_pipeline_ref(CvPipeline *p);
/* NULL-safe. The last reference stops the pipeline if it runs (waiting for
 * it) and frees the statistics. */
void cv_pipeline_unref(CvPipeline *p);

/* Whether the pipeline still has its root iterator (not stopped). */
bool cv_pipeline_running(const CvPipeline *p);
/* Whether next() may block on worker threads or I/O (the binding then lets
 * go of the GIL around wait()). */
bool cv_pipeline_may_block(const CvPipeline *p);

/* The root iterator's next element (core/dataset.h). Requires a running
 * pipeline. */
CvStatus cv_pipeline_next(CvPipeline *p, CvElement *out, bool *end);
/* An element that is ready now; *would_block when there is none. */
CvStatus cv_pipeline_try_next(CvPipeline *p, CvElement *out, bool *end, bool *would_block);
/* next() whose time counts as the consumer waiting for the pipeline
 * (statistics and the autotuner's model). */
CvStatus cv_pipeline_wait(CvPipeline *p, CvElement *out, bool *end);

/* Give the pass up: wake a next() in progress on another thread (it
 * returns cancelled), and tell the pool's threads (cv_blocking_cancelled:
 * a turn makes no more calls into the front end's code, reads give up);
 * takes short engine mutexes only. */
void cv_pipeline_cancel(CvPipeline *p);
/* End the running part: cancel everything, then free the iterator and join
 * the pool here when the turns end within CV_PIPELINE_RELEASE_WAIT_NS, or
 * on a detached thread otherwise. Records the end for the statistics'
 * rates. Idempotent. */
void cv_pipeline_stop(CvPipeline *p);
/* After fork(): the parent's threads and locks are not this process's;
 * drop the running part without touching it (a leak, never a join). */
void cv_pipeline_abandon(CvPipeline *p);

/* The front end's registry of live pipelines, for the exit: a front end
 * registers each pipeline it runs for an object of its own (owner) and
 * unregisters it (idempotent, NULL-safe) when it stops it or drops it.
 * Threads: these run under the front end's one lock (the binding: the
 * GIL), as core/wrapper.h's functions do; shutdown_all lets go of it
 * (cv_wait_outside_begin) only while it waits. */
void cv_pipeline_register(CvPipeline *p, void *owner);
void cv_pipeline_unregister(CvPipeline *p);
/* The registered pipelines (the binding's live iterators). */
long cv_pipeline_live_count(void);
/* At exit: cancel every registered pipeline made in this process (not
 * before a fork()), which wakes all waits; give the calls into the front
 * end's code in flight (in_flight(), e.g. a Python map function mid-call)
 * up to timeout_ns to return; then settle(owner, drained) for each
 * pipeline still registered, which stops it (drained) or abandons it (its
 * threads die with the process: joining one stuck in user code would hang
 * the exit). */
void cv_pipeline_shutdown_all(int64_t timeout_ns, int (*in_flight)(void),
                              void (*settle)(void *owner, bool drained));

/* Exact resume (core/iterator_state.h): the frames of the root iterator as of the
 * last element next() returned. */
CvStatus cv_pipeline_save(CvPipeline *p, CvStateWriter *w);
/* A fresh root iterator of the same dataset in the same pool. On failure
 * the pipeline is stopped. */
CvStatus cv_pipeline_restart(CvPipeline *p);
/* Put the root iterator where the state says (first a fresh one, by
 * restart(), when it was asked for an element or restored since made);
 * every byte must be read. On failure the pipeline starts over from a fresh
 * iterator, never a half-restored one (or is stopped when none can be
 * made), and dataset-wide state (seed generators, epoch counters) is as
 * before the call: the iterator yields what it would have. */
CvStatus cv_pipeline_restore(CvPipeline *p, CvStateReader *r);

/* Statistics; NULL when made without. Valid until the last reference. */
CvStats *cv_pipeline_stats(const CvPipeline *p);
CvAutotuner *cv_pipeline_autotuner(const CvPipeline *p);
int cv_pipeline_cpu_budget(const CvPipeline *p);
/* The pool's threads started and not exited, and turns running now; 0
 * once stopped. */
int cv_pipeline_threads(CvPipeline *p);
int cv_pipeline_running_turns(CvPipeline *p);
/* Nanoseconds from the start to now, or to the stop. */
int64_t cv_pipeline_elapsed_ns(CvPipeline *p);
/* This pipeline's number in the process (threads are named by it). */
unsigned cv_pipeline_id(const CvPipeline *p);

#endif
