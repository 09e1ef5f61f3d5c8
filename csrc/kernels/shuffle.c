/* shuffle(buffer_size, seed, seed2, reshuffle_each_iteration): tf.data's
 * buffer algorithm and random numbers, bit for bit (tfdata-semantics.md 5).
 *
 * Each output: fill the buffer up to buffer_size elements (in arrival order),
 * draw one uint32 r from the iterator's Philox generator, output the element
 * at r % count, move the oldest element into its place.
 *
 * Seeds: the dataset owns a seed generator (core/philox.h's CvSeedGenerator)
 * shared by all its iterators (the one mutable part of a dataset, behind its
 * own mutex). With
 * reshuffle_each_iteration each new iterator draws two fresh uint32 seeds
 * from a Philox generator keyed by (seed, seed2); without it every iterator
 * uses (seed, seed2). seed == seed2 == 0 means "unseeded": random seeds.
 *
 * Memory: each buffered element is charged to the dataset's RAM budget. When
 * the next element does not fit, next() returns RESOURCE_EXHAUSTED and keeps
 * that element aside (pending): nothing is lost, and a later next() tries
 * again (it fails the same way unless other stages released memory). The
 * element handed out stays charged until the next call, which nets its bytes
 * against the incoming element's: equal sizes (the usual case) cost no
 * atomic operation at all.
 */
#include <stdlib.h>

#include "core/philox.h"
#include "kernels/common/shuffle_buffer.h"
#include "kernels/kernels.h"

typedef CvShuffleParams ShuffleParams;

typedef struct {
    CvUnaryIterator base;
    CvPhilox rng;
    CvElement *ring; /* logical element i at ring[(start + i) % capacity] */
    size_t *sizes;   /* sizes[k]: the bytes charged for ring[k] */
    int64_t capacity, start, count;
    bool input_done;
    size_t held;       /* bytes of the buffered elements, charged to the budget */
    size_t owed;       /* bytes of the element handed out last, still charged */
    CvElement pending; /* pulled, but over the budget: buffered first next time */
    bool has_pending;
} ShuffleIterator;


static void shuffle_free(CvDataset *ds)
{
    ShuffleParams *p = ds->params;
    cv_seed_generator_destroy(&p->seeds);
    free(p);
}

static int64_t shuffle_cardinality(const CvDataset *ds)
{
    return cv_dataset_cardinality(ds->inputs[0]);
}

static CvStatus shuffle_make_iterator(const CvDataset *ds, CvIterator **out)
{
    ShuffleParams *p = ds->params;
    CvStatus s = cv_unary_iterator_new(ds, sizeof(ShuffleIterator), out);
    if (s)
        return s;
    ShuffleIterator *it = (ShuffleIterator *)*out;
    cv_seed_generator_next(&p->seeds, &it->rng);
    return CV_STATUS_OK;
}

/* Append one element (of `bytes`), growing the ring geometrically up to
 * buffer_size. */
static CvStatus ring_push(ShuffleIterator *it, int64_t buffer_size, CvElement *e, size_t bytes)
{
    if (it->count == it->capacity) {
        int64_t grown = it->capacity ? it->capacity * 2 : 64;
        if (grown > buffer_size)
            grown = buffer_size;
        CvElement *ring = malloc((size_t)grown * sizeof(CvElement));
        size_t *sizes = malloc((size_t)grown * sizeof(size_t));
        if (!ring || !sizes) {
            free(ring);
            free(sizes);
            return cv_error(CV_RESOURCE_EXHAUSTED, "Shuffle: out of memory growing the buffer to "
                            "%lld elements", (long long)grown);
        }
        for (int64_t i = 0; i < it->count; i++) {
            ring[i] = it->ring[(it->start + i) % it->capacity];
            sizes[i] = it->sizes[(it->start + i) % it->capacity];
        }
        free(it->ring);
        free(it->sizes);
        it->ring = ring;
        it->sizes = sizes;
        it->capacity = grown;
        it->start = 0;
    }
    int64_t k = it->start + it->count;
    if (k >= it->capacity)
        k -= it->capacity;
    cv_element_move(&it->ring[k], e);
    it->sizes[k] = bytes;
    it->count++;
    return CV_STATUS_OK;
}

static CvStatus shuffle_next(CvIterator *base, CvElement *out, bool *end)
{
    ShuffleIterator *it = (ShuffleIterator *)base;
    const ShuffleParams *p = base->dataset->params;
    CvMemory *memory = base->dataset->memory;
    while (!it->input_done && it->count < p->buffer_size) {
        CvElement e = {0};
        CvStatus s;
        if (it->has_pending) {
            cv_element_move(&e, &it->pending);
            it->has_pending = false;
        } else {
            bool input_end = false;
            s = cv_iterator_next(it->base.input, &e, &input_end);
            if (s)
                return s; /* the buffer is intact; the next call goes on filling */
            if (input_end) {
                it->input_done = true;
                break;
            }
        }
        size_t bytes = cv_element_bytes(&e);
        if (!cv_shuffle_charge_incoming(&it->owed, memory, bytes)) {
            cv_element_move(&it->pending, &e);
            it->has_pending = true;
            return cv_shuffle_exceeded(memory, bytes, p->buffer_size, it->count, it->held);
        }
        if ((s = ring_push(it, p->buffer_size, &e, bytes))) {
            cv_memory_release(memory, bytes);
            cv_element_clear(&e);
            return s;
        }
        it->held += bytes;
    }
    if (it->owed) { /* no incoming element settled it */
        cv_memory_release(memory, it->owed);
        it->owed = 0;
    }
    if (it->count == 0) {
        *end = true;
        return CV_STATUS_OK;
    }
    *end = false;
    int64_t offset = cv_shuffle_offset(cv_philox_next(&it->rng), it->count);
    int64_t k = it->start + offset; /* (start + offset) % capacity, without a division */
    if (k >= it->capacity)
        k -= it->capacity;
    cv_element_move(out, &it->ring[k]);
    it->owed = it->sizes[k];
    it->held -= it->sizes[k];
    if (offset != 0) {
        cv_element_move(&it->ring[k], &it->ring[it->start]);
        it->sizes[k] = it->sizes[it->start];
    }
    if (++it->start == it->capacity)
        it->start = 0;
    it->count--;
    return CV_STATUS_OK;
}

static void shuffle_destroy(CvIterator *base)
{
    ShuffleIterator *it = (ShuffleIterator *)base;
    for (int64_t i = 0; i < it->count; i++)
        cv_element_clear(&it->ring[(it->start + i) % it->capacity]);
    cv_memory_release(base->dataset->memory, it->held + it->owed);
    cv_element_clear(&it->pending);
    free(it->ring);
    free(it->sizes);
    cv_unary_iterator_destroy(base);
}

const CvKernel cv_kernel_shuffle = {
    .name = "Shuffle",
    .make_iterator = shuffle_make_iterator,
    .cardinality = shuffle_cardinality,
    .free_dataset = shuffle_free,
    .next = shuffle_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = shuffle_destroy,
};

CvShuffleParams *cv_shuffle_params(const CvDataset *ds)
{
    return ds->kernel == &cv_kernel_shuffle ? ds->params : NULL;
}

CvStatus cv_shuffle_dataset(CvDataset *input, int64_t buffer_size, int64_t seed, int64_t seed2,
                            bool reshuffle_each_iteration, CvDataset **out)
{
    if (buffer_size <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "buffer_size must be greater than zero.");
    ShuffleParams *p = calloc(1, sizeof(*p));
    if (!p)
        return cv_error_nomem();
    p->buffer_size = buffer_size;
    cv_seed_generator_init(&p->seeds, seed, seed2, reshuffle_each_iteration);
    return cv_dataset_new(&cv_kernel_shuffle, &input, 1, p, false, out);
}
