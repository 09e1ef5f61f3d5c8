/* AdjustBrightness(image[, delta]): tf.image.adjust_brightness.
 *
 * As TensorFlow: float16 and float32 images get delta added in their own
 * dtype (delta rounded to float32, then to float16); other dtypes go
 * through convert_image_dtype to float32, get delta added there, and come
 * back with saturation.
 *
 * floats: [delta, scale_in (1 / max as float32), scale_out (max + 0.5 as
 * float32), lo, hi (the saturation clamp, float32 values)]. A second
 * input, a scalar float, gives delta at run time instead.
 */
#include "ops/image_convert.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { ADJUST_DELTA, ADJUST_SCALE_IN, ADJUST_SCALE_OUT, ADJUST_LO, ADJUST_HI, ADJUST_NUM_FLOATS };
static const char *const adjust_float_attrs[] = {"delta", "scale_in", "scale_out", "lo", "hi",
    NULL};
CV_ATTR_NAMES_MATCH(adjust_float_attrs, ADJUST_NUM_FLOATS);

#define CHUNK 1024

static CvStatus adjust_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_out;
    (void)ctx;
    const CvTensor *v = &in[0];
    if (attrs->num_floats < ADJUST_NUM_FLOATS)
        return cv_error(CV_INVALID_ARGUMENT, "AdjustBrightness: bad attributes");
    double delta = attrs->floats[ADJUST_DELTA];
    if (num_in > 1) {
        const CvTensor *t = &in[1];
        if (cv_tensor_num_elements(t) != 1 || (t->dtype != CV_FLOAT32 && t->dtype != CV_FLOAT64))
            return cv_error(CV_INVALID_ARGUMENT, "delta must be a float scalar");
        delta = t->dtype == CV_FLOAT32 ? *(const float *)t->data : *(const double *)t->data;
    }
    if (v->dtype == CV_STRING || v->dtype == CV_BOOL)
        return cv_error(CV_INVALID_ARGUMENT, "image dtype must be either floating point or integer");
    CvStatus s = cv_tensor_alloc(&out[0], v->dtype, v->rank, v->shape, 0, NULL);
    if (s)
        return s;
    int64_t total = cv_tensor_num_elements(v);
    float d = (float)delta;
    if (v->dtype == CV_FLOAT32) {
        const float *src = (const float *)v->data;
        float *dst = (float *)out[0].data;
        for (int64_t i = 0; i < total; i++)
            dst[i] = src[i] + d;
        return CV_STATUS_OK;
    }
    if (v->dtype == CV_FLOAT16) {
        float dh = cv_half_to_float(cv_float_to_half(d));
        const cv_half *src = (const cv_half *)v->data;
        cv_half *dst = (cv_half *)out[0].data;
        for (int64_t i = 0; i < total; i++)
            dst[i] = cv_float_to_half(cv_half_to_float(src[i]) + dh);
        return CV_STATUS_OK;
    }
    float buf[CHUNK];
    size_t esize = cv_dtype_size(v->dtype);
    for (int64_t start = 0; start < total; start += CHUNK) {
        int64_t n = total - start < CHUNK ? total - start : CHUNK;
        cv_image_to_f32(v->dtype, v->data + (size_t)start * esize, n, buf,
                        (float)attrs->floats[ADJUST_SCALE_IN]);
        for (int64_t i = 0; i < n; i++)
            buf[i] += d;
        cv_image_from_f32(v->dtype, buf, n, out[0].data + (size_t)start * esize,
                          (float)attrs->floats[ADJUST_SCALE_OUT], true,
                          (float)attrs->floats[ADJUST_LO], (float)attrs->floats[ADJUST_HI]);
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_adjust = {
    .name = "AdjustBrightness", .min_inputs = 1, .max_inputs = 2, .run = adjust_run,
    .float_attrs = adjust_float_attrs};
