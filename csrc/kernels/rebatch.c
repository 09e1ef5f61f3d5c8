/* rebatch(batch_sizes, drop_remainder): the rows of the input batches,
 * regrouped into batches of batch_sizes[0], batch_sizes[1], ... (cycled):
 * unbatch().batch(n) with one copy, as tf.data's RebatchDatasetV2.
 *
 * A batch that comes from a single input batch shares its memory; one that
 * spans several is copied once. An input error is returned at once and the
 * rows gathered for that batch are dropped (its size is tried again); an
 * input whose components are scalars or disagree on the first dimension is
 * an InvalidArgumentError and is skipped. Rows of different shapes in one
 * output batch are a FailedPreconditionError, as in tf.data. A size of 0
 * gives an empty batch (from `empty`, the element spec's zero-row shapes)
 * without reading the input.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/common/batch_rows.h"
#include "kernels/kernels.h"

typedef struct {
    int64_t *sizes;
    int64_t num_sizes;
    bool drop_remainder;
    CvElement empty; /* one zero-row tensor per component */
} RebatchParams;

/* A run of rows [start, start + count) of one input batch. */
typedef struct {
    CvElement src; /* references to the input batch's tensors */
    int64_t start, count;
} RowRun;

typedef struct {
    CvUnaryIterator base;
    bool input_done;
    CvElement current; /* the input batch being consumed */
    int64_t offset;    /* next row of `current`; -1: none */
    int64_t size_index;
    /* The batch being built (kept across an interrupted next()). */
    RowRun *runs;
    int num_runs, cap_runs;
    int64_t rows;
} RebatchIterator;

static void rebatch_free(CvDataset *ds)
{
    RebatchParams *p = ds->params;
    free(p->sizes);
    cv_element_clear(&p->empty);
    free(p);
}

static int64_t rebatch_cardinality(const CvDataset *ds)
{
    (void)ds;
    return CV_UNKNOWN_CARDINALITY; /* as tf.data reports */
}

static CvStatus rebatch_make_iterator(const CvDataset *ds, CvIterator **out)
{
    CvStatus s = cv_unary_iterator_new(ds, sizeof(RebatchIterator), out);
    if (!s)
        ((RebatchIterator *)*out)->offset = -1;
    return s;
}

static void drop_runs(RebatchIterator *it)
{
    for (int i = 0; i < it->num_runs; i++)
        cv_element_clear(&it->runs[i].src);
    it->num_runs = 0;
    it->rows = 0;
}

static CvStatus check_batch(const CvElement *e)
{
    for (uint32_t c = 0; c < e->n; c++) {
        if (e->t[c].rank == 0)
            return cv_error(CV_INVALID_ARGUMENT, "rebatch: Input element must have a non-scalar "
                            "value in each component (component %u is a scalar).", c);
        if (e->t[c].shape[0] != e->t[0].shape[0])
            return cv_error(CV_INVALID_ARGUMENT,
                            "rebatch: Input element must have the same batch size in each "
                            "component. Component 0 had size %lld but component %u had size %lld.",
                            (long long)e->t[0].shape[0], c, (long long)e->t[c].shape[0]);
    }
    return CV_STATUS_OK;
}

static CvStatus add_run(RebatchIterator *it, int64_t count)
{
    if (it->num_runs == it->cap_runs) {
        int cap = it->cap_runs ? 2 * it->cap_runs : 4;
        RowRun *grown = realloc(it->runs, (size_t)cap * sizeof(RowRun));
        if (!grown)
            return cv_error_nomem();
        it->runs = grown;
        it->cap_runs = cap;
    }
    RowRun *run = &it->runs[it->num_runs];
    CvStatus s = cv_element_init(&run->src, it->current.n);
    if (s)
        return s;
    for (uint32_t c = 0; c < it->current.n; c++)
        cv_tensor_copy_ref(&run->src.t[c], &it->current.t[c]);
    run->start = it->offset;
    run->count = count;
    it->num_runs++;
    it->rows += count;
    return CV_STATUS_OK;
}

/* Pull rows until `want` are gathered or the input ends. */
static CvStatus gather(RebatchIterator *it, int64_t want)
{
    while (it->rows < want) {
        if (it->offset == -1) {
            bool end = false;
            cv_element_clear(&it->current);
            CvStatus s = cv_iterator_next(it->base.input, &it->current, &end);
            if (!s && !end)
                s = check_batch(&it->current);
            if (s)
                return s;
            if (end) {
                it->input_done = true;
                return CV_STATUS_OK;
            }
            it->offset = 0;
        }
        int64_t have = it->current.n ? it->current.t[0].shape[0] : 0;
        int64_t take = have - it->offset < want - it->rows ? have - it->offset : want - it->rows;
        CvStatus s = add_run(it, take);
        if (s)
            return s;
        it->offset += take;
        if (it->offset == have)
            it->offset = -1;
    }
    return CV_STATUS_OK;
}

/* Copy the runs into one batch of it->rows rows. */
static CvStatus concat(RebatchIterator *it, CvElement *out)
{
    char a[96], b[96];
    const CvElement *first = &it->runs[0].src;
    CvStatus s = CV_STATUS_OK;
    for (int i = 1; i < it->num_runs && !s; i++)
        if (it->runs[i].src.n != first->n)
            s = cv_error(CV_INVALID_ARGUMENT, "rebatch: input elements have %u and %u components",
                         first->n, it->runs[i].src.n);
    if (!s)
        s = cv_element_init(out, first->n);
    for (uint32_t c = 0; c < first->n && !s; c++) {
        const CvTensor *f = &first->t[c];
        size_t blob_bytes = 0;
        for (int i = 0; i < it->num_runs && !s; i++) {
            const CvTensor *t = &it->runs[i].src.t[c];
            if (t->dtype != f->dtype || t->rank != f->rank ||
                memcmp(t->shape + 1, f->shape + 1, (size_t)(f->rank - 1) * sizeof(int64_t)))
                s = cv_error(CV_FAILED_PRECONDITION,
                             "rebatch: cannot put rows of shape %s and %s (%s and %s) in one batch "
                             "of component %u.",
                             cv_shape_str(f->shape + 1, f->rank - 1, a, sizeof(a)),
                             cv_shape_str(t->shape + 1, t->rank - 1, b, sizeof(b)),
                             cv_dtype_name(f->dtype), cv_dtype_name(t->dtype), c);
            CvTensor rows;
            cv_tensor_rows(&rows, t, it->runs[i].start, it->runs[i].count);
            blob_bytes += cv_string_bytes(&rows);
            cv_tensor_clear(&rows);
        }
        int64_t shape[CV_MAX_RANK];
        memcpy(shape, f->shape, (size_t)f->rank * sizeof(int64_t));
        shape[0] = it->rows;
        char *blob = NULL;
        if (!s)
            s = cv_tensor_alloc(&out->t[c], f->dtype, f->rank, shape, blob_bytes, &blob);
        int64_t per_row = 1, at = 0;
        for (int d = 1; d < f->rank; d++)
            per_row *= f->shape[d];
        for (int i = 0; i < it->num_runs && !s; i++) {
            const RowRun *run = &it->runs[i];
            cv_copy_values(&out->t[c], at, &run->src.t[c], run->start * per_row,
                           run->count * per_row, &blob);
            at += run->count * per_row;
        }
    }
    if (s)
        cv_element_clear(out);
    return s;
}

static CvStatus rebatch_next(CvIterator *base, CvElement *out, bool *end)
{
    RebatchIterator *it = (RebatchIterator *)base;
    const RebatchParams *p = base->dataset->params;
    *end = false;
    if (it->input_done) {
        *end = true;
        return CV_STATUS_OK;
    }
    int64_t want = p->sizes[it->size_index];
    CvStatus s = gather(it, want);
    if (s && s->code == CV_INTERRUPTED)
        return s; /* keep the rows: the batch resumes */
    if (s) {
        drop_runs(it);
        return s;
    }
    it->size_index = (it->size_index + 1) % p->num_sizes;
    if ((it->rows == 0 && want > 0) || (p->drop_remainder && it->rows < want)) {
        drop_runs(it);
        *end = true;
        return CV_STATUS_OK;
    }
    if (want == 0) {
        s = cv_element_init(out, p->empty.n);
        for (uint32_t c = 0; c < p->empty.n && !s; c++)
            cv_tensor_copy_ref(&out->t[c], &p->empty.t[c]);
    } else if (it->num_runs == 1) {
        const RowRun *run = &it->runs[0];
        s = cv_element_init(out, run->src.n);
        for (uint32_t c = 0; c < run->src.n && !s; c++)
            cv_tensor_rows(&out->t[c], &run->src.t[c], run->start, run->count);
    } else {
        s = concat(it, out);
    }
    drop_runs(it);
    return s;
}

/* Rows [start, start + count) of every component of e, by value. */
static CvStatus put_rows(CvStateWriter *w, const CvElement *e, int64_t start, int64_t count)
{
    CvElement rows = {0};
    CvStatus s = cv_element_init(&rows, e->n);
    if (s)
        return s;
    for (uint32_t c = 0; c < e->n; c++)
        cv_tensor_rows(&rows.t[c], &e->t[c], start, count);
    cv_state_put_i64(w, count);
    cv_state_put_element(w, &rows);
    cv_element_clear(&rows);
    return CV_STATUS_OK;
}

/* Rows saved by put_rows: *count of them, starting at row 0 of *e. */
static CvStatus get_rows(CvStateReader *r, CvElement *e, int64_t *count)
{
    CvStatus s = cv_state_get_range(r, "rebatch rows", 0, INT64_MAX, count);
    if (!s)
        s = cv_state_get_element(r, e);
    if (s)
        return s;
    s = check_batch(e);
    if (s || (e->n && e->t[0].shape[0] != *count)) {
        cv_status_free(s);
        cv_element_clear(e);
        return cv_state_corrupt("rebatch: saved rows are not a batch");
    }
    return CV_STATUS_OK;
}

/* The input has moved past the rows pulled but not yet returned, so the
 * state keeps them by value: the rest of the input batch being consumed
 * and, after an interrupted next(), the rows gathered for the batch being
 * built. Then the size cycle's place and the input's position. */
static CvStatus rebatch_save(CvIterator *base, CvStateWriter *w)
{
    RebatchIterator *it = (RebatchIterator *)base;
    cv_state_put_i64(w, it->input_done);
    cv_state_put_i64(w, it->size_index);
    cv_state_put_i64(w, it->offset != -1);
    CvStatus s = CV_STATUS_OK;
    if (it->offset != -1)
        s = put_rows(w, &it->current, it->offset,
                     (it->current.n ? it->current.t[0].shape[0] : 0) - it->offset);
    cv_state_put_i64(w, it->num_runs);
    for (int i = 0; i < it->num_runs && !s; i++)
        s = put_rows(w, &it->runs[i].src, it->runs[i].start, it->runs[i].count);
    return s ? s : cv_iterator_save(it->base.input, w);
}

static CvStatus rebatch_restore(CvIterator *base, CvStateReader *r)
{
    RebatchIterator *it = (RebatchIterator *)base;
    const RebatchParams *p = base->dataset->params;
    bool has_current = false;
    int64_t num_runs = 0, count = 0;
    CvStatus s = cv_state_get_bool(r, &it->input_done);
    if (!s)
        s = cv_state_get_range(r, "rebatch size index", 0, p->num_sizes - 1, &it->size_index);
    if (!s)
        s = cv_state_get_bool(r, &has_current);
    if (!s && has_current && !(s = get_rows(r, &it->current, &count)))
        it->offset = 0;
    if (!s)
        s = cv_state_get_range(r, "rebatch runs", 0, INT32_MAX, &num_runs);
    for (int64_t i = 0; i < num_runs && !s; i++) {
        CvElement rows = {0};
        if ((s = get_rows(r, &rows, &count)))
            break;
        /* add_run takes its rows from `current`: borrow it for a moment. */
        CvElement saved = it->current;
        int64_t offset = it->offset;
        it->current = rows;
        it->offset = 0;
        s = add_run(it, count);
        it->current = saved;
        it->offset = offset;
        cv_element_clear(&rows);
    }
    if (!s)
        s = cv_iterator_restore(it->base.input, r);
    if (s) {
        drop_runs(it);
        cv_element_clear(&it->current);
        it->offset = -1;
    }
    return s;
}

static void rebatch_destroy(CvIterator *base)
{
    RebatchIterator *it = (RebatchIterator *)base;
    drop_runs(it);
    free(it->runs);
    cv_element_clear(&it->current);
    cv_unary_iterator_destroy(base);
}

const CvKernel cv_kernel_rebatch = {
    .name = "RebatchV2",
    .make_iterator = rebatch_make_iterator,
    .cardinality = rebatch_cardinality,
    .free_dataset = rebatch_free,
    .next = rebatch_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = rebatch_destroy,
    .save = rebatch_save,
    .restore = rebatch_restore,
};

CvStatus cv_rebatch_dataset(CvDataset *input, const int64_t *batch_sizes, int64_t num_sizes,
                            bool drop_remainder, CvElement *empty, CvDataset **out)
{
    CvStatus s = CV_STATUS_OK;
    RebatchParams *p = calloc(1, sizeof(*p));
    if (!p) {
        cv_element_clear(empty);
        return cv_error_nomem();
    }
    cv_element_move(&p->empty, empty);
    if (num_sizes < 1) {
        s = cv_error(CV_INVALID_ARGUMENT, "rebatch: `batch_size` must not be empty.");
        goto error;
    }
    for (int64_t i = 0; i < num_sizes; i++) {
        if (batch_sizes[i] < 0) {
            s = cv_error(CV_INVALID_ARGUMENT, "rebatch: batch sizes must be >= 0, got %lld.",
                         (long long)batch_sizes[i]);
            goto error;
        }
    }
    p->sizes = malloc((size_t)num_sizes * sizeof(int64_t));
    if (!p->sizes) {
        s = cv_error_nomem();
        goto error;
    }
    memcpy(p->sizes, batch_sizes, (size_t)num_sizes * sizeof(int64_t));
    p->num_sizes = num_sizes;
    p->drop_remainder = drop_remainder;
    return cv_dataset_new(&cv_kernel_rebatch, &input, 1, p, false, out);
error:;
    CvDataset unused = {.params = p};
    rebatch_free(&unused);
    return s;
}
