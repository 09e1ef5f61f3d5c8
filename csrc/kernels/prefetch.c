/* prefetch(buffer_size): one producer thread fills a bounded buffer of
 * {status, element} ahead of the consumer. buffer_size == AUTOTUNE starts
 * at one element and grows, one at a time, whenever the consumer finds the
 * buffer empty (up to CV_PREFETCH_AUTOTUNE_MAX, and while the RAM budget has
 * room). buffer_size == 0 passes elements straight through. Order and values
 * never change. Buffered elements are charged to the dataset's RAM budget
 * (core/stage.h).
 *
 * Exact resume: the stage's (core/stage.h): the input's position after the
 * last element handed out (a mark) or, on a first save, the elements
 * buffered and the input's position now. buffer_size 0 is its input's.
 */
#include <stdlib.h>

#include "core/stage.h"
#include "kernels/kernels.h"

#define CV_PREFETCH_AUTOTUNE_MAX 16
/* Larger buffer sizes are accepted and clamped: the slots are allocated up
 * front, and buffering more than this many elements ahead buys nothing. */
#define CV_PREFETCH_MAX 65536

typedef struct {
    int64_t buffer_size;
} PrefetchParams;

typedef CvStagedIterator PrefetchIterator; /* no stage for buffer_size 0 */

static void prefetch_free(CvDataset *ds)
{
    free(ds->params);
}

static int64_t prefetch_cardinality(const CvDataset *ds)
{
    return cv_dataset_cardinality(ds->inputs[0]);
}

static CvStatus prefetch_pull(void *owner, CvElement *work, int64_t *aux, bool *end)
{
    (void)aux;
    return cv_iterator_next(((PrefetchIterator *)owner)->input, work, end);
}

/* An inline prefetch's try_next: the input's (a pass-through). */
static CvStatus prefetch_try_pull(void *owner, CvElement *work, int64_t *aux, bool *end, bool *would_block)
{
    (void)aux;
    return cv_iterator_try_next(((PrefetchIterator *)owner)->input, work, end, would_block);
}

static CvStatus prefetch_process(void *owner, CvElement *work, int64_t aux, CvElement *out)
{
    (void)owner;
    (void)aux;
    cv_element_move(out, work);
    return CV_STATUS_OK;
}

static CvStatus prefetch_save_input(void *owner, CvStateWriter *w)
{
    return cv_iterator_save(((PrefetchIterator *)owner)->input, w);
}

static CvStatus prefetch_restore_input(void *owner, CvStateReader *r)
{
    return cv_iterator_restore(((PrefetchIterator *)owner)->input, r);
}

static const CvStageOps prefetch_stage_ops = {prefetch_pull, prefetch_process, NULL,
                                              prefetch_save_input, prefetch_restore_input,
                                              prefetch_try_pull};


static CvStatus prefetch_make_iterator(const CvDataset *ds, CvIterator **out)
{
    int64_t size = ((const PrefetchParams *)ds->params)->buffer_size;
    PrefetchIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    CvStatus s = cv_iterator_make(ds->inputs[0], &it->input);
    if (!s && size != 0) {
        int fixed = size > CV_PREFETCH_MAX ? CV_PREFETCH_MAX : (int)size;
        int initial = size == CV_AUTOTUNE ? 1 : fixed;
        int max = size == CV_AUTOTUNE ? CV_PREFETCH_AUTOTUNE_MAX : fixed;
        s = cv_stage_init(&it->stage, &prefetch_stage_ops, it, "Prefetch", 1, false, initial, max, true);
        if (!s) { /* hand elements over in runs: fewer lock round trips per element */
            cv_stage_set_chunk(&it->stage, CV_STAGE_MAX_CHUNK, false);
            cv_stage_set_memory(&it->stage, ds->memory, "lower prefetch's buffer_size");
            if (size == CV_AUTOTUNE) /* over cheap inline work: a pass-through */
                cv_stage_allow_inline(&it->stage, &it->base, ds->inputs[0]);
        }
    }
    if (s) {
        cv_staged_iterator_destroy(&it->base);
        return s;
    }
    *out = &it->base;
    return CV_STATUS_OK;
}

static CvStatus prefetch_next(CvIterator *base, CvElement *out, bool *end)
{
    PrefetchIterator *it = (PrefetchIterator *)base;
    if (!it->stage.slots) /* buffer_size 0 */
        return cv_iterator_next(it->input, out, end);
    if (cv_stage_inline_fast(&it->stage)) { /* inline: a pass-through */
        CvStatus s = cv_iterator_next(it->input, out, end);
        if (!s && *end)
            cv_stage_inline_end(&it->stage);
        return s;
    }
    return cv_stage_next(&it->stage, out, end);
}

static CvStatus prefetch_try_next(CvIterator *base, CvElement *out, bool *end, bool *would_block)
{
    PrefetchIterator *it = (PrefetchIterator *)base;
    if (!it->stage.slots) /* buffer_size 0 */
        return cv_iterator_try_next(it->input, out, end, would_block);
    if (cv_stage_inline_fast(&it->stage)) { /* inline: a pass-through, as inline_next pulls */
        CvStatus s;
        *would_block = false;
        *end = false;
        if (it->stage.input_may_block) {
            s = cv_iterator_try_next(it->input, out, end, would_block);
            if (!s && *would_block) {
                cv_stage_inline_undo(&it->stage);
                return s;
            }
        } else {
            s = cv_iterator_next(it->input, out, end);
        }
        if (!s && *end)
            cv_stage_inline_end(&it->stage);
        return s;
    }
    return cv_stage_try_next(&it->stage, out, end, would_block);
}

/* Inline over its input, a pass-through: the direct units go to the
 * consumer (CvKernel.pass_through), which then calls the input itself. */
static bool prefetch_pass_through(CvIterator *base, CvPassThrough *grant)
{
    PrefetchIterator *it = (PrefetchIterator *)base;
    if (!it->stage.slots)
        return false;
    grant->units = cv_stage_give_grant(&it->stage, &grant->gate);
    grant->input = it->input;
    grant->may_block = it->stage.input_may_block;
    return grant->units > 0;
}

/* [elements in flight][input]; both empty without a stage. */
static CvStatus prefetch_save(CvIterator *base, CvStateWriter *w)
{
    PrefetchIterator *it = (PrefetchIterator *)base;
    if (it->stage.slots)
        return cv_stage_save(&it->stage, w);
    cv_state_put_u64(w, 0);
    return prefetch_save_input(it, w);
}

static CvStatus prefetch_restore(CvIterator *base, CvStateReader *r)
{
    PrefetchIterator *it = (PrefetchIterator *)base;
    int64_t pending = 0;
    if (it->stage.slots)
        return cv_stage_restore(&it->stage, r);
    CvStatus s = cv_state_get_range(r, "prefetch's elements in flight", 0, 0, &pending);
    return s ? s : prefetch_restore_input(it, r);
}

/* Elements pass through unchanged: whoever builds them may build them where
 * our consumer (a device stage) wants them. */
static bool prefetch_build_outputs_in(CvIterator *base, const CvBufferAllocator *a)
{
    return cv_iterator_build_outputs_in(((PrefetchIterator *)base)->input, a);
}

const CvKernel cv_kernel_prefetch = {
    .name = "Prefetch",
    .make_iterator = prefetch_make_iterator,
    .cardinality = prefetch_cardinality,
    .free_dataset = prefetch_free,
    .next = prefetch_next,
    .cancel = cv_staged_iterator_cancel,
    .destroy = cv_staged_iterator_destroy,
    .measure = cv_staged_iterator_measure,
    .try_next = prefetch_try_next,
    .save = prefetch_save,
    .restore = prefetch_restore,
    .pass_through = prefetch_pass_through,
    .build_outputs_in = prefetch_build_outputs_in,
};

CvStatus cv_prefetch_dataset(CvDataset *input, int64_t buffer_size, CvDataset **out)
{
    if (buffer_size < 0 && buffer_size != CV_AUTOTUNE)
        return cv_error(CV_INVALID_ARGUMENT,
                        "buffer_size must be >= 0 or AUTOTUNE (-1), got %lld", (long long)buffer_size);
    PrefetchParams *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    p->buffer_size = buffer_size;
    return cv_dataset_new(&cv_kernel_prefetch, &input, 1, p, buffer_size != 0, out);
}
