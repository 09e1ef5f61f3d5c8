/* interleave's iterator and its slots (kernels/interleave.c, whose DESIGN
 * comment describes them): the parameters, the read-ahead limits, a slot
 * (an open inner iterator, its buffered results and its marks), and what
 * creates, opens, places and frees slots and keeps their marks.
 * interleave.c runs the cycle, the workers' turns and the consumer;
 * interleave_state.h saves and restores.
 */
#ifndef CV_INTERLEAVE_SLOTS_H
#define CV_INTERLEAVE_SLOTS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ram_budget.h"
#include "core/pool.h"
#include "core/stage.h" /* CvStageCounters */
#include "kernels/kernels.h"

/* Futures (files opened ahead) at most: 2 x cycle_length up to this. 16
 * keeps a cycle of 16 remote files and the next 16 in flight at once (at
 * 30 ms first-byte latency, 8 left a third wave of GETs; issue 27). */
#define CV_INTERLEAVE_MAX_FUTURES 16
/* Per-slot read-ahead: tf.data's 2 x block_length + 1 results at least; for
 * small elements up to CV_INTERLEAVE_MAX_BUFFER of them, as long as they fit
 * in the slot's bytes, so that a worker hands over a run of records under
 * one lock and one wake-up instead of one each. The slots of the cycle share
 * CV_INTERLEAVE_READ_AHEAD_BYTES (at most a quarter of the RAM budget), and
 * have CV_INTERLEAVE_SLOT_BYTES each at least; futures (files opened ahead)
 * have CV_INTERLEAVE_SLOT_BYTES. Large records need the depth: with 100 KB
 * records, cycle_length 2 and batch(256), 2 MiB a slot ran dry while the
 * consumer turned one batch into bytes objects (the readers idled, 1.2 of 2
 * cores busy); a batch's worth read ahead keeps both cores reading. 2 MiB
 * holds ten 100 KB records (256 KiB held three, and the wake-ups cost more
 * CPU than reading them); 1 KB records stay capped at 128 per slot. */
#define CV_INTERLEAVE_MAX_BUFFER 128
#define CV_INTERLEAVE_SLOT_BYTES ((size_t)2 << 20)
#define CV_INTERLEAVE_READ_AHEAD_BYTES ((size_t)32 << 20)
/* A worker publishes what it has read after this long, even mid-run, so a
 * slow inner dataset never holds back elements the consumer waits for. */
#define CV_INTERLEAVE_PUBLISH_NS 50000

typedef struct {
    CvDatasetFunction fn;
    int64_t cycle_length;
    int64_t block_length;
    int num_workers; /* 0: sequential */
    bool tune_workers;
    bool deterministic;
    /* The dataset's live iterators (linked through live_prev/next), so that
     * traverse can report the inner datasets of their slots (python gc). */
    pthread_mutex_t live_mu;
    struct InterleaveIterator *live;
} InterleaveParams;

typedef struct {
    CvStatus status;
    CvElement element;
    size_t bytes; /* charged to the budget for element */
    bool end;     /* the inner iterator has ended (no element) */
    bool dropped; /* status is the budget's: the inner produced an element here */
    bool run_start; /* first of a worker's run: its mark is the slot's marks[ring position] */
} InterleaveResult;

/* Parallel only. Marks (see DESIGN) are writers reused from run to run: a
 * worker writes marks[i] for a run starting at ring[i], outside the
 * buffered range, and the consumer swaps it into `mark` under mu when it
 * takes ring[i]. */
typedef struct {
    CvIterator *inner;    /* owned; NULL when opening failed */
    CvDataset *inner_ds;  /* owned structural reference while inner lives (gc: core/wrapper.h) */
    CvStatus open_status; /* why opening failed (the input or map_func) */
    CvElement outer;      /* the input element map_func made `inner` from */
    InterleaveResult *ring;         /* parallel only: buffered results (CV_INTERLEAVE_MAX_BUFFER) */
    CvStateWriter *marks; /* parallel only: marks[i], inner's frame right before ring[i] */
    int marks_used;       /* marks[0, marks_used) were ever written (freed at destroy) */
    int head, count;
    int limit;            /* results to buffer at most, from the element sizes seen */
    bool busy;  /* a worker is inside inner->next */
    bool in_cycle; /* a slot of the cycle, not a future: reads ahead slot_bytes */
    bool ended; /* no more work: end buffered, or opening failed */
    bool unmarkable;          /* the worker's: saving inner failed; no more marks */
    CvStateWriter input_mark; /* futures: the input's frame right after `outer` */
    /* The consumer's: inner's frame before the run of the last result taken
     * (when `marked`; else nothing was taken: inner is fresh) and the
     * results taken from that run, the last an inner error or not; or why
     * inner has no mark. */
    CvStateWriter mark;
    int64_t taken;
    bool taken_error;
    CvStatus mark_status;
    bool marked;
} InterleaveSlot;

typedef struct InterleaveIterator {
    CvIterator base;
    CvIterator *input;
    struct InterleaveIterator *live_prev, *live_next; /* InterleaveParams.live, under live_mu */
    bool listed;
    InterleaveSlot **cycle; /* cycle_length entries, NULL when empty */
    int64_t cycle_index, block_index, num_open;
    bool end_of_input;

    /* Parallel only; guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t ready_cv; /* the consumer waits here */
    /* A ring of future_cap = cycle_length + max_futures (owned). While the
     * cycle has empty positions (it fills as the consumer comes to them),
     * futures are opened for those too: all the cycle's files open, and
     * start reading, at once, as tf.data opens its current elements. */
    InterleaveSlot **futures;
    int future_head, future_count, max_futures, future_cap;
    int ring_size;  /* CV_INTERLEAVE_MAX_BUFFER */
    int min_limit;  /* 2 x block_length + 1, capped */
    size_t slot_bytes; /* read-ahead of a slot of the cycle */
    bool opening;         /* a worker is pulling the input / calling map_func */
    bool input_exhausted; /* the input has ended (futures may remain) */
    bool cancelled, started;
    bool starved; /* the consumer found nothing to take: turns charge, never wait for room */
    CvStatus fatal; /* out of memory in a worker: sticky */
    bool input_unmarkable; /* the opener's: saving the input failed; no more marks */
    /* The consumer's: the input's frame as of the futures taken into the
     * cycle (from the first next() on), or why it has none. */
    CvStateWriter input_mark;
    CvStatus input_mark_status;
    _Atomic size_t held; /* bytes of all buffered results, charged to the budget */
    CvMemoryHolder holder; /* the same bytes, listed on the budget (parallel only) */
    CvTask task; /* attached at make, submitted at the first next() */
    /* The consumer's: the task is paused (cv_task_pause) while the
     * autotuner has it inline (limit 0): the consumer runs its turns. */
    bool paused;
    CvStageCounters counters; /* of the turns, the pool's and the consumer's (interleave_measure) */
} InterleaveIterator;

static inline const InterleaveParams *params_of(const InterleaveIterator *it)
{
    return it->base.dataset->params;
}

/* Marks (see DESIGN in interleave.c). it's frame into w, unless an earlier
 * one failed (*unmarkable); a failure is kept in w->error and stops marking. */
void cv_interleave_mark_take(CvStateWriter *w, CvIterator *it, bool *unmarkable);
/* The consumer took what `theirs` marks: it becomes `mine` (buffers are
 * swapped, not copied); *status: the first failed mark. */
void cv_interleave_mark_accept(CvStateWriter *mine, CvStatus *status, CvStateWriter *theirs);
void cv_interleave_mark_free(CvStateWriter *w);

/* A slot; ring_size > 0 (parallel mode) gives it a ring and marks. NULL:
 * out of memory. */
InterleaveSlot *cv_interleave_slot_new(int ring_size, int limit);
/* Free a slot (NULL-safe), releasing its buffered results' bytes. */
void cv_interleave_slot_destroy(InterleaveIterator *it, InterleaveSlot *slot);
/* Call map_func on slot->outer and make the inner iterator. */
CvStatus cv_interleave_make_inner(InterleaveIterator *it, InterleaveSlot *slot);
/* Pull the next input element into slot->outer and open its inner iterator
 * (never concurrently: the consumer in sequential mode, one worker at a
 * time in parallel mode); parallel: the input's frame after the pull goes
 * into slot->input_mark. */
CvStatus cv_interleave_open_inner(InterleaveIterator *it, InterleaveSlot *slot, bool parallel,
                                  bool *input_end);

/* Sequential mode and restore: place (or clear, slot NULL) a cycle position
 * under mu, as cancel() reads the cycle from other threads (a parallel
 * interleave above cancels this one from its consumer); a slot placed after
 * cancel() is cancelled at once. A cleared slot is freed by the caller. */
void cv_interleave_place_slot(InterleaveIterator *it, int64_t position, InterleaveSlot *slot);

#endif
