/* Helpers shared by the batching kernels (batch, padded_batch, rebatch):
 * gathering input rows into a batch, stacking rows (large strings by
 * reference), and copying values between tensors (numbers by memcpy,
 * strings by copying their bytes into the destination's blob).
 */
#ifndef CV_BATCH_ROWS_H
#define CV_BATCH_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dataset.h"

/* batch_size as batch and the fused shuffle+batch accept it: positive, and
 * small enough that row counts fit the engine's 32-bit row arithmetic. */
static inline CvStatus cv_check_batch_size(int64_t batch_size)
{
    if (batch_size <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "Batch size must be greater than zero, got %lld.",
                        (long long)batch_size);
    if (batch_size > (INT64_C(1) << 31))
        return cv_error(CV_INVALID_ARGUMENT, "Batch size %lld is too large.", (long long)batch_size);
    return NULL;
}

/* Batches of batch_size made from n input elements, the last one partial
 * unless drop_remainder; n < 0 (infinite or unknown) passes through. */
static inline int64_t cv_batched_cardinality(int64_t n, int64_t batch_size, bool drop_remainder)
{
    if (n < 0)
        return n;
    return n / batch_size + (!drop_remainder && n % batch_size != 0);
}

/* Gathers the rows of one batch from an input iterator. Per-iterator state;
 * not thread-safe (a batch kernel pulls under its own input lock). */
typedef struct CvRowGatherer {
    bool input_done;
    uint32_t ncomp;     /* components per row, from the first row */
    CvElement partial;  /* rows kept across an interrupted call (Ctrl-C) */
    int64_t partial_rows;
} CvRowGatherer;

/* Append row's tensors to the bundle (moved, not copied; row is left
 * empty), growing it geometrically: a huge batch_size over a short input
 * must not allocate batch_size slots. *capacity: the bundle's room. */
CvStatus cv_bundle_append(CvElement *bundle, size_t *capacity, CvElement *row);

/* Pull up to batch_size elements into one flat "bundle" element: row r's
 * component c is bundle->t[r * ncomp + c], moved (not copied) from the
 * input. On OK either *end is set (no rows left, or only a remainder that
 * drop_remainder drops) or *rows (>= 1) rows are in *bundle, owned by the
 * caller. An input error fails the batch it falls in: the rows gathered so
 * far are dropped and the next call starts after it, as tf.data's batching
 * does. An interrupted wait keeps the rows, so the batch resumes. */
CvStatus cv_gather_rows(CvRowGatherer *g, CvIterator *input, int64_t batch_size,
                        bool drop_remainder, CvElement *bundle, int64_t *rows, bool *end);
void cv_row_gatherer_clear(CvRowGatherer *g);

/* Strings at least this long that fill at least half of the buffer holding
 * them (a record's own buffer, typically) are stacked by reference. */
#define CV_STACK_SHARE_MIN_BYTES 4096

/* Stack component c of the `rows` rows of a bundle (row r's is
 * bundle->t[r * ncomp + c]; same dtype and shape, checked by the caller)
 * into a new dense tensor of the given shape (rows first; numbers in a
 * buffer from `a`, NULL: cv_buffer_new). Numbers and small
 * strings are copied; a large string that fills at least half of its buffer
 * is not copied: that buffer becomes a part of out's buffer (tensor.h), so
 * batching large records costs no copy and retains at most twice the bytes
 * the batch accounts for. */
CvStatus cv_stack_rows(CvTensor *out, const CvElement *bundle, int64_t rows, uint32_t ncomp,
                       uint32_t c, int rank, const int64_t *shape, const CvBufferAllocator *a);

/* Bytes of string data a string tensor refers to (0 for other dtypes). */
size_t cv_string_bytes(const CvTensor *t);

/* Copy `count` values of src, from flat index `from`, into dst at flat index
 * `at` (same dtype; dst dense and large enough). String bytes are copied to
 * *blob (inside dst's buffer), which advances past them. */
void cv_copy_values(CvTensor *dst, int64_t at, const CvTensor *src, int64_t from, int64_t count,
                    char **blob);

/* Rows [start, start + count) of a rank >= 1 tensor, sharing its memory. */
void cv_tensor_rows(CvTensor *dst, const CvTensor *src, int64_t start, int64_t count);

#endif
