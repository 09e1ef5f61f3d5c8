/* shuffle_batch: shuffle(buffer_size, seed, seed2, reshuffle) followed by
 * batch(batch_size, drop_remainder, num_parallel_calls, deterministic), in one
 * kernel. The Python layer builds it in place of the pair when
 * options.experimental_optimization.shuffle_and_batch_fusion is on and the
 * elements are small fixed-shape numbers; the result is exactly the pair's:
 * the same elements in the same order, errors at the same positions, the
 * same RAM-budget charges and errors.
 *
 * Why: unfused, every element is a CvElement with its own malloc'd tensor
 * array that waits in the shuffle buffer until drawn, long enough to fall out
 * of the caches, and batch then moves and copies it (about 600 ns per
 * element). Here an element that matches the layout (the dtypes and shapes of
 * the iterator's first element, numbers only, at most CV_ARENA_MAX_ROW_BYTES)
 * is copied into one row of an arena and released at once; the buffer is a
 * ring of uint32 slot numbers in tf.data's logical order; a draw copies the
 * arena row straight into the batch being built, and the incoming element
 * takes the slot just freed (still in the cache).
 *
 * The algorithm and the random numbers are shuffle.c's, bit for bit: per
 * output row, fill the buffer to buffer_size (in arrival order), draw one
 * uint32 r from the iterator's Philox generator, take logical element
 * r % count, and move the oldest into its place. The seeds come from the
 * shuffle dataset's own generator (this dataset holds the shuffle dataset as
 * its input), so iterators of both share it as the unfused pipeline would.
 *
 * Elements that do not match the layout (another shape, strings) are kept
 * whole ("spilled", at most one per slot); a batch that draws one is built
 * as unfused batch builds it (a bundle of rows, then cv_batch_stack), so its
 * errors are batch's own.
 *
 * With num_parallel_calls a CvStage with one worker assembles whole batches
 * ahead of the consumer (each draw depends on the previous one, and the rows
 * must be copied before their slots are reused, so more workers would only
 * wait for the input lock); the results are charged to the RAM budget as
 * ParallelBatch's are, with its name.
 *
 * Resume: sequential only, with shuffle.c's state (seeds, generator, the
 * buffered elements by value in logical order, the pending element) plus
 * the rows of a batch that an interrupted wait left half built. With a
 * worker, batches drawn ahead of the consumer have already changed the
 * buffer, so save() says it cannot.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pipeline.h" /* cv_parallelism */
#include "core/ram_budget.h"
#include "core/philox.h"
#include "core/stage.h"
#include "kernels/common/batch_rows.h"
#include "kernels/common/shuffle_buffer.h"
#include "kernels/kernels.h"

typedef struct {
    int64_t batch_size;
    bool drop_remainder;
    int num_workers; /* 0: sequential */
    bool deterministic;
} ShuffleBatchParams;

typedef struct {
    CvDtype dtype;
    int rank;
    int64_t shape[CV_MAX_RANK];
    size_t offset; /* of this component in an arena row */
    size_t bytes;
} RowPart;

typedef struct {
    CvStagedIterator staged; /* input: the shuffle's input; the stage runs only with workers */
    CvShuffleParams *shuffle; /* the shuffle dataset's (its seed generator is shared) */
    CvMemory *memory; /* the shuffle dataset's budget, charged as shuffle charges it */
    CvPhilox rng;

    /* The layout of arena rows, from the first element (has_layout false:
     * every element is spilled). */
    bool layout_known, has_layout;
    uint32_t ncomp;
    RowPart *parts;
    size_t row_bytes;

    /* The buffer: logical element i sits in slot ring[(start + i) % capacity].
     * Slots [fresh, capacity) were never used; free_slots holds the others
     * not in the ring. */
    uint32_t *ring, *free_slots;
    int64_t capacity, start, count, nfree, fresh;
    CvBuffer *arena_buf; /* capacity rows of row_bytes (big ones get huge pages: draws
                          * are random, and TLB misses would dominate) */
    char *arena;
    CvElement *spill;   /* per slot, NULL until the first spill */
    bool *spilled;      /* per slot, with spill */
    bool input_done;
    size_t held, owed; /* as shuffle.c: bytes buffered, bytes of the row handed out last */
    CvMemoryHolder holder; /* held + owed, listed on the budget (as shuffle.c) */
    CvElement pending; /* pulled, but over the budget: buffered first next time */
    bool has_pending;

    /* The batch being built (kept when an interrupted wait ends a call).
     * Fast rows stay in their arena slots (listed in `taken`, not reused
     * meanwhile) and are copied out together when the batch is complete, with
     * prefetching, so that their cache misses overlap. A batch that draws a
     * spilled element is gathered in `bundle` instead (slow). */
    int64_t rows;
    uint32_t *taken; /* rows slots while !slow */
    int64_t taken_cap;
    bool slow;
    CvElement bundle;
    size_t bundle_cap;
    uint32_t first_ncomp;
    const CvBufferAllocator *out_alloc; /* batches' buffers: build_outputs_in, before the first next() */
} ShuffleBatchIterator;

static void shuffle_batch_free(CvDataset *ds)
{
    free(ds->params);
}

static int64_t shuffle_batch_cardinality(const CvDataset *ds)
{
    const ShuffleBatchParams *p = ds->params;
    return cv_batched_cardinality(cv_dataset_cardinality(ds->inputs[0]), p->batch_size,
                                  p->drop_remainder);
}

/* memcpy of a row part: an inlined word loop for the usual small sizes (a
 * libc call costs more than the copy). */
static inline void copy_bytes(char *dst, const char *src, size_t n)
{
    if (n % 8 != 0 || n > 512) {
        memcpy(dst, src, n);
        return;
    }
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w;
        memcpy(&w, src + i, 8);
        memcpy(dst + i, &w, 8);
    }
}

/* -- the buffer ------------------------------------------------------------ */

static bool set_layout(ShuffleBatchIterator *it, const CvElement *e)
{
    if (e->n == 0)
        return false;
    size_t row = 0;
    for (uint32_t c = 0; c < e->n; c++) {
        const CvTensor *t = &e->t[c];
        if (t->dtype == CV_STRING || t->rank + 1 > CV_MAX_RANK)
            return false;
        row += cv_tensor_nbytes(t);
        if (row > CV_ARENA_MAX_ROW_BYTES)
            return false;
    }
    it->parts = malloc(e->n * sizeof(RowPart));
    if (!it->parts)
        return false; /* spilling is always correct */
    size_t offset = 0;
    for (uint32_t c = 0; c < e->n; c++) {
        RowPart *part = &it->parts[c];
        part->dtype = e->t[c].dtype;
        part->rank = e->t[c].rank;
        memcpy(part->shape, e->t[c].shape, sizeof(part->shape));
        part->offset = offset;
        part->bytes = cv_tensor_nbytes(&e->t[c]);
        offset += part->bytes;
    }
    it->ncomp = e->n;
    it->row_bytes = row;
    return true;
}

static bool fits_layout(const ShuffleBatchIterator *it, const CvElement *e)
{
    if (!it->has_layout || e->n != it->ncomp)
        return false;
    for (uint32_t c = 0; c < e->n; c++) {
        const CvTensor *t = &e->t[c];
        const RowPart *part = &it->parts[c];
        if (t->dtype != part->dtype || t->rank != part->rank ||
            memcmp(t->shape, part->shape, (size_t)t->rank * sizeof(int64_t)) != 0)
            return false;
    }
    return true;
}

/* Room for one more slot: grow ring, arena and slot arrays geometrically up
 * to buffer_size (slots keep their numbers; the ring is laid out afresh). */
static CvStatus grow(ShuffleBatchIterator *it)
{
    /* At most buffer_size in the ring, plus the rows of the batch being built. */
    const ShuffleBatchParams *p = it->staged.base.dataset->params;
    int64_t limit = it->shuffle->buffer_size > INT64_MAX - p->batch_size
                        ? INT64_MAX : it->shuffle->buffer_size + p->batch_size;
    int64_t grown = it->capacity ? it->capacity * 2 : 64;
    if (grown > limit)
        grown = limit;
    if (grown > (int64_t)UINT32_MAX)
        grown = UINT32_MAX;
    if (grown <= it->capacity)
        return cv_error(CV_RESOURCE_EXHAUSTED, "Shuffle: more than 2^32 buffered elements");
    size_t n = (size_t)grown;
    uint32_t *ring = malloc(n * sizeof(uint32_t));
    uint32_t *free_slots = realloc(it->free_slots, n * sizeof(uint32_t));
    if (free_slots)
        it->free_slots = free_slots;
    CvBuffer *arena = NULL;
    if (it->has_layout) {
        arena = cv_buffer_new(n * it->row_bytes + 1);
        if (arena) {
            if (it->arena_buf)
                memcpy(arena->data, it->arena, (size_t)it->capacity * it->row_bytes);
            cv_buffer_unref(it->arena_buf);
            it->arena_buf = arena;
            it->arena = arena->data;
        }
    }
    bool spill_ok = true;
    if (it->spill) {
        CvElement *spill = realloc(it->spill, n * sizeof(CvElement));
        if (spill)
            it->spill = spill;
        bool *spilled = realloc(it->spilled, n * sizeof(bool));
        if (spilled)
            it->spilled = spilled;
        spill_ok = spill && spilled;
        if (spill_ok) {
            memset(spill + it->capacity, 0, (n - (size_t)it->capacity) * sizeof(CvElement));
            memset(spilled + it->capacity, 0, (n - (size_t)it->capacity) * sizeof(bool));
        }
    }
    if (!ring || !free_slots || (it->has_layout && !arena) || !spill_ok) {
        free(ring);
        return cv_error(CV_RESOURCE_EXHAUSTED, "Shuffle: out of memory growing the buffer to "
                        "%lld elements", (long long)grown);
    }
    for (int64_t i = 0; i < it->count; i++) {
        int64_t k = it->start + i;
        ring[i] = it->ring[k >= it->capacity ? k - it->capacity : k];
    }
    free(it->ring);
    it->ring = ring;
    it->start = 0;
    it->capacity = grown;
    return CV_STATUS_OK;
}

static CvStatus ensure_spill(ShuffleBatchIterator *it)
{
    if (it->spill)
        return CV_STATUS_OK;
    it->spill = calloc((size_t)it->capacity, sizeof(CvElement));
    it->spilled = calloc((size_t)it->capacity, sizeof(bool));
    if (!it->spill || !it->spilled) {
        free(it->spill);
        free(it->spilled);
        it->spill = NULL;
        it->spilled = NULL;
        return cv_error_nomem();
    }
    return CV_STATUS_OK;
}

/* Buffer element e (charged already) as the newest. Takes e on OK. */
static CvStatus push(ShuffleBatchIterator *it, CvElement *e)
{
    CvStatus s;
    if (!it->layout_known) {
        it->layout_known = true;
        it->has_layout = set_layout(it, e);
    }
    if (it->nfree == 0 && it->fresh == it->capacity && (s = grow(it)))
        return s;
    bool fits = fits_layout(it, e);
    if (!fits && (s = ensure_spill(it)))
        return s;
    uint32_t slot = (uint32_t)(it->nfree ? it->free_slots[--it->nfree] : it->fresh++);
    if (fits) {
        char *row = it->arena + (size_t)slot * it->row_bytes;
        for (uint32_t c = 0; c < it->ncomp; c++)
            copy_bytes(row + it->parts[c].offset, e->t[c].data, it->parts[c].bytes);
        cv_element_clear(e);
    } else {
        cv_element_move(&it->spill[slot], e);
        it->spilled[slot] = true;
    }
    int64_t k = it->start + it->count;
    it->ring[k >= it->capacity ? k - it->capacity : k] = slot;
    it->count++;
    return CV_STATUS_OK;
}

/* shuffle.c's filling loop: pull until buffer_size elements are buffered
 * or the input ends. An error leaves the buffer intact. */
static CvStatus fill(ShuffleBatchIterator *it)
{
    while (!it->input_done && it->count < it->shuffle->buffer_size) {
        CvElement e = {0};
        CvStatus s;
        if (it->has_pending) {
            cv_element_move(&e, &it->pending);
            it->has_pending = false;
        } else {
            bool input_end = false;
            if ((s = cv_iterator_next(it->staged.input, &e, &input_end)))
                return s;
            if (input_end) {
                it->input_done = true;
                break;
            }
        }
        size_t bytes = cv_element_bytes(&e);
        if (!cv_shuffle_charge_incoming(&it->owed, it->memory, bytes)) {
            cv_element_move(&it->pending, &e);
            it->has_pending = true;
            return cv_shuffle_exceeded(it->memory, bytes, it->shuffle->buffer_size, it->count,
                                       it->held);
        }
        if ((s = push(it, &e))) {
            cv_memory_release(it->memory, bytes);
            cv_element_clear(&e);
            return s;
        }
        it->held += bytes;
        cv_memory_holder_set(&it->holder, it->held + it->owed);
    }
    if (it->owed) { /* no incoming element settled it */
        cv_memory_release(it->memory, it->owed);
        it->owed = 0;
    }
    cv_memory_holder_set(&it->holder, it->held);
    return CV_STATUS_OK;
}

/* Draw the next element's slot (count > 0); the caller frees it with
 * release_slot once the row is copied. */
static uint32_t draw(ShuffleBatchIterator *it)
{
    int64_t k = it->start + cv_shuffle_offset(cv_philox_next(&it->rng), it->count);
    if (k >= it->capacity)
        k -= it->capacity;
    uint32_t slot = it->ring[k];
    it->ring[k] = it->ring[it->start];
    if (++it->start == it->capacity)
        it->start = 0;
    it->count--;
    size_t bytes = it->spill && it->spilled[slot] ? cv_element_bytes(&it->spill[slot])
                                                   : it->row_bytes;
    it->owed = bytes;
    it->held -= bytes;
    return slot;
}

static void release_slot(ShuffleBatchIterator *it, uint32_t slot)
{
    if (it->spill && it->spilled[slot]) {
        cv_element_clear(&it->spill[slot]);
        it->spilled[slot] = false;
    }
    it->free_slots[it->nfree++] = slot;
}

/* -- the batch being built ------------------------------------------------ */

static CvStatus alloc_rows(ShuffleBatchIterator *it, CvElement *e, int64_t rows,
                           const CvBufferAllocator *a)
{
    CvStatus s = cv_element_init(e, it->ncomp);
    for (uint32_t c = 0; !s && c < it->ncomp; c++) {
        int64_t shape[CV_MAX_RANK];
        shape[0] = rows;
        memcpy(shape + 1, it->parts[c].shape, (size_t)it->parts[c].rank * sizeof(int64_t));
        s = cv_tensor_alloc_from(&e->t[c], it->parts[c].dtype, it->parts[c].rank + 1, shape, a);
    }
    if (s)
        cv_element_clear(e);
    return s;
}

static CvStatus take_slot(ShuffleBatchIterator *it, uint32_t slot)
{
    if (it->rows == it->taken_cap) {
        int64_t cap = it->taken_cap ? it->taken_cap * 2 : 256;
        uint32_t *taken = realloc(it->taken, (size_t)cap * sizeof(uint32_t));
        if (!taken)
            return cv_error_nomem();
        it->taken = taken;
        it->taken_cap = cap;
    }
    it->taken[it->rows] = slot;
    return CV_STATUS_OK;
}

/* The taken rows as one element of `rows` rows (on OK); the slots are free
 * again either way. */
static CvStatus copy_taken(ShuffleBatchIterator *it, CvElement *out, const CvBufferAllocator *a)
{
    enum { AHEAD = 8 };
    int64_t rows = it->rows;
    CvStatus s = alloc_rows(it, out, rows, a);
    for (int64_t r = 0; !s && r < rows; r++) {
        if (r + AHEAD < rows) {
            const char *next = it->arena + (size_t)it->taken[r + AHEAD] * it->row_bytes;
            for (size_t b = 0; b < it->row_bytes && b < 256; b += 64)
                __builtin_prefetch(next + b);
        }
        const char *row = it->arena + (size_t)it->taken[r] * it->row_bytes;
        for (uint32_t c = 0; c < it->ncomp; c++) {
            size_t n = it->parts[c].bytes;
            copy_bytes(out->t[c].data + (size_t)r * n, row + it->parts[c].offset, n);
        }
    }
    for (int64_t r = rows; r-- > 0;)
        release_slot(it, it->taken[r]);
    return s;
}

/* Switch the batch to a bundle, as batch gathers one: the rows taken so far
 * become views of one copy of them. */
static CvStatus go_slow(ShuffleBatchIterator *it)
{
    CvElement copied = {0};
    it->slow = true;
    it->bundle_cap = 0;
    it->first_ncomp = it->ncomp;
    if (it->rows == 0)
        return CV_STATUS_OK;
    CvStatus s = copy_taken(it, &copied, NULL);
    for (int64_t r = 0; !s && r < it->rows; r++) {
        CvElement view = {0};
        if ((s = cv_element_init(&view, it->ncomp)))
            break;
        for (uint32_t c = 0; c < it->ncomp; c++)
            cv_tensor_slice(&view.t[c], &copied.t[c], r);
        if ((s = cv_bundle_append(&it->bundle, &it->bundle_cap, &view)))
            cv_element_clear(&view);
    }
    cv_element_clear(&copied);
    return s;
}

/* The arena row in `slot` as a new element (a copy). */
static CvStatus row_element(ShuffleBatchIterator *it, uint32_t slot, CvElement *e)
{
    CvStatus s = alloc_rows(it, e, 1, NULL);
    if (s)
        return s;
    const char *row = it->arena + (size_t)slot * it->row_bytes;
    for (uint32_t c = 0; c < it->ncomp; c++) {
        memcpy(e->t[c].data, row + it->parts[c].offset, it->parts[c].bytes);
        e->t[c].rank--; /* a row: drop the leading 1 */
        memmove(e->t[c].shape, e->t[c].shape + 1, (size_t)e->t[c].rank * sizeof(int64_t));
    }
    return CV_STATUS_OK;
}

/* Gather the row in `slot` into the bundle (an arena row as a fresh copy),
 * checking the component count as cv_gather_rows does. */
static CvStatus add_slow_row(ShuffleBatchIterator *it, uint32_t slot)
{
    CvStatus s;
    CvElement e = {0};
    if (it->spill && it->spilled[slot])
        cv_element_move(&e, &it->spill[slot]);
    else if ((s = row_element(it, slot, &e)))
        return s;
    if (it->rows == 0) {
        it->first_ncomp = e.n;
    } else if (e.n != it->first_ncomp) {
        s = cv_error(CV_INVALID_ARGUMENT, "Cannot batch elements with %u and %u components",
                     it->first_ncomp, e.n);
        cv_element_clear(&e);
        return s;
    }
    if ((s = cv_bundle_append(&it->bundle, &it->bundle_cap, &e)))
        cv_element_clear(&e);
    return s;
}

static void drop_batch(ShuffleBatchIterator *it)
{
    if (!it->slow)
        for (int64_t r = it->rows; r-- > 0;)
            release_slot(it, it->taken[r]);
    cv_element_clear(&it->bundle);
    it->bundle_cap = 0;
    it->rows = 0;
    it->slow = false;
}

/* One batch, as batch over shuffle makes it: per row one shuffle step. An
 * error drops the rows drawn so far (the next batch starts after it), except
 * an interrupted wait, which keeps them so that the batch resumes. */
static CvStatus assemble(ShuffleBatchIterator *it, CvElement *out, bool *end)
{
    const ShuffleBatchParams *p = it->staged.base.dataset->params;
    CvStatus s = CV_STATUS_OK;
    *end = false;
    while (it->rows < p->batch_size) {
        if ((s = fill(it)))
            break;
        if (it->count == 0)
            break;
        uint32_t slot = draw(it);
        bool spilled = it->spill && it->spilled[slot];
        if (!it->slow && !spilled) {
            if ((s = take_slot(it, slot))) {
                release_slot(it, slot);
                break;
            }
        } else {
            if (!it->slow && (s = go_slow(it))) {
                release_slot(it, slot);
                break;
            }
            s = add_slow_row(it, slot);
            release_slot(it, slot);
            if (s)
                break;
        }
        it->rows++;
    }
    if (s) {
        if (s->code != CV_INTERRUPTED)
            drop_batch(it);
        return s;
    }
    int64_t rows = it->rows;
    if (rows == 0 || (rows < p->batch_size && p->drop_remainder)) {
        drop_batch(it);
        *end = true;
        return CV_STATUS_OK;
    }
    if (it->slow) {
        CvElement bundle;
        cv_element_move(&bundle, &it->bundle);
        drop_batch(it);
        return cv_batch_stack(&bundle, rows, out, it->out_alloc);
    }
    s = copy_taken(it, out, it->out_alloc); /* frees the slots */
    it->rows = 0;
    return s;
}

/* -- the kernel ------------------------------------------------------------ */

static CvStatus stage_pull(void *owner, CvElement *work, int64_t *aux, bool *end)
{
    *aux = 0;
    return assemble(owner, work, end);
}

static CvStatus stage_process(void *owner, CvElement *work, int64_t aux, CvElement *out)
{
    (void)owner;
    (void)aux;
    cv_element_move(out, work); /* assembled in pull: rows must leave the buffer in order */
    return CV_STATUS_OK;
}

static const CvStageOps stage_ops = {stage_pull, stage_process, NULL};

static void shuffle_batch_destroy(CvIterator *base);

static CvStatus shuffle_batch_make_iterator(const CvDataset *ds, CvIterator **out)
{
    const ShuffleBatchParams *p = ds->params;
    CvDataset *shuffle = ds->inputs[0];
    ShuffleBatchIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    it->shuffle = cv_shuffle_params(shuffle);
    it->memory = shuffle->memory;
    cv_memory_holder_list(&it->holder, it->memory, "Shuffle", "lower shuffle's buffer_size");
    CvStatus s = cv_iterator_make(shuffle->inputs[0], &it->staged.input);
    if (!s && p->num_workers > 0) {
        s = cv_stage_init(&it->staged.stage, &stage_ops, it, "ParallelBatch", p->num_workers, false,
                          2 * p->num_workers, 2 * p->num_workers, p->deterministic);
        if (!s)
            cv_stage_set_memory(&it->staged.stage, ds->memory,
                                "lower batch's batch_size or num_parallel_calls");
    }
    if (s) {
        shuffle_batch_destroy(&it->staged.base);
        return s;
    }
    /* Seeds last, as shuffle draws them when its iterator is made. */
    cv_seed_generator_next(&it->shuffle->seeds, &it->rng);
    *out = &it->staged.base;
    return CV_STATUS_OK;
}

static CvStatus shuffle_batch_next(CvIterator *base, CvElement *out, bool *end)
{
    ShuffleBatchIterator *it = (ShuffleBatchIterator *)base;
    if (((const ShuffleBatchParams *)base->dataset->params)->num_workers > 0)
        return cv_stage_next(&it->staged.stage, out, end);
    return assemble(it, out, end);
}

/* -- exact resume ----------------------------------------------------------- */

/* The element buffered in `slot`, written by value (an arena row is copied
 * out: the state holds elements, not this iterator's layout). */
static CvStatus put_slot(ShuffleBatchIterator *it, CvStateWriter *w, uint32_t slot)
{
    if (it->spill && it->spilled[slot]) {
        cv_state_put_element(w, &it->spill[slot]);
        return CV_STATUS_OK;
    }
    CvElement e = {0};
    CvStatus s = row_element(it, slot, &e);
    if (!s)
        cv_state_put_element(w, &e);
    cv_element_clear(&e);
    return s;
}

/* As shuffle.c's frame, plus the rows of a batch an interrupted wait left
 * half built. Sequential only: with num_parallel_calls the worker has drawn
 * the rows of batches the consumer has not seen, and the buffer as it was
 * before them is gone. */
static CvStatus staged_unsavable(void)
{
    return cv_error(CV_UNIMPLEMENTED,
                    "the iterator of ShuffleBatch (shuffle().batch(num_parallel_calls=...), "
                    "fused) cannot be saved: its worker draws batches ahead of the consumer. "
                    "Drop batch's num_parallel_calls, or set "
                    "options.experimental_optimization.shuffle_and_batch_fusion = False");
}

static CvStatus shuffle_batch_save(CvIterator *base, CvStateWriter *w)
{
    ShuffleBatchIterator *it = (ShuffleBatchIterator *)base;
    if (((const ShuffleBatchParams *)base->dataset->params)->num_workers > 0)
        return staged_unsavable();
    CvStatus s = CV_STATUS_OK;
    cv_shuffle_put_seeds(w, &it->shuffle->seeds);
    cv_shuffle_put_philox(w, &it->rng);
    cv_state_put_i64(w, it->input_done);
    cv_state_put_i64(w, it->count);
    for (int64_t i = 0; !s && i < it->count; i++) {
        int64_t k = it->start + i;
        s = put_slot(it, w, it->ring[k >= it->capacity ? k - it->capacity : k]);
    }
    cv_state_put_i64(w, it->has_pending);
    if (it->has_pending)
        cv_state_put_element(w, &it->pending);
    cv_state_put_i64(w, it->rows);
    for (int64_t r = 0; !s && r < it->rows; r++) {
        if (!it->slow) {
            s = put_slot(it, w, it->taken[r]);
        } else { /* a bundle: first_ncomp tensors per row */
            CvElement row = {.n = it->first_ncomp, .t = it->bundle.t + (size_t)r * it->first_ncomp};
            cv_state_put_element(w, &row);
        }
    }
    return s ? s : cv_iterator_save(it->staged.input, w);
}

/* cv_shuffle_restore_buffer's push: the buffer of iterator `buffer`. */
static CvStatus restore_push(void *buffer, CvElement *e, size_t bytes)
{
    (void)bytes; /* the iterator keeps only the total, it->held */
    return push(buffer, e);
}

/* Buffered elements are pushed in logical order (the layout comes from the
 * first of them; the batches are the same whichever layout rows have);
 * the rows of a half-built batch become a bundle, as after go_slow(). */
static CvStatus shuffle_batch_restore(CvIterator *base, CvStateReader *r)
{
    ShuffleBatchIterator *it = (ShuffleBatchIterator *)base;
    const ShuffleBatchParams *p = base->dataset->params;
    if (p->num_workers > 0)
        return staged_unsavable();
    CvSavedSeeds seeds;
    int64_t rows = 0;
    bool input_done = false, has_pending = false;
    CvStatus s = cv_shuffle_get_seeds(r, &seeds);
    if (!s)
        s = cv_shuffle_get_philox(r, &it->rng);
    if (!s)
        s = cv_state_get_bool(r, &input_done);
    if (!s)
        s = cv_shuffle_restore_buffer(r, it->memory, it->shuffle->buffer_size, restore_push, it,
                                      &it->held);
    if (!s)
        s = cv_state_get_bool(r, &has_pending);
    if (!s && has_pending && !(s = cv_state_get_element(r, &it->pending)))
        it->has_pending = true;
    if (!s)
        s = cv_state_get_range(r, "the rows of the batch being built", 0, p->batch_size - 1, &rows);
    for (int64_t i = 0; !s && i < rows; i++) {
        CvElement e = {0};
        if ((s = cv_state_get_element(r, &e)))
            break;
        if (it->rows == 0) {
            it->slow = true;
            it->bundle_cap = 0;
            it->first_ncomp = e.n;
        } else if (e.n != it->first_ncomp) {
            s = cv_state_corrupt("rows of a batch with different component counts");
        }
        if (!s && !(s = cv_bundle_append(&it->bundle, &it->bundle_cap, &e)))
            it->rows++;
        cv_element_clear(&e);
    }
    if (!s)
        s = cv_iterator_restore(it->staged.input, r);
    if (s)
        return s; /* destroy() frees what was restored */
    it->input_done = input_done;
    cv_shuffle_set_seeds(&it->shuffle->seeds, &seeds);
    return CV_STATUS_OK;
}

static void shuffle_batch_destroy(CvIterator *base)
{
    ShuffleBatchIterator *it = (ShuffleBatchIterator *)base;
    cv_staged_iterator_cancel(base);
    cv_stage_destroy(&it->staged.stage); /* joins the workers before the buffer goes */
    drop_batch(it);
    for (int64_t i = 0; it->spill && i < it->capacity; i++)
        cv_element_clear(&it->spill[i]);
    cv_memory_release(it->memory, it->held + it->owed);
    cv_memory_holder_unlist(&it->holder);
    cv_element_clear(&it->pending);
    free(it->ring);
    free(it->free_slots);
    cv_buffer_unref(it->arena_buf);
    free(it->spill);
    free(it->spilled);
    free(it->parts);
    free(it->taken);
    cv_staged_iterator_destroy(base);
}

static bool shuffle_batch_build_outputs_in(CvIterator *base, const CvBufferAllocator *a)
{
    ((ShuffleBatchIterator *)base)->out_alloc = a;
    return true;
}

const CvKernel cv_kernel_shuffle_batch = {
    .name = "ShuffleBatch",
    .make_iterator = shuffle_batch_make_iterator,
    .cardinality = shuffle_batch_cardinality,
    .free_dataset = shuffle_batch_free,
    .next = shuffle_batch_next,
    .cancel = cv_staged_iterator_cancel,
    .destroy = shuffle_batch_destroy,
    .measure = cv_staged_iterator_measure,
    .save = shuffle_batch_save,
    .restore = shuffle_batch_restore,
    .build_outputs_in = shuffle_batch_build_outputs_in,
};

CvStatus cv_shuffle_batch_dataset(CvDataset *shuffle, int64_t batch_size, bool drop_remainder,
                                  int64_t num_parallel_calls, bool deterministic, CvDataset **out)
{
    if (!cv_shuffle_params(shuffle))
        return cv_error(CV_INVALID_ARGUMENT, "shuffle_batch: the input is not a shuffle dataset");
    CvStatus s = cv_check_batch_size(batch_size);
    if (s)
        return s;
    int workers = 0;
    bool tune = false;
    s = cv_parallelism(num_parallel_calls, &workers, &tune);
    if (s)
        return s;
    ShuffleBatchParams *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    p->batch_size = batch_size;
    p->drop_remainder = drop_remainder;
    p->deterministic = deterministic;
    p->num_workers = workers > 0; /* batches are assembled in order: one worker runs ahead */
    return cv_dataset_new(&cv_kernel_shuffle_batch, &shuffle, 1, p, workers > 0, out);
}
