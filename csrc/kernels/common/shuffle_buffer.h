/* What shuffle and the fused shuffle_batch share: the dataset parameters
 * (one seed generator per shuffle dataset, shared by its iterators) and the
 * RAM-budget rules of the shuffle buffer, so that both charge exactly the
 * same bytes at the same moments and fail with the same error.
 *
 * Budget rules (per buffered element, cv_element_bytes): an incoming element
 * is charged before it is kept; the element handed out last stays charged
 * ("owed") until the next pull, which nets its bytes against the incoming
 * element's (equal sizes cost no atomic operation). Not thread-safe: the
 * state belongs to one iterator.
 */
#ifndef CV_SHUFFLE_BUFFER_H
#define CV_SHUFFLE_BUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dataset.h"
#include "core/philox.h"

typedef struct CvShuffleParams {
    int64_t buffer_size;
    CvSeedGenerator seeds;
} CvShuffleParams;

/* The parameters of a shuffle dataset, NULL for any other dataset. */
CvShuffleParams *cv_shuffle_params(const CvDataset *ds);

/* Charge an incoming element of `bytes`, netted against *owed (settled either
 * way: *owed is 0 afterwards). False: nothing is charged. */
bool cv_shuffle_charge_incoming(size_t *owed, CvMemory *memory, size_t bytes);

/* The RESOURCE_EXHAUSTED error of an element of `bytes` that did not fit,
 * with `count` elements (`held` bytes) buffered. */
CvStatus cv_shuffle_exceeded(CvMemory *memory, size_t bytes, int64_t buffer_size, int64_t count,
                             size_t held);

/* offset = r % count, as tf.data draws it (r a uint32 Philox sample). */
static inline int64_t cv_shuffle_offset(uint32_t r, int64_t count)
{
    if (count <= (int64_t)UINT32_MAX) /* a 32-bit division is several times cheaper */
        return (int64_t)(r % (uint32_t)count);
    return (int64_t)((uint64_t)r % (uint64_t)count);
}

#endif
