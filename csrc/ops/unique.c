/* Unique(x): tf.unique of a 1-D numeric or bool tensor: y, its distinct
 * values in order of first appearance, and idx, for each value of x its
 * position in y (int32 or int64: ints[0] dtype). Values compare as numbers
 * (-0.0 equals 0.0; every NaN is distinct), as TensorFlow's hash map does.
 * An open-addressing table of positions into x (scratch, freed here). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/numeric.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs). */
enum { UNIQUE_DTYPE, UNIQUE_NUM_INTS };
static const char *const unique_int_attrs[] = {"dtype", NULL};
CV_ATTR_NAMES_MATCH(unique_int_attrs, UNIQUE_NUM_INTS);

/* Value i of x as comparable 64 bits (floats widened to double, -0 as +0);
 * *nan set for NaN, which equals nothing. */
static uint64_t key_of(const CvTensor *x, int64_t i, bool *nan)
{
    double d;
    uint64_t k;
    *nan = false;
    switch (x->dtype) {
    case CV_BOOL: return ((const bool *)x->data)[i];
    case CV_INT8: return (uint64_t)(int64_t)((const int8_t *)x->data)[i];
    case CV_INT16: return (uint64_t)(int64_t)((const int16_t *)x->data)[i];
    case CV_INT32: return (uint64_t)(int64_t)((const int32_t *)x->data)[i];
    case CV_INT64: return (uint64_t)((const int64_t *)x->data)[i];
    case CV_UINT8: return ((const uint8_t *)x->data)[i];
    case CV_UINT16: return ((const uint16_t *)x->data)[i];
    case CV_UINT32: return ((const uint32_t *)x->data)[i];
    case CV_UINT64: return ((const uint64_t *)x->data)[i];
    case CV_FLOAT16: d = cv_half_to_float(((const cv_half *)x->data)[i]); break;
    case CV_FLOAT32: d = ((const float *)x->data)[i]; break;
    default: d = ((const double *)x->data)[i]; break;
    }
    *nan = isnan(d);
    if (d == 0)
        d = 0; /* -0.0 -> +0.0 */
    memcpy(&k, &d, sizeof(k));
    return k;
}

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static CvStatus unique_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)ctx;
    const CvTensor *x = &in[0];
    CvStatus s = CV_STATUS_OK;
    int64_t *slots = NULL, *first = NULL, *where = NULL;
    if (attrs->num_ints != UNIQUE_NUM_INTS || num_out != 2)
        return cv_error(CV_INVALID_ARGUMENT, "Unique: malformed attributes");
    CvDtype dtype = (CvDtype)attrs->ints[UNIQUE_DTYPE];
    if (x->rank != 1)
        return cv_error(CV_INVALID_ARGUMENT, "unique expects a 1D vector, got rank %d", x->rank);
    if (x->dtype == CV_STRING || (dtype != CV_INT32 && dtype != CV_INT64))
        return cv_error(CV_INVALID_ARGUMENT, "Unique: numbers or bool with int32/int64 indices");
    int64_t n = x->shape[0], cap = 16, found = 0;
    while (cap < 2 * n)
        cap *= 2;
    slots = malloc((size_t)cap * sizeof(*slots));
    first = malloc((size_t)(n ? n : 1) * sizeof(*first));
    where = malloc((size_t)(n ? n : 1) * sizeof(*where));
    if (!slots || !first || !where) {
        s = cv_error(CV_RESOURCE_EXHAUSTED, "Unique: %lld values", (long long)n);
        goto done;
    }
    for (int64_t i = 0; i < cap; i++)
        slots[i] = -1;
    for (int64_t i = 0; i < n; i++) {
        bool nan;
        uint64_t k = key_of(x, i, &nan);
        int64_t at = -1;
        if (!nan) {
            for (uint64_t h = mix(k) & (uint64_t)(cap - 1);; h = (h + 1) & (uint64_t)(cap - 1)) {
                if (slots[h] < 0) {
                    slots[h] = found;
                    break;
                }
                bool other_nan;
                if (key_of(x, first[slots[h]], &other_nan) == k) {
                    at = slots[h];
                    break;
                }
            }
        }
        if (at < 0) {
            first[found] = i;
            at = found++;
        }
        where[i] = at;
    }
    size_t item = cv_dtype_size(x->dtype);
    if ((s = cv_tensor_alloc(&out[0], x->dtype, 1, &found, 0, NULL)))
        goto done;
    if ((s = cv_tensor_alloc(&out[1], dtype, 1, &n, 0, NULL))) {
        cv_tensor_clear(&out[0]);
        goto done;
    }
    for (int64_t j = 0; j < found; j++)
        memcpy((char *)out[0].data + (size_t)j * item, (const char *)x->data + (size_t)first[j] * item,
               item);
    for (int64_t i = 0; i < n; i++) {
        if (dtype == CV_INT32)
            ((int32_t *)out[1].data)[i] = (int32_t)where[i];
        else
            ((int64_t *)out[1].data)[i] = where[i];
    }
done:
    free(slots);
    free(first);
    free(where);
    return s;
}

const CvOp cv_op_unique = {.name = "Unique", .min_inputs = 1, .max_inputs = 1, .run = unique_run,
                           .int_attrs = unique_int_attrs};
