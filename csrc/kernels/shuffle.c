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
 *
 * Resume: the state holds the dataset's seed generator (the seeds of later
 * epochs), the iterator's Philox generator and its looked-ahead samples, the
 * buffered elements by value in their logical order, the pending element
 * and the input's position. The buffer is kept, not re-read: re-reading it
 * would need the input's position at each buffered element (for a file
 * source, each one's file and offset; for a map, its input's), as many
 * saved positions as elements, and a second pass over sources that may be
 * slow or gone. The state is about the buffer's bytes plus a few hundred.
 */
#include <stdlib.h>

#include "core/philox.h"
#include "kernels/common/shuffle_buffer.h"
#include "kernels/kernels.h"

typedef CvShuffleParams ShuffleParams;

typedef struct {
    CvElement e;
    size_t bytes; /* charged for e */
} Slot;

/* Draws looked ahead (see prefetch_ahead). */
#define AHEAD 3

typedef struct {
    CvUnaryIterator base;
    CvPhilox rng;
    uint32_t ahead[AHEAD]; /* the stream's next samples, drawn early, in order */
    int nahead;
    Slot *ring; /* logical element i at ring[(start + i) % capacity] */
    int64_t capacity, start, count;
    bool input_done;
    size_t held;       /* bytes of the buffered elements, charged to the budget */
    size_t owed;       /* bytes of the element handed out last, still charged */
    CvElement pending; /* pulled, but over the budget: buffered first next time */
    bool has_pending;
    CvMemoryHolder holder; /* held + owed, listed on the budget at the first next() */
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
        Slot *ring = malloc((size_t)grown * sizeof(Slot));
        if (!ring)
            return cv_error(CV_RESOURCE_EXHAUSTED, "Shuffle: out of memory growing the buffer to "
                            "%lld elements", (long long)grown);
        for (int64_t i = 0; i < it->count; i++)
            ring[i] = it->ring[(it->start + i) % it->capacity];
        free(it->ring);
        it->ring = ring;
        it->capacity = grown;
        it->start = 0;
    }
    int64_t k = it->start + it->count;
    if (k >= it->capacity)
        k -= it->capacity;
    cv_element_move(&it->ring[k].e, e);
    it->ring[k].bytes = bytes;
    it->count++;
    return CV_STATUS_OK;
}

/* The next sample of the iterator's Philox stream. */
static uint32_t next_sample(ShuffleIterator *it)
{
    if (it->nahead == 0)
        return cv_philox_next(&it->rng);
    uint32_t r = it->ahead[0];
    for (int i = 1; i < it->nahead; i++)
        it->ahead[i - 1] = it->ahead[i];
    it->nahead--;
    return r;
}

/* A draw touches a random ring slot, then the element's tensor array, then
 * (in the batch that follows, usually) its values: three dependent cache
 * misses, which dominated the cost of shuffling small elements. The draws of
 * the next calls are known (the Philox stream, and a buffer that stays as
 * full as it is now), so each call prefetches the slot three draws ahead,
 * the tensors two ahead and the values of the next one, each from what the
 * previous calls brought in. A wrong guess (the input ends, an element moved)
 * only wastes a prefetch; the order is untouched. */
static void prefetch_ahead(ShuffleIterator *it, int64_t buffer_size)
{
    while (it->nahead < AHEAD)
        it->ahead[it->nahead++] = cv_philox_next(&it->rng);
    for (int j = AHEAD - 1; j >= 0; j--) {
        int64_t count = it->input_done ? it->count - j : buffer_size;
        if (count <= 0)
            continue;
        /* Its place among the elements buffered now; only those are read
         * (the others are not pulled yet). */
        int64_t logical = j + cv_shuffle_offset(it->ahead[j], count);
        if (logical >= it->count)
            continue;
        int64_t k = it->start + logical;
        if (k >= it->capacity)
            k -= it->capacity;
        const Slot *slot = &it->ring[k];
        if (j == 2) {
            __builtin_prefetch(slot);
        } else if (slot->e.n) {
            const CvTensor *t = slot->e.t;
            if (j == 1) {
                __builtin_prefetch(t);
                __builtin_prefetch(&t->data);
            } else {
                for (uint32_t c = 0; c < slot->e.n && c < 4; c++)
                    __builtin_prefetch(t[c].data);
            }
        }
    }
}

static CvStatus shuffle_fill_and_take(ShuffleIterator *it, const ShuffleParams *p, CvMemory *memory,
                                      CvElement *out, bool *end);

static CvStatus shuffle_next(CvIterator *base, CvElement *out, bool *end)
{
    ShuffleIterator *it = (ShuffleIterator *)base;
    const ShuffleParams *p = base->dataset->params;
    CvMemory *memory = base->dataset->memory;
    cv_memory_holder_list(&it->holder, memory, "Shuffle", "lower shuffle's buffer_size");
    CvStatus st = shuffle_fill_and_take(it, p, memory, out, end);
    cv_memory_holder_set(&it->holder, it->held + it->owed);
    return st;
}

/* shuffle_next's work: fill the buffer, hand out one element. */
static CvStatus shuffle_fill_and_take(ShuffleIterator *it, const ShuffleParams *p, CvMemory *memory,
                                      CvElement *out, bool *end)
{
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
        cv_memory_holder_set(&it->holder, it->held + it->owed);
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
    int64_t offset = cv_shuffle_offset(next_sample(it), it->count);
    int64_t k = it->start + offset; /* (start + offset) % capacity, without a division */
    if (k >= it->capacity)
        k -= it->capacity;
    cv_element_move(out, &it->ring[k].e);
    it->owed = it->ring[k].bytes;
    it->held -= it->ring[k].bytes;
    if (offset != 0)
        it->ring[k] = it->ring[it->start]; /* the oldest fills the hole */
    if (++it->start == it->capacity)
        it->start = 0;
    it->count--;
    prefetch_ahead(it, p->buffer_size);
    return CV_STATUS_OK;
}

static CvStatus shuffle_save(CvIterator *base, CvStateWriter *w)
{
    ShuffleIterator *it = (ShuffleIterator *)base;
    ShuffleParams *p = base->dataset->params;
    cv_shuffle_put_seeds(w, &p->seeds);
    cv_shuffle_put_philox(w, &it->rng);
    cv_state_put_i64(w, it->nahead);
    for (int i = 0; i < it->nahead; i++)
        cv_state_put_i64(w, it->ahead[i]);
    cv_state_put_i64(w, it->input_done);
    cv_state_put_i64(w, it->count);
    for (int64_t i = 0; i < it->count; i++)
        cv_state_put_element(w, &it->ring[(it->start + i) % it->capacity].e);
    cv_state_put_i64(w, it->has_pending);
    if (it->has_pending)
        cv_state_put_element(w, &it->pending);
    return cv_iterator_save(it->base.input, w);
}

/* cv_shuffle_restore_buffer's push: the ring of iterator `buffer`. */
static CvStatus restore_push(void *buffer, CvElement *e, size_t bytes)
{
    ShuffleIterator *it = buffer;
    return ring_push(it, ((const ShuffleParams *)it->base.base.dataset->params)->buffer_size, e,
                     bytes);
}

/* Fills a new iterator (empty buffer, nothing charged): every field is read
 * and checked before the dataset's seed generator is moved. */
static CvStatus shuffle_restore(CvIterator *base, CvStateReader *r)
{
    ShuffleIterator *it = (ShuffleIterator *)base;
    ShuffleParams *p = base->dataset->params;
    CvSavedSeeds seeds;
    int64_t nahead = 0;
    bool input_done = false, has_pending = false;
    CvStatus s = cv_shuffle_get_seeds(r, &seeds);
    if (!s)
        s = cv_shuffle_get_philox(r, &it->rng);
    if (!s)
        s = cv_state_get_range(r, "shuffle's looked-ahead samples", 0, AHEAD, &nahead);
    for (int i = 0; !s && i < nahead; i++) {
        int64_t v = 0;
        if (!(s = cv_state_get_range(r, "a random sample", 0, UINT32_MAX, &v)))
            it->ahead[i] = (uint32_t)v;
    }
    it->nahead = (int)nahead;
    if (!s)
        s = cv_state_get_bool(r, &input_done);
    if (!s)
        s = cv_shuffle_restore_buffer(r, base->dataset->memory, p->buffer_size, restore_push, it,
                                      &it->held);
    if (!s)
        s = cv_state_get_bool(r, &has_pending);
    if (!s && has_pending && !(s = cv_state_get_element(r, &it->pending)))
        it->has_pending = true;
    if (!s)
        s = cv_iterator_restore(it->base.input, r);
    if (s)
        return s; /* destroy() frees what was buffered */
    it->input_done = input_done;
    cv_shuffle_set_seeds(&p->seeds, &seeds);
    return CV_STATUS_OK;
}

static void shuffle_destroy(CvIterator *base)
{
    ShuffleIterator *it = (ShuffleIterator *)base;
    for (int64_t i = 0; i < it->count; i++)
        cv_element_clear(&it->ring[(it->start + i) % it->capacity].e);
    cv_memory_release(base->dataset->memory, it->held + it->owed);
    cv_memory_holder_unlist(&it->holder);
    cv_element_clear(&it->pending);
    free(it->ring);
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
    .save = shuffle_save,
    .restore = shuffle_restore,
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
