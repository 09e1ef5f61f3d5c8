/* map_and_batch's pieces (kernels/map_batch.c): a batch being filled, the
 * pieces (runs of consecutive rows of one batch) that the stage's turns pull
 * and map, and writing a mapped row straight into its row of the batch's
 * tensors (the fast path). Batches and pieces are buffers (CvBuffer first):
 * reference counted, freed by their release.
 */
#ifndef CV_MAP_BATCH_PIECES_H
#define CV_MAP_BATCH_PIECES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

/* A batch being filled. The first member is a buffer header only for its
 * reference count: pieces and the iterator hold references. */
typedef struct MbBatch {
    CvBuffer buf;
    uint64_t first;  /* row-stream position of row 0 */
    int64_t planned; /* rows the input side means to put in it */
    pthread_mutex_t mu;
    _Atomic int layout; /* 0: unknown; 1: rows are written into t; -1: kept whole */
    uint32_t ncomp;
    CvTensor *t; /* layout 1: ncomp tensors of `planned` rows */
    const CvBufferAllocator *out_alloc; /* where t's buffers come from (NULL: cv_buffer_new) */
} MbBatch;

typedef struct MbRow {
    CvStatus status; /* the input's or fn's error */
    CvElement e;     /* the input, then (unless written) fn's result */
    uint64_t index;  /* the element id's index */
    bool written;    /* in the batch's tensors */
} MbRow;

typedef struct MbPiece {
    CvBuffer buf; /* the tag tensor's buffer: release frees the piece */
    MbBatch *batch; /* one reference */
    uint64_t pos;   /* row-stream position of rows[0] */
    int64_t r0;     /* rows[0]'s row in the batch */
    int n;
    bool last;  /* the batch's last piece */
    bool clean; /* every row written */
    MbRow rows[];
} MbPiece;

/* A batch of `planned` rows starting at row-stream position `first`, with
 * one reference and no layout yet, its tensors to come from `a` (NULL:
 * cv_buffer_new; a outlives the batch); NULL when out of memory. */
MbBatch *cv_mb_batch_new(uint64_t first, int64_t planned, const CvBufferAllocator *a);

/* A piece's buffer release: frees its rows and drops its batch reference. A
 * tag tensor whose buffer has this release carries a piece. */
void cv_mb_piece_release(CvBuffer *buf);

/* Copy result e into row `row` of b when it matches b's layout (the first
 * finished row sets it); false: the row goes the exact path. */
bool cv_mb_write_row(MbBatch *b, int64_t row, const CvElement *e, int64_t batch_size);

#endif
