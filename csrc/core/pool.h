/* CvPool: the worker threads of one pipeline, shared by all its parallel
 * stages.
 *
 * DESIGN
 * A pipeline iterator (the binding's Iterator) owns one pool of at most
 * `budget` threads running work, `budget` = options.autotune.cpu_budget or
 * the CPUs this process may use. Parallel stages do not own threads: each
 * is a CvTask whose work comes in bounded *turns* (one chunk pulled,
 * processed and stored: about CV_STAGE_CHUNK_NS), and the pool runs turns
 * of runnable tasks round robin, at most `limit` turns of one task at a time
 * (the stage's parallelism, which the autotuner moves).
 *
 * A thread that starts a turn wakes a peer (or starts one, up to the
 * budget) while more turns could run, so the pool ramps up to the stages'
 * parallelism without waiting for submits or blocking sections.
 *
 * A task is queued while it may have work. A turn that finds none (no room
 * in its buffer, nothing to open) returns CV_TURN_IDLE and the task leaves
 * the queue until cv_task_submit() (the consumer made room); a submit
 * during the turn keeps it queued, so no wake-up is lost. CV_TURN_DONE
 * (input exhausted, cancelled) retires it for good.
 *
 * Blocking sections (core/blocking.h): a pool thread about to block
 * (taking the GIL, running Python code, reading a file, waiting for another
 * stage's element) gives up its place among the `budget` running threads:
 * another thread is woken, or started while the pool has fewer than
 * budget + CV_POOL_SPARE threads. A thread leaving a section keeps running
 * its turn (over budget for a moment) and parks at its next turn boundary
 * if the pool is over budget. So CPU work never waits for I/O or for the
 * GIL, and a pipeline never holds more than budget + CV_POOL_SPARE threads,
 * whatever the number of its stages (tf.data and Go's runtime hand off in
 * the same way, at blocking calls).
 *
 * Nested stages: a turn's pull may wait for an element of a lower stage.
 * On a pool thread, cv_task_help() first runs a turn of that stage inline
 * when it is runnable; otherwise the wait is a blocking section. Waits
 * always point down the pipeline and end at a thread that is running, so
 * progress never depends on a free thread.
 *
 * Locks: the pool mutex is a leaf. Turns run with it released; submit,
 * help, blocking sections and remove may be called with stage locks held.
 */
#ifndef CV_POOL_H
#define CV_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/blocking.h" /* the sections its threads announce */
#include "core/status.h"
#include "core/thread.h"

/* Threads a pool may start beyond its budget, for turns blocked in
 * blocking sections. */
#define CV_POOL_SPARE 4

/* The longest an idle pool thread spins for the next submit (pool.c). */
#define CV_POOL_SPIN_NS 100000

typedef struct CvPool CvPool;

typedef enum CvTurn {
    CV_TURN_AGAIN, /* more work may be there: stay queued */
    CV_TURN_IDLE,  /* nothing to do until the next submit */
    CV_TURN_DONE   /* never again */
} CvTurn;

typedef struct CvTask {
    CvTurn (*turn)(void *owner); /* one bounded piece of work; no lock held */
    void *owner;
    const char *name;
    CvPool *pool; /* a reference, from cv_task_attach until cv_task_remove */
    /* Most turns at once (the stage's parallelism), >= 1: a shared
     * parameter that the autotuner writes (core/stats.h CvGauges.limit)
     * and the pool reads at each pick. */
    _Atomic int limit;
    /* Guarded by the pool mutex. */
    struct CvTask *prev, *next;
    uint64_t submits;
    int running;
    bool queued, done;
    bool paused; /* cv_task_pause: no turn until cv_task_resume */
    /* Optional, set by the owner after cv_task_attach: called, with no
     * lock held and the ending turn still counted running (so the task
     * outlives the call), when a turn ends at limit 0 as the task's last
     * running one. A consumer that waited for turns while the autotuner
     * made the task inline gets no result from any turn: this wakes it. */
    void (*drained)(void *owner);
} CvTask;

/* A pool of `budget` running threads (at least 1). Threads start as work
 * comes. Returns NULL when out of memory. */
CvPool *cv_pool_new(int budget);
/* Who is told of each iterator made with the pool current, once it is made
 * (core/dataset.c): the pipeline's statistics (core/pipeline.c sets it, the
 * pool knows nothing of them). Set once, before any iterator is made with
 * the pool current; none for a stage's private pool. */
struct CvIterator;
typedef struct CvPoolWatcher {
    void (*iterator_made)(void *arg, struct CvIterator *it);
    void *arg; /* borrowed: outlives the pool */
} CvPoolWatcher;
void cv_pool_set_watcher(CvPool *pool, CvPoolWatcher watcher);
CvPoolWatcher cv_pool_watcher(const CvPool *pool);
/* The name its threads carry in top -H, gdb and py-spy (at most 15
 * characters are kept; "cv-pool" by default). Set before any work. */
void cv_pool_set_name(CvPool *pool, const char *name);
/* Work the pool's threads run between turns, with no lock held: the
 * pipeline's autotuner (core/pipeline.c installs it; the pool knows nothing
 * of it). Set once, like the statistics. */
typedef struct CvPoolTick {
    bool (*fn)(void *arg); /* true: it raised or lowered a task's limit */
    void *arg;
} CvPoolTick;
void cv_pool_set_tick(CvPool *pool, CvPoolTick tick);
CvPool *cv_pool_ref(CvPool *pool);
/* The last reference stops and joins the threads (every task removed by
 * then). */
void cv_pool_unref(CvPool *pool);
int cv_pool_budget(const CvPool *pool);
/* Threads started and not yet exited; running turns (outside blocking
 * sections). Snapshots, for statistics. */
int cv_pool_threads(CvPool *pool);
int cv_pool_running(CvPool *pool);

/* The pool that iterators made on this thread use: the pipeline's, set by
 * the binding around make/next/destroy, and on pool threads their own.
 * Borrowed. */
CvPool *cv_pool_current(void);
/* Whether this thread is a pool worker (running turns). */
bool cv_pool_on_worker(void);
/* Set this thread's current pool; returns the previous one, to restore. */
CvPool *cv_pool_set_current(CvPool *pool);

/* Join `pool` (a new reference is taken) with `limit` turns at most. */
void cv_task_attach(CvTask *t, CvPool *pool, CvTurn (*turn)(void *), void *owner, const char *name,
                    int limit);
/* Queue the task (it may have work). Safe from any thread, idempotent. */
void cv_task_submit(CvTask *t);
/* On a thread of t's pool: run one turn of t now if it is queued and below
 * its limit. Returns whether it ran one. Elsewhere, false. */
bool cv_task_help(CvTask *t);
/* A stage that its consumer runs inline (core/stage.h, the autotuner set
 * its limit to 0): take the task off the queue for good, so that no turn
 * runs until cv_task_resume, whatever its limit becomes meanwhile. Fails
 * (returns false, nothing changed) while a turn of t is running. Submits
 * while paused are counted, not queued. Any thread. */
bool cv_task_pause(CvTask *t);
/* Undo cv_task_pause and queue the task. */
void cv_task_resume(CvTask *t);
/* Run the pool's tick (the autotuner) from a thread that is no pool worker
 * and runs a stage inline, so that the model still looks when no turn runs;
 * wakes a thread when it raised a limit. No lock held. */
void cv_pool_run_tick(CvPool *pool);

/* Take the task out of its pool: no turn starts after this, and it waits
 * for the running ones (a blocking section on a pool thread). Never call it
 * from a turn of t. No-op when not attached. */
void cv_task_remove(CvTask *t);

/* Cancel the pipeline's work that cannot see its stages' cancellation (a
 * read waiting on a pipe asks cv_blocking_cancelled); safe from any
 * thread. */
void cv_pool_cancel(CvPool *pool);
/* Wait up to timeout_ns for every thread of the pool to be idle (no turn
 * running). Returns whether they are. */
bool cv_pool_wait_idle(CvPool *pool, int64_t timeout_ns);

#endif
