/* range(start, stop, step): Python range semantics, any numeric dtype. */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

typedef struct {
    int64_t start, stop, step;
    CvDtype dtype;
} RangeParams;

typedef struct {
    CvIterator base;
    int64_t next;
} RangeIterator;

static void range_free(CvDataset *ds)
{
    free(ds->params);
}

static int64_t range_cardinality(const CvDataset *ds)
{
    const RangeParams *p = ds->params;
    uint64_t span, stride;
    if (p->stop == INT64_MAX)
        return CV_INFINITE_CARDINALITY; /* tf.data's rule: enumerate() ranges up to int64 max */
    if (p->step > 0) {
        if (p->stop <= p->start)
            return 0;
        span = (uint64_t)p->stop - (uint64_t)p->start;
        stride = (uint64_t)p->step;
    } else {
        if (p->start <= p->stop)
            return 0;
        span = (uint64_t)p->start - (uint64_t)p->stop;
        stride = 0 - (uint64_t)p->step;
    }
    uint64_t count = (span - 1) / stride + 1;
    return count > (uint64_t)INT64_MAX ? CV_UNKNOWN_CARDINALITY : (int64_t)count;
}

static CvStatus range_make_iterator(const CvDataset *ds, CvIterator **out)
{
    RangeIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    it->next = ((const RangeParams *)ds->params)->start;
    *out = &it->base;
    return CV_STATUS_OK;
}

/* Store v as one value of `dtype` (a numeric dtype other than float16). */
static void store_value(CvDtype dtype, char *dst, int64_t v)
{
    switch (dtype) {
    case CV_INT8: *(int8_t *)dst = (int8_t)v; break;
    case CV_INT16: *(int16_t *)dst = (int16_t)v; break;
    case CV_INT32: *(int32_t *)dst = (int32_t)v; break;
    case CV_UINT8: *(uint8_t *)dst = (uint8_t)v; break;
    case CV_UINT16: *(uint16_t *)dst = (uint16_t)v; break;
    case CV_UINT32: *(uint32_t *)dst = (uint32_t)v; break;
    case CV_UINT64: *(uint64_t *)dst = (uint64_t)v; break;
    case CV_FLOAT32: *(float *)dst = (float)v; break;
    case CV_FLOAT64: *(double *)dst = (double)v; break;
    default: *(int64_t *)dst = v; break;
    }
}

static CvStatus range_next(CvIterator *base, CvElement *out, bool *end)
{
    RangeIterator *it = (RangeIterator *)base;
    const RangeParams *p = base->dataset->params;
    if (p->step > 0 ? it->next >= p->stop : it->next <= p->stop) {
        *end = true;
        return CV_STATUS_OK;
    }
    *end = false;
    CvStatus s = cv_element_init(out, 1);
    if (!s)
        s = cv_tensor_alloc(&out->t[0], p->dtype, 0, NULL, 0, NULL);
    if (s) {
        cv_element_clear(out);
        return s;
    }
    store_value(p->dtype, out->t[0].data, it->next);
    /* Saturate instead of overflowing at the very end of the int64 range. */
    if (__builtin_add_overflow(it->next, p->step, &it->next))
        it->next = p->stop;
    return CV_STATUS_OK;
}

/* The position is the next value: a restored range needs nothing else. */
static CvStatus range_save(CvIterator *base, CvStateWriter *w)
{
    cv_state_put_i64(w, ((RangeIterator *)base)->next);
    return CV_STATUS_OK;
}

/* A value the range reaches: start plus a whole number of steps, at most
 * its count of them (one past its last value: the end), or stop itself. */
static CvStatus range_restore(CvIterator *base, CvStateReader *r)
{
    const RangeParams *p = base->dataset->params;
    int64_t next = 0, count = range_cardinality(base->dataset);
    CvStatus s = cv_state_get_i64(r, &next);
    if (s)
        return s;
    bool forward = p->step > 0;
    uint64_t distance = forward ? (uint64_t)next - (uint64_t)p->start : (uint64_t)p->start - (uint64_t)next;
    uint64_t stride = forward ? (uint64_t)p->step : 0 - (uint64_t)p->step;
    bool ahead = forward ? next >= p->start : next <= p->start;
    bool valid = next == p->stop ||
                 (ahead && distance % stride == 0 && (count < 0 || distance / stride <= (uint64_t)count));
    if (!valid)
        return cv_state_corrupt("Range's next value is not one of its values");
    ((RangeIterator *)base)->next = next;
    return CV_STATUS_OK;
}

static CvStatus range_skip(CvIterator *base, int64_t n, int64_t *skipped)
{
    RangeIterator *it = (RangeIterator *)base;
    const RangeParams *p = base->dataset->params;
    int64_t left = p->step > 0 ? (p->stop - it->next + p->step - 1) / p->step
                               : (it->next - p->stop - p->step - 1) / -p->step;
    if (left < 0)
        left = 0;
    *skipped = n < left ? n : left;
    if (__builtin_mul_overflow(*skipped, p->step, &left) || __builtin_add_overflow(it->next, left, &it->next))
        it->next = p->stop;
    return CV_STATUS_OK;
}

static void range_destroy(CvIterator *it)
{
    cv_iterator_free(it);
}

const CvKernel cv_kernel_range = {
    .name = "Range",
    .make_iterator = range_make_iterator,
    .cardinality = range_cardinality,
    .free_dataset = range_free,
    .next = range_next,
    .destroy = range_destroy,
    .save = range_save,
    .restore = range_restore,
    .skip = range_skip,
};

CvStatus cv_range_dataset(int64_t start, int64_t stop, int64_t step, CvDtype dtype, CvDataset **out)
{
    if (step == 0)
        return cv_error(CV_INVALID_ARGUMENT, "step must be a non-zero integer.");
    if (dtype == CV_STRING || dtype == CV_BOOL || dtype == CV_FLOAT16 || dtype >= CV_NUM_DTYPES)
        return cv_error(CV_INVALID_ARGUMENT, "range: output_type must be an integer or float32/64 "
                        "type, not %s", cv_dtype_name(dtype));
    RangeParams *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = (RangeParams){start, stop, step, dtype};
    return cv_dataset_new(&cv_kernel_range, NULL, 0, p, false, out);
}
