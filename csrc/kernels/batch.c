/* batch(batch_size, drop_remainder, num_parallel_calls, deterministic).
 *
 * Pulls batch_size elements and stacks each component along a new leading
 * axis, one copy per component per element into a fresh buffer (large
 * strings are referenced instead: kernels/common/batch_rows.h). With
 * num_parallel_calls the pulls stay sequential and in order (a CvStage) and
 * the copying runs on the workers. A device stage that consumes the
 * batches has their numeric components built in page-locked memory
 * (build_outputs_in: the allocator it hands us). An input error fails the batch it falls
 * in (the elements gathered so far are dropped) and the next batch starts
 * after it, as tf.data's BatchDataset does.
 *
 * Exact resume: the input's position after the last batch handed out
 * (the rows of a batch are gathered by one pull, so a batch boundary is a
 * pull boundary); parallel, the stage's marks or in-flight batches
 * (core/stage.h). State: 8 bytes + the input's frame.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/common/batch_rows.h"
#include "core/pipeline.h" /* cv_parallelism */
#include "core/stage.h"
#include "kernels/kernels.h"

typedef struct {
    int64_t batch_size;
    bool drop_remainder;
    int num_workers; /* 0: sequential */
    bool tune_workers; /* AUTOTUNE: num_workers is the most */
    bool deterministic;
} BatchParams;

typedef struct {
    CvStagedIterator staged; /* the stage runs only with num_parallel_calls */
    CvRowGatherer rows;
    const CvBufferAllocator *out_alloc; /* set before the first next(): build_outputs_in */
} BatchIterator;

static void batch_free(CvDataset *ds)
{
    free(ds->params);
}

static int64_t batch_cardinality(const CvDataset *ds)
{
    const BatchParams *p = ds->params;
    return cv_batched_cardinality(cv_dataset_cardinality(ds->inputs[0]), p->batch_size,
                                  p->drop_remainder);
}

/* Stack a bundle of `rows` rows into one element. Takes the bundle. */
static CvStatus stack(CvElement *bundle, int64_t rows, CvElement *out, const CvBufferAllocator *alloc)
{
    char a[96], b[96];
    uint32_t ncomp = (uint32_t)(bundle->n / rows);
    CvStatus s = cv_element_init(out, ncomp);
    if (s)
        goto done;
    for (uint32_t c = 0; c < ncomp; c++) {
        const CvTensor *first = &bundle->t[c];
        for (int64_t r = 1; r < rows; r++) {
            const CvTensor *t = &bundle->t[r * ncomp + c];
            if (t->dtype != first->dtype) {
                s = cv_error(CV_INVALID_ARGUMENT,
                             "Cannot batch tensors with different dtypes in component %u. First "
                             "element had dtype %s and element %lld had dtype %s.", c,
                             cv_dtype_name(first->dtype), (long long)r, cv_dtype_name(t->dtype));
                goto done;
            }
            if (!cv_tensor_same_shape(t, first)) {
                s = cv_error(CV_INVALID_ARGUMENT,
                             "Cannot batch tensors with different shapes in component %u. First "
                             "element had shape %s and element %lld had shape %s.", c,
                             cv_shape_str(first->shape, first->rank, a, sizeof(a)), (long long)r,
                             cv_shape_str(t->shape, t->rank, b, sizeof(b)));
                goto done;
            }
        }
        if (first->rank + 1 > CV_MAX_RANK) {
            s = cv_error(CV_INVALID_ARGUMENT, "batching component %u would exceed rank %d", c,
                         CV_MAX_RANK);
            goto done;
        }
        int64_t shape[CV_MAX_RANK];
        shape[0] = rows;
        memcpy(shape + 1, first->shape, (size_t)first->rank * sizeof(int64_t));
        if ((s = cv_stack_rows(&out->t[c], bundle, rows, ncomp, c, first->rank + 1, shape, alloc)))
            goto done;
    }
done:
    if (s)
        cv_element_clear(out);
    cv_element_clear(bundle);
    return s;
}

static CvStatus gather(BatchIterator *it, CvElement *bundle, int64_t *rows, bool *end)
{
    const BatchParams *p = it->staged.base.dataset->params;
    return cv_gather_rows(&it->rows, it->staged.input, p->batch_size, p->drop_remainder, bundle,
                          rows, end);
}

static CvStatus batch_pull(void *owner, CvElement *work, int64_t *aux, bool *end)
{
    return gather(owner, work, aux, end);
}

static CvStatus batch_process(void *owner, CvElement *work, int64_t aux, CvElement *out)
{
    return stack(work, aux, out, ((BatchIterator *)owner)->out_alloc);
}

/* Between pulls the gatherer holds no rows, except after an interrupted
 * next(): those rows are the input's past, so that position has no state. */
static CvStatus batch_save_input(void *owner, CvStateWriter *w)
{
    BatchIterator *it = owner;
    if (it->rows.partial_rows > 0)
        return cv_error(CV_FAILED_PRECONDITION,
                        "Batch: cannot save right after an interrupted next(); call next() again "
                        "first");
    return cv_iterator_save(it->staged.input, w);
}

static CvStatus batch_restore_input(void *owner, CvStateReader *r)
{
    return cv_iterator_restore(((BatchIterator *)owner)->staged.input, r);
}

static const CvStageOps batch_stage_ops = {batch_pull, batch_process, NULL, batch_save_input,
                                           batch_restore_input};

static void batch_destroy(CvIterator *base);

static CvStatus batch_make_iterator(const CvDataset *ds, CvIterator **out)
{
    const BatchParams *p = ds->params;
    BatchIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    CvStatus s = cv_iterator_make(ds->inputs[0], &it->staged.input);
    if (!s && p->num_workers > 0) {
        s = cv_stage_init(&it->staged.stage, &batch_stage_ops, it, "ParallelBatch", p->num_workers,
                          p->tune_workers, 2 * p->num_workers, 2 * p->num_workers, p->deterministic);
        if (!s) {
            cv_stage_set_memory(&it->staged.stage, ds->memory,
                                "lower batch's batch_size or num_parallel_calls");
            if (p->tune_workers)
                cv_stage_allow_inline(&it->staged.stage, &it->staged.base, ds->inputs[0]);
        }
    }
    if (s) {
        batch_destroy(&it->staged.base);
        return s;
    }
    *out = &it->staged.base;
    return CV_STATUS_OK;
}

static CvStatus batch_next(CvIterator *base, CvElement *out, bool *end)
{
    BatchIterator *it = (BatchIterator *)base;
    if (((const BatchParams *)base->dataset->params)->num_workers > 0)
        return cv_stage_next(&it->staged.stage, out, end);
    CvElement bundle = {0};
    int64_t rows = 0;
    CvStatus s = gather(it, &bundle, &rows, end);
    if (s || *end)
        return s;
    return stack(&bundle, rows, out, it->out_alloc);
}

static bool batch_build_outputs_in(CvIterator *base, const CvBufferAllocator *a)
{
    ((BatchIterator *)base)->out_alloc = a;
    return true;
}

static CvStatus batch_try_next(CvIterator *base, CvElement *out, bool *end, bool *would_block)
{
    BatchIterator *it = (BatchIterator *)base;
    if (((const BatchParams *)base->dataset->params)->num_workers > 0)
        return cv_stage_try_next(&it->staged.stage, out, end, would_block);
    *would_block = true; /* sequential: the rows are gathered in next() */
    return CV_STATUS_OK;
}

static void batch_destroy(CvIterator *base)
{
    BatchIterator *it = (BatchIterator *)base;
    /* The stage first: until its turns are done, one may be gathering rows. */
    cv_staged_iterator_cancel(base);
    cv_stage_destroy(&it->staged.stage);
    cv_row_gatherer_clear(&it->rows);
    cv_staged_iterator_destroy(base);
}

/* [batches in flight: none when sequential][input]. */
static CvStatus batch_save(CvIterator *base, CvStateWriter *w)
{
    BatchIterator *it = (BatchIterator *)base;
    if (((const BatchParams *)base->dataset->params)->num_workers > 0)
        return cv_stage_save(&it->staged.stage, w);
    cv_state_put_u64(w, 0);
    return batch_save_input(it, w);
}

static CvStatus batch_restore(CvIterator *base, CvStateReader *r)
{
    BatchIterator *it = (BatchIterator *)base;
    int64_t pending = 0;
    if (((const BatchParams *)base->dataset->params)->num_workers > 0)
        return cv_stage_restore(&it->staged.stage, r);
    CvStatus s = cv_state_get_range(r, "batches in flight", 0, 0, &pending);
    return s ? s : batch_restore_input(it, r);
}

const CvKernel cv_kernel_batch = {
    .name = "Batch",
    .make_iterator = batch_make_iterator,
    .cardinality = batch_cardinality,
    .free_dataset = batch_free,
    .next = batch_next,
    .cancel = cv_staged_iterator_cancel,
    .destroy = batch_destroy,
    .measure = cv_staged_iterator_measure,
    .try_next = batch_try_next,
    .save = batch_save,
    .restore = batch_restore,
    .build_outputs_in = batch_build_outputs_in,
};

CvStatus cv_batch_dataset(CvDataset *input, int64_t batch_size, bool drop_remainder,
                          int64_t num_parallel_calls, bool deterministic, CvDataset **out)
{
    CvStatus s = cv_check_batch_size(batch_size);
    if (s)
        return s;
    int workers = 0;
    bool tune = false;
    s = cv_parallelism(num_parallel_calls, &workers, &tune);
    if (s)
        return s;
    BatchParams *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    p->batch_size = batch_size;
    p->drop_remainder = drop_remainder;
    p->deterministic = deterministic;
    p->num_workers = workers;
    p->tune_workers = tune;
    return cv_dataset_new(&cv_kernel_batch, &input, 1, p, workers > 0, out);
}

CvStatus cv_batch_stack(CvElement *bundle, int64_t rows, CvElement *out, const CvBufferAllocator *a)
{
    return stack(bundle, rows, out, a);
}
