/* window(size, shift, stride, drop_remainder): tf.data's WindowDataset.
 *
 * A buffer holds up to target = (size - 1) * stride + 1 input positions,
 * each an element or the error the input returned there. A window is the
 * buffer's positions 0, stride, 2 * stride, ... packed with
 * kernels/common/packed_rows.h; then the buffer drops its first `shift` positions, or, when shift is
 * larger than the buffer, the whole buffer and the next input positions up
 * to `shift` (their errors ignored). A window that holds an error position
 * fails with that error (and is dropped), as in tf.data. Partial windows
 * come at the end unless drop_remainder.
 *
 * The Python layer turns each packed window into a structure of datasets.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/common/packed_rows.h"
#include "kernels/kernels.h"

typedef struct {
    int64_t size, shift, stride, target;
    bool drop_remainder;
    uint32_t ncomp;
    bool *ragged; /* [ncomp] */
} WindowParams;

typedef struct {
    CvStatus status; /* the input's error at this position, or OK */
    CvElement element;
} WindowSlot;

typedef struct {
    CvUnaryIterator base;
    WindowSlot *ring; /* logical slot i at ring[(start + i) % capacity] */
    int64_t capacity, start, count;
    int64_t pending_skip; /* input positions still to discard for the last shift */
    bool input_done;
} WindowIterator;

static void window_free(CvDataset *ds)
{
    WindowParams *p = ds->params;
    free(p->ragged);
    free(p);
}

static int64_t window_cardinality(const CvDataset *ds)
{
    const WindowParams *p = ds->params;
    int64_t n = cv_dataset_cardinality(ds->inputs[0]);
    if (n < 0)
        return n;
    if (p->drop_remainder)
        return n < p->target ? 0 : (n - p->target) / p->shift + 1;
    return n / p->shift + (n % p->shift != 0);
}

static CvStatus window_make_iterator(const CvDataset *ds, CvIterator **out)
{
    return cv_unary_iterator_new(ds, sizeof(WindowIterator), out);
}

static WindowSlot *slot(WindowIterator *it, int64_t i)
{
    return &it->ring[(it->start + i) % it->capacity];
}

static CvStatus push(WindowIterator *it, int64_t target, CvStatus status, CvElement *e)
{
    if (it->count == it->capacity) {
        int64_t grown = it->capacity ? it->capacity * 2 : 8;
        if (grown > target)
            grown = target;
        WindowSlot *ring = malloc((size_t)grown * sizeof(*ring));
        if (!ring)
            return cv_error(CV_RESOURCE_EXHAUSTED, "Window: out of memory growing the buffer to "
                            "%lld elements", (long long)grown);
        for (int64_t i = 0; i < it->count; i++)
            ring[i] = *slot(it, i);
        free(it->ring);
        it->ring = ring;
        it->capacity = grown;
        it->start = 0;
    }
    WindowSlot *sl = &it->ring[(it->start + it->count) % it->capacity];
    sl->status = status;
    cv_element_move(&sl->element, e);
    it->count++;
    return CV_STATUS_OK;
}

static void drop_front(WindowIterator *it, int64_t k)
{
    for (int64_t i = 0; i < k; i++) {
        WindowSlot *sl = slot(it, i);
        cv_status_free(sl->status);
        cv_element_clear(&sl->element);
    }
    it->start = it->count == k ? 0 : (it->start + k) % it->capacity;
    it->count -= k;
}

static bool interruption(CvStatus s)
{
    return s && (s->code == CV_INTERRUPTED || s->code == CV_CANCELLED);
}


static CvStatus window_next(CvIterator *base, CvElement *out, bool *end)
{
    WindowIterator *it = (WindowIterator *)base;
    const WindowParams *p = base->dataset->params;
    CvIterator *input = it->base.input;
    /* The rest of the previous shift. */
    while (it->pending_skip > 0 && !it->input_done) {
        CvElement e = {0};
        bool input_end = false;
        CvStatus s = cv_iterator_next(input, &e, &input_end);
        if (interruption(s))
            return s;
        cv_status_free(s);
        cv_element_clear(&e);
        if (input_end && !s)
            it->input_done = true;
        else
            it->pending_skip--;
    }
    while (!it->input_done && it->count < p->target) {
        CvElement e = {0};
        bool input_end = false;
        CvStatus s = cv_iterator_next(input, &e, &input_end);
        if (interruption(s))
            return s; /* the buffer is intact; the next call goes on filling */
        if (!s && input_end) {
            it->input_done = true;
            break;
        }
        CvStatus pushed = push(it, p->target, s, &e);
        if (pushed) {
            cv_status_free(s);
            cv_element_clear(&e);
            return pushed;
        }
    }
    if (it->count == 0 || (p->drop_remainder && it->count < p->target)) {
        *end = true;
        return CV_STATUS_OK;
    }
    int64_t n = 1 + (it->count - 1) / p->stride;
    CvStatus s = CV_STATUS_OK;
    CvElement **rows = malloc((size_t)n * sizeof(*rows));
    if (!rows)
        return cv_error_nomem();
    for (int64_t i = 0; i < n && !s; i++) {
        WindowSlot *sl = slot(it, i * p->stride);
        if (sl->status) /* later windows holding this position fail with it too */
            s = cv_status_copy(sl->status);
        rows[i] = &sl->element;
    }
    if (!s)
        s = cv_rows_pack(rows, n, p->ncomp, p->ragged, "Window", out);
    free(rows);
    if (p->shift >= it->count) {
        it->pending_skip = it->input_done ? 0 : p->shift - it->count;
        drop_front(it, it->count);
    } else {
        drop_front(it, p->shift);
    }
    if (!s)
        *end = false;
    return s;
}

/* The buffer is input the window has pulled and will hand out again (the
 * overlap of the next windows): it cannot be recomputed without re-reading,
 * so its positions go in the state by value, an error position as its
 * code and message (a Python exception comes back as a conveyor error of
 * the same code). Then the shift still to discard, and the input. */
static CvStatus window_save(CvIterator *base, CvStateWriter *w)
{
    WindowIterator *it = (WindowIterator *)base;
    cv_state_put_i64(w, it->input_done);
    cv_state_put_i64(w, it->pending_skip);
    cv_state_put_i64(w, it->count);
    for (int64_t i = 0; i < it->count; i++) {
        const WindowSlot *sl = slot(it, i);
        cv_state_put_i64(w, sl->status ? sl->status->code : CV_OK);
        if (sl->status)
            cv_state_put_bytes(w, sl->status->message, strlen(sl->status->message));
        cv_state_put_element(w, &sl->element);
    }
    return cv_iterator_save(it->base.input, w);
}

static CvStatus window_restore(CvIterator *base, CvStateReader *r)
{
    WindowIterator *it = (WindowIterator *)base;
    const WindowParams *p = base->dataset->params;
    int64_t count = 0;
    CvStatus s = cv_state_get_bool(r, &it->input_done);
    if (!s)
        s = cv_state_get_range(r, "window shift left", 0, p->shift, &it->pending_skip);
    if (!s)
        s = cv_state_get_range(r, "window buffer", 0, p->target, &count);
    for (int64_t i = 0; i < count && !s; i++) {
        int64_t code = 0;
        const void *message = NULL;
        size_t len = 0;
        CvElement e = {0};
        CvStatus error = CV_STATUS_OK;
        s = cv_state_get_range(r, "an error code", CV_OK, CV_UNAUTHENTICATED, &code);
        if (!s && code != CV_OK && !(s = cv_state_get_bytes(r, &message, &len)))
            error = cv_error((CvCode)code, "%.*s", len > INT32_MAX ? INT32_MAX : (int)len,
                             (const char *)message);
        if (!s)
            s = cv_state_get_element(r, &e);
        if (!s)
            s = push(it, p->target, error, &e);
        if (s) {
            cv_status_free(error);
            cv_element_clear(&e);
        }
    }
    if (!s)
        s = cv_iterator_restore(it->base.input, r);
    if (s)
        drop_front(it, it->count);
    return s;
}

static void window_destroy(CvIterator *base)
{
    WindowIterator *it = (WindowIterator *)base;
    drop_front(it, it->count);
    free(it->ring);
    cv_unary_iterator_destroy(base);
}

const CvKernel cv_kernel_window = {
    .name = "Window",
    .make_iterator = window_make_iterator,
    .cardinality = window_cardinality,
    .free_dataset = window_free,
    .next = window_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = window_destroy,
    .save = window_save,
    .restore = window_restore,
};

CvStatus cv_window_dataset(CvDataset *input, int64_t size, int64_t shift, int64_t stride,
                           bool drop_remainder, const bool *ragged, uint32_t ncomp, CvDataset **out)
{
    if (size <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "Window size must be greater than zero.");
    if (shift <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "Window shift must be greater than zero.");
    if (stride <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "Window stride must be greater than zero.");
    if (size - 1 > (INT64_MAX - 1) / stride)
        return cv_error(CV_INVALID_ARGUMENT, "Window target buffer size overflow: (window_size=%lld "
                        "- 1) * window_stride=%lld + 1 is not representable.", (long long)size,
                        (long long)stride);
    WindowParams *p = calloc(1, sizeof(*p));
    bool *mask = malloc((ncomp ? ncomp : 1) * sizeof(bool));
    if (!p || !mask) {
        free(p);
        free(mask);
        return cv_error_nomem();
    }
    if (ncomp)
        memcpy(mask, ragged, ncomp * sizeof(bool));
    p->size = size;
    p->shift = shift;
    p->stride = stride;
    p->target = (size - 1) * stride + 1;
    p->drop_remainder = drop_remainder;
    p->ncomp = ncomp;
    p->ragged = mask;
    return cv_dataset_new(&cv_kernel_window, &input, 1, p, false, out);
}
