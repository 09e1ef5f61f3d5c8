/* CvStage: an ordered, bounded, multi-threaded producer stage.
 *
 * DESIGN
 * The asynchronous kernels (parallel map, parallel batch, prefetch) share
 * one mechanism. Worker threads repeatedly (1) take the input lock and pull
 * one unit of work from the input, numbering it with a sequence number,
 * (2) process it with no lock held, and (3) store {status, element} in a slot.
 * The consumer takes slots in sequence order (deterministic) or in completion
 * order (non-deterministic). At most `capacity` units are in flight or
 * buffered, so memory is bounded; an autotuned stage grows its capacity by
 * one, up to max_capacity, whenever the consumer finds it empty.
 *
 * Errors travel in their slot, so a parallel stage fails at exactly the
 * element where the sequential one would, and goes on afterwards.
 *
 * Locks: input_mu (serializes pull) is taken before mu (everything else);
 * never the other way round. Neither is held while calling process() or
 * while the consumer runs its interrupt check. Threads start on the first
 * next() and are joined by cv_stage_destroy().
 */
#ifndef CV_STAGE_H
#define CV_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"
#include "core/thread.h"

typedef struct CvStageOps {
    /* Pull one unit of work from the input (input lock held, never
     * concurrent). On OK either *end is set, or *work holds the unit and
     * *aux a kernel-defined count. A non-OK status is delivered at this
     * position. */
    CvStatus (*pull)(void *owner, CvElement *work, int64_t *aux, bool *end);
    /* Turn work into an output element. Concurrent, no lock held. Takes
     * ownership of *work. */
    CvStatus (*process)(void *owner, CvElement *work, int64_t aux, CvElement *out);
} CvStageOps;

typedef struct CvStageSlot {
    CvStatus status;
    CvElement element;
    bool ready;
} CvStageSlot;

typedef struct CvStage {
    const CvStageOps *ops;
    void *owner;
    const char *name;
    int num_workers;
    bool deterministic;
    bool autotune;
    int capacity;     /* current in-flight limit, guarded by mu */
    int max_capacity; /* number of slots */

    pthread_mutex_t input_mu;
    pthread_mutex_t mu;
    pthread_cond_t ready_cv; /* the consumer waits here */
    pthread_cond_t space_cv; /* workers wait here */

    /* Guarded by mu. */
    CvStageSlot *slots;
    uint64_t issued;    /* units pulled from the input */
    uint64_t consumed;  /* units handed to the consumer */
    uint64_t completed; /* units processed (slot index in completion order) */
    bool input_done;
    bool cancelled;
    bool started;
    CvStatus start_error;

    CvThread *threads;
} CvStage;

CvStatus cv_stage_init(CvStage *st, const CvStageOps *ops, void *owner, const char *name,
                       int num_workers, int capacity, int max_capacity, bool deterministic);
CvStatus cv_stage_next(CvStage *st, CvElement *out, bool *end);
/* Wake everything and make it stop; safe from any thread, idempotent. */
void cv_stage_cancel(CvStage *st);
/* Cancel, join the workers, free buffered elements. Call only after the
 * input has been cancelled too (a worker may be blocked inside pull). */
void cv_stage_destroy(CvStage *st);

#endif
