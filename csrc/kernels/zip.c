/* zip(datasets): element i is the components of element i of every input,
 * in order; it ends with the shortest input.
 *
 * As tf.data's ZipDataset: inputs are pulled in order; an input's end stops
 * the pull there (later inputs are not advanced) and ends the zip for good;
 * an input's error is returned for this element after the remaining inputs
 * have been advanced too, so the inputs stay in step and the zip goes on
 * with the next element. An interrupted or cancelled pull keeps the parts
 * pulled so far and resumes at that input on the next call.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

typedef struct {
    CvIterator base;
    bool done;          /* an input ended: sticky */
    bool saw_end;       /* this element: an input ended after an error */
    int next_input;     /* this element: inputs [0, next_input) were pulled */
    CvStatus error;     /* this element: the first input error, owned */
    CvElement *parts;   /* this element: one element per input */
    CvIterator *inputs[]; /* one per input dataset, owned; fixed for the iterator's life */
} ZipIterator;

static int64_t zip_cardinality(const CvDataset *ds)
{
    int64_t result = CV_INFINITE_CARDINALITY;
    for (int i = 0; i < ds->num_inputs; i++) {
        int64_t n = cv_dataset_cardinality(ds->inputs[i]);
        if (n == CV_UNKNOWN_CARDINALITY)
            return n;
        if (n != CV_INFINITE_CARDINALITY && (result == CV_INFINITE_CARDINALITY || n < result))
            result = n;
    }
    return result;
}

static void zip_reset(ZipIterator *it)
{
    for (int i = 0; i < it->base.dataset->num_inputs; i++)
        cv_element_clear(&it->parts[i]);
    it->next_input = 0;
    it->saw_end = false;
}

static void zip_destroy(CvIterator *base)
{
    ZipIterator *it = (ZipIterator *)base;
    if (it->parts)
        zip_reset(it);
    cv_status_free(it->error);
    for (int i = 0; i < base->dataset->num_inputs; i++)
        cv_iterator_destroy(it->inputs[i]);
    free(it->parts);
    cv_iterator_free(base);
}

static CvStatus zip_make_iterator(const CvDataset *ds, CvIterator **out)
{
    int n = ds->num_inputs;
    ZipIterator *it = cv_iterator_alloc(ds, sizeof(*it) + (size_t)n * sizeof(CvIterator *));
    if (!it)
        return cv_error_nomem();
    CvStatus s = CV_STATUS_OK;
    it->parts = calloc((size_t)n, sizeof(CvElement));
    if (!it->parts)
        s = cv_error_nomem();
    for (int i = 0; i < n && !s; i++)
        s = cv_iterator_make(ds->inputs[i], &it->inputs[i]);
    if (s) {
        zip_destroy(&it->base);
        return s;
    }
    *out = &it->base;
    return CV_STATUS_OK;
}

/* Move the parts into one element. */
static CvStatus join(ZipIterator *it, CvElement *out)
{
    int n = it->base.dataset->num_inputs;
    uint32_t total = 0;
    for (int i = 0; i < n; i++)
        total += it->parts[i].n;
    CvStatus s = cv_element_init(out, total);
    if (s)
        return s;
    uint32_t k = 0;
    for (int i = 0; i < n; i++) {
        for (uint32_t c = 0; c < it->parts[i].n; c++)
            out->t[k++] = it->parts[i].t[c];
        cv_element_free_array(&it->parts[i]); /* its tensors were moved */
    }
    return CV_STATUS_OK;
}

static CvStatus zip_next(CvIterator *base, CvElement *out, bool *end)
{
    ZipIterator *it = (ZipIterator *)base;
    int n = base->dataset->num_inputs;
    *end = false;
    if (it->done) {
        *end = true;
        return CV_STATUS_OK;
    }
    for (; it->next_input < n; it->next_input++) {
        int i = it->next_input;
        bool input_end = false;
        CvStatus s = cv_iterator_next(it->inputs[i], &it->parts[i], &input_end);
        if (s && (s->code == CV_INTERRUPTED || s->code == CV_CANCELLED))
            return s; /* not this element's error: resume here */
        if (s) {
            if (it->error)
                cv_status_free(s);
            else
                it->error = s;
            continue; /* advance the other inputs too */
        }
        if (input_end) {
            it->saw_end = true;
            if (!it->error)
                break;
        }
    }
    bool ended = it->saw_end;
    CvStatus s = it->error;
    it->error = NULL;
    if (ended)
        it->done = true;
    if (!s && !ended)
        s = join(it, out);
    zip_reset(it);
    *end = ended && !s;
    return s;
}

static void zip_cancel(CvIterator *base)
{
    ZipIterator *it = (ZipIterator *)base;
    for (int i = 0; i < base->dataset->num_inputs; i++)
        cv_iterator_cancel(it->inputs[i]);
}

/* Between elements: whether it ended, then every input's position. After
 * an interrupted pull the element is half made: the parts pulled so far
 * and the first error (its code and message: a Python exception's type
 * is not kept) go in the state too, as the inputs have moved past them. */
static CvStatus zip_save(CvIterator *base, CvStateWriter *w)
{
    ZipIterator *it = (ZipIterator *)base;
    int n = base->dataset->num_inputs;
    cv_state_put_i64(w, it->done);
    cv_state_put_i64(w, it->next_input);
    cv_state_put_i64(w, it->saw_end);
    cv_state_put_i64(w, it->error != NULL);
    if (it->error) {
        cv_state_put_i64(w, it->error->code);
        cv_state_put_bytes(w, it->error->message, strlen(it->error->message));
    }
    for (int i = 0; i < it->next_input; i++)
        cv_state_put_element(w, &it->parts[i]);
    CvStatus s = CV_STATUS_OK;
    for (int i = 0; i < n && !s; i++)
        s = cv_iterator_save(it->inputs[i], w);
    return s;
}

static CvStatus zip_restore(CvIterator *base, CvStateReader *r)
{
    ZipIterator *it = (ZipIterator *)base;
    int n = base->dataset->num_inputs;
    int64_t next_input = 0, code = 0;
    bool has_error = false;
    const void *message = NULL;
    size_t len = 0;
    CvStatus s = cv_state_get_bool(r, &it->done);
    if (!s)
        s = cv_state_get_range(r, "zip input", 0, n, &next_input);
    if (!s)
        s = cv_state_get_bool(r, &it->saw_end);
    if (!s)
        s = cv_state_get_bool(r, &has_error);
    if (!s && has_error)
        s = cv_state_get_range(r, "an error code", CV_CANCELLED, CV_UNAUTHENTICATED, &code);
    if (!s && has_error)
        s = cv_state_get_bytes(r, &message, &len);
    if (!s && has_error && len > INT32_MAX)
        s = cv_state_corrupt("zip: an error message too long");
    it->next_input = (int)next_input;
    for (int i = 0; i < it->next_input && !s; i++)
        s = cv_state_get_element(r, &it->parts[i]);
    for (int i = 0; i < n && !s; i++)
        s = cv_iterator_restore(it->inputs[i], r);
    if (!s && has_error)
        it->error = cv_error((CvCode)code, "%.*s", (int)len, (const char *)message);
    if (s)
        zip_reset(it);
    return s;
}

const CvKernel cv_kernel_zip = {
    .name = "Zip",
    .make_iterator = zip_make_iterator,
    .cardinality = zip_cardinality,
    .free_dataset = NULL,
    .next = zip_next,
    .cancel = zip_cancel,
    .destroy = zip_destroy,
    .save = zip_save,
    .restore = zip_restore,
};

CvStatus cv_zip_dataset(CvDataset *const *inputs, int num_inputs, CvDataset **out)
{
    if (num_inputs < 1)
        return cv_error(CV_INVALID_ARGUMENT, "zip needs at least one dataset, got %d.", num_inputs);
    return cv_dataset_new(&cv_kernel_zip, inputs, num_inputs, NULL, false, out);
}
