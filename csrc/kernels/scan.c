/* scan(initial_state, scan_func): a stateful map. For each input element,
 * scan_func(state, element) returns (new_state, output); the dataset yields
 * the outputs and carries the state to the next element, as tf.data's
 * ScanDataset. Sequential: the function runs on the thread that calls next().
 *
 * The function sees one flat element: the state's num_state tensors, then
 * the input's; its result is the new state's num_state tensors, then the
 * output's (the Python layer traced or checks that structure). An error
 * from the input or the function is delivered at that element; the state
 * is then unchanged and the next call goes on with the next element.
 */
#include <stdlib.h>

#include "kernels/common/element_calls.h"
#include "kernels/kernels.h"

typedef struct {
    CvFunction fn;
    CvElement initial; /* owned, read-only: each iterator starts from a reference to it */
    atomic_uint_least64_t epochs;
} ScanParams;

typedef struct {
    CvUnaryIterator base;
    uint64_t epoch;
    uint64_t index;  /* position of the next input element */
    CvElement state; /* owned */
} ScanIterator;

static void scan_free(CvDataset *ds)
{
    ScanParams *p = ds->params;
    if (p->fn.release)
        p->fn.release(p->fn.ctx);
    cv_element_clear(&p->initial);
    free(p);
}

static int scan_traverse(const CvDataset *ds, CvVisit visit, void *arg)
{
    return cv_function_traverse(&((const ScanParams *)ds->params)->fn, visit, arg);
}

static int64_t scan_cardinality(const CvDataset *ds)
{
    return cv_dataset_cardinality(ds->inputs[0]);
}

/* *dst = new references to the tensors of src (dst empty). */
static CvStatus element_copy_refs(CvElement *dst, const CvElement *src)
{
    CvStatus s = cv_element_init(dst, src->n);
    for (uint32_t i = 0; !s && i < src->n; i++)
        cv_tensor_copy_ref(&dst->t[i], &src->t[i]);
    return s;
}

static void scan_destroy(CvIterator *base)
{
    cv_element_clear(&((ScanIterator *)base)->state);
    cv_unary_iterator_destroy(base);
}

static CvStatus scan_make_iterator(const CvDataset *ds, CvIterator **out)
{
    ScanParams *p = ds->params;
    CvStatus s = cv_unary_iterator_new(ds, sizeof(ScanIterator), out);
    if (s)
        return s;
    ScanIterator *it = (ScanIterator *)*out;
    it->epoch = atomic_fetch_add(&p->epochs, 1);
    s = element_copy_refs(&it->state, &p->initial);
    if (s) {
        scan_destroy(*out);
        *out = NULL;
    }
    return s;
}

static CvStatus scan_next(CvIterator *base, CvElement *out, bool *end)
{
    ScanIterator *it = (ScanIterator *)base;
    const ScanParams *p = base->dataset->params;
    uint32_t num_state = it->state.n;
    CvElement in = {0}, args = {0}, result = {0};
    CvStatus s = cv_iterator_next(it->base.input, &in, end);
    if (s || *end)
        return s;
    CvElementId id = {it->epoch, it->index++};
    if ((s = cv_element_init(&args, num_state + in.n)))
        goto done;
    for (uint32_t i = 0; i < num_state; i++)
        cv_tensor_copy_ref(&args.t[i], &it->state.t[i]);
    for (uint32_t i = 0; i < in.n; i++)
        cv_tensor_copy_ref(&args.t[num_state + i], &in.t[i]);
    if ((s = p->fn.call(p->fn.ctx, &args, &id, &result)))
        goto done;
    if (result.n < num_state) {
        s = cv_error(CV_INVALID_ARGUMENT,
                     "Dataset.scan: scan_func returned %u component(s); the state alone has %u.",
                     result.n, num_state);
        goto done;
    }
    if ((s = cv_element_init(out, result.n - num_state)))
        goto done;
    for (uint32_t i = 0; i < num_state; i++) {
        cv_tensor_clear(&it->state.t[i]);
        it->state.t[i] = result.t[i];
    }
    for (uint32_t i = num_state; i < result.n; i++)
        out->t[i - num_state] = result.t[i];
    cv_element_free_array(&result); /* its tensors were moved */
done:
    cv_element_clear(&result);
    cv_element_clear(&args);
    cv_element_clear(&in);
    return s;
}

/* The element ids and the state (by value), then the input's position. */
static CvStatus scan_save(CvIterator *base, CvStateWriter *w)
{
    ScanIterator *it = (ScanIterator *)base;
    cv_state_put_u64(w, it->epoch);
    cv_state_put_u64(w, it->index);
    cv_state_put_element(w, &it->state);
    return cv_iterator_save(it->base.input, w);
}

static CvStatus scan_restore(CvIterator *base, CvStateReader *r)
{
    ScanIterator *it = (ScanIterator *)base;
    ScanParams *p = base->dataset->params;
    int64_t epoch = 0, index = 0;
    CvElement state = {0};
    CvStatus s = cv_state_get_range(r, "scan epoch", 0, INT64_MAX - 1, &epoch);
    if (!s)
        s = cv_state_get_range(r, "scan index", 0, INT64_MAX, &index);
    if (!s)
        s = cv_state_get_element(r, &state);
    if (!s && state.n != p->initial.n)
        s = cv_error(CV_DATA_LOSS, "scan state: %u component(s) saved, %u expected", state.n,
                     p->initial.n);
    if (!s)
        s = cv_iterator_restore(it->base.input, r);
    if (s) {
        cv_element_clear(&state);
        return s;
    }
    it->epoch = (uint64_t)epoch;
    it->index = (uint64_t)index;
    cv_element_clear(&it->state);
    cv_element_move(&it->state, &state);
    cv_epochs_note_restored(&p->epochs, (uint64_t)epoch);
    return CV_STATUS_OK;
}

const CvKernel cv_kernel_scan = {
    .name = "Scan",
    .make_iterator = scan_make_iterator,
    .cardinality = scan_cardinality,
    .free_dataset = scan_free,
    .next = scan_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = scan_destroy,
    .traverse = scan_traverse,
    .save = scan_save,
    .restore = scan_restore,
};

CvStatus cv_scan_dataset(CvDataset *input, CvElement *initial_state, CvFunction fn,
                         CvDataset **out)
{
    ScanParams *p = calloc(1, sizeof(*p));
    if (!p) {
        if (fn.release)
            fn.release(fn.ctx);
        cv_element_clear(initial_state);
        return cv_error_nomem();
    }
    p->fn = fn;
    cv_element_move(&p->initial, initial_state);
    atomic_init(&p->epochs, 0);
    return cv_dataset_new(&cv_kernel_scan, &input, 1, p, false, out);
}
