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
#include "core/iterator_state.h"

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

/* Exact resume of the random numbers (48 bytes each). A generator is
 * written whole (counter, key, the current block and how much of it is
 * used), so a restored one goes on with the very next sample. */
void cv_shuffle_put_philox(CvStateWriter *w, const CvPhilox *p);
CvStatus cv_shuffle_get_philox(CvStateReader *r, CvPhilox *p);

/* The dataset's seed generator as the next iterator would draw from it: the
 * base seeds (drawn at random when unseeded, so a new process has others)
 * and, with fresh_each_iterator, the generator's position. Restoring it
 * makes the epochs after a restored one draw the seeds a straight run
 * draws. get reads into *saved only; cv_shuffle_set_seeds applies it (once
 * the whole state has been read: a failed restore must not move it). */
void cv_shuffle_put_seeds(CvStateWriter *w, CvSeedGenerator *g);
typedef struct CvSavedSeeds {
    uint64_t seed, seed2;
    CvPhilox generator;
} CvSavedSeeds;
CvStatus cv_shuffle_get_seeds(CvStateReader *r, CvSavedSeeds *saved);
void cv_shuffle_set_seeds(CvSeedGenerator *g, const CvSavedSeeds *saved);

/* Restores the buffered elements that save() wrote (a count up to
 * buffer_size, then each element) into an empty buffer, in logical order:
 * each element's bytes are charged to `memory` and added to *held, then
 * push(buffer, e, bytes) appends it (moving from *e, or leaving *e for this
 * function to clear). An element over the budget is cv_shuffle_exceeded's
 * error; a failed push releases that element's charge. On error what was
 * pushed stays in the buffer (and charged), for the iterator's destroy(). */
typedef CvStatus (*CvShufflePush)(void *buffer, CvElement *e, size_t bytes);
CvStatus cv_shuffle_restore_buffer(CvStateReader *r, CvMemory *memory, int64_t buffer_size,
                                   CvShufflePush push, void *buffer, size_t *held);

/* offset = r % count, as tf.data draws it (r a uint32 Philox sample). */
static inline int64_t cv_shuffle_offset(uint32_t r, int64_t count)
{
    if (count <= (int64_t)UINT32_MAX) /* a 32-bit division is several times cheaper */
        return (int64_t)(r % (uint32_t)count);
    return (int64_t)((uint64_t)r % (uint64_t)count);
}

#endif
