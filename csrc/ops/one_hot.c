/* OneHot(indices): a one-hot tensor (tf.one_hot).
 *
 * ints: [dtype, depth, axis (resolved, 0..rank), on, off]; floats: [on,
 * off]. Integer and bool outputs take on/off from ints, floating ones from
 * floats. Indices (int32/int64/uint8) outside [0, depth) give an all-off row,
 * as in TensorFlow. Output shape: indices' shape with depth inserted at axis. */
#include <string.h>

#include "ops/numeric.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { ONE_HOT_DTYPE, ONE_HOT_DEPTH, ONE_HOT_AXIS, ONE_HOT_ON_INT, ONE_HOT_OFF_INT,
    ONE_HOT_NUM_INTS };
static const char *const one_hot_int_attrs[] = {"dtype", "depth", "axis", "on_int", "off_int",
    NULL};
CV_ATTR_NAMES_MATCH(one_hot_int_attrs, ONE_HOT_NUM_INTS);
enum { ONE_HOT_ON_VALUE, ONE_HOT_OFF_VALUE, ONE_HOT_NUM_FLOATS };
static const char *const one_hot_float_attrs[] = {"on_value", "off_value", NULL};
CV_ATTR_NAMES_MATCH(one_hot_float_attrs, ONE_HOT_NUM_FLOATS);

static int64_t index_at(const CvTensor *t, int64_t i)
{
    switch (t->dtype) {
    case CV_UINT8: return ((const uint8_t *)t->data)[i];
    case CV_INT32: return ((const int32_t *)t->data)[i];
    default: return ((const int64_t *)t->data)[i];
    }
}

static void store(CvDtype dtype, char *p, int64_t i, int64_t iv, double fv)
{
    switch (dtype) {
    case CV_BOOL: ((uint8_t *)p)[i] = iv != 0; break;
    case CV_INT8: ((int8_t *)p)[i] = (int8_t)iv; break;
    case CV_INT16: ((int16_t *)p)[i] = (int16_t)iv; break;
    case CV_INT32: ((int32_t *)p)[i] = (int32_t)iv; break;
    case CV_INT64: ((int64_t *)p)[i] = iv; break;
    case CV_UINT8: ((uint8_t *)p)[i] = (uint8_t)iv; break;
    case CV_UINT16: ((uint16_t *)p)[i] = (uint16_t)iv; break;
    case CV_UINT32: ((uint32_t *)p)[i] = (uint32_t)iv; break;
    case CV_UINT64: ((uint64_t *)p)[i] = (uint64_t)iv; break;
    case CV_FLOAT16: ((cv_half *)p)[i] = cv_float_to_half((float)fv); break;
    case CV_BFLOAT16: ((cv_bfloat16 *)p)[i] = cv_float_to_bfloat16((float)fv); break;
    case CV_FLOAT32: ((float *)p)[i] = (float)fv; break;
    default: ((double *)p)[i] = fv; break;
    }
}

static CvStatus one_hot_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                            int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *idx = &in[0];
    if (attrs->num_ints != ONE_HOT_NUM_INTS || attrs->num_floats != ONE_HOT_NUM_FLOATS)
        return cv_error(CV_INVALID_ARGUMENT, "OneHot: malformed attributes");
    CvDtype dtype = (CvDtype)attrs->ints[ONE_HOT_DTYPE];
    int64_t depth = attrs->ints[ONE_HOT_DEPTH], axis = attrs->ints[ONE_HOT_AXIS];
    if (depth < 0)
        return cv_error(CV_INVALID_ARGUMENT, "depth must be non-negative, got: %lld",
                        (long long)depth);
    if (axis < 0 || axis > idx->rank || idx->rank + 1 > CV_MAX_RANK || dtype == CV_STRING ||
        dtype >= CV_NUM_DTYPES ||
        (idx->dtype != CV_UINT8 && idx->dtype != CV_INT32 && idx->dtype != CV_INT64))
        return cv_error(CV_INVALID_ARGUMENT, "OneHot: bad axis, dtype or indices");
    int64_t shape[CV_MAX_RANK], outer = 1, inner = 1;
    for (int i = 0, j = 0; i <= idx->rank; i++) {
        if (i == axis) {
            shape[i] = depth;
            continue;
        }
        shape[i] = idx->shape[j];
        if (i < axis)
            outer *= idx->shape[j];
        else
            inner *= idx->shape[j];
        j++;
    }
    CvStatus s = cv_tensor_alloc(&out[0], dtype, idx->rank + 1, shape, 0, NULL);
    if (s)
        return s;
    char *p = out[0].data;
    int64_t total = outer * depth * inner;
    for (int64_t i = 0; i < total; i++)
        store(dtype, p, i, attrs->ints[ONE_HOT_OFF_INT], attrs->floats[ONE_HOT_OFF_VALUE]);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t k = 0; k < inner; k++) {
            int64_t d = index_at(idx, o * inner + k);
            if (d >= 0 && d < depth)
                store(dtype, p, (o * depth + d) * inner + k, attrs->ints[ONE_HOT_ON_INT],
                      attrs->floats[ONE_HOT_ON_VALUE]);
        }
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_one_hot = {.name = "OneHot", .min_inputs = 1, .max_inputs = 1, .run = one_hot_run,
    .int_attrs = one_hot_int_attrs, .float_attrs = one_hot_float_attrs};
