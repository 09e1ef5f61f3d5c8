/* AdjustContrastv2(images[, factor]): tf.image.adjust_contrast on float32
 * images of rank >= 3 ([..., height, width, channels]).
 *
 * Per image and channel the mean is computed as TensorFlow's CPU kernel
 * sums: the plane of height * width pixels is folded in halves (the second
 * half added onto the first, an odd middle row of pixels carried) until one
 * pixel is left, then scaled by 1 / (height * width) as float32. Each value
 * becomes (x - mean) * factor + mean, in float32.
 *
 * floats[0]: the factor, unless input 1 (a float scalar) gives it at run
 * time. Scratch memory is the op's own, freed before returning. Subnormal
 * values are flushed to zero, as in TensorFlow's kernels.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/flush_denormals.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { CONTRAST_FACTOR, CONTRAST_NUM_FLOATS };
static const char *const contrast_float_attrs[] = {"factor", NULL};
CV_ATTR_NAMES_MATCH(contrast_float_attrs, CONTRAST_NUM_FLOATS);

static CvStatus contrast_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                             int num_out, CvOpContext *ctx)
{
    (void)num_out;
    (void)ctx;
    const CvTensor *v = &in[0];
    double factor = attrs->num_floats > CONTRAST_FACTOR ? attrs->floats[CONTRAST_FACTOR] : 1.0;
    char text[CV_MAX_RANK * 24];
    float *scratch = NULL;
    if (num_in > 1) {
        const CvTensor *t = &in[1];
        if (cv_tensor_num_elements(t) != 1 || (t->dtype != CV_FLOAT32 && t->dtype != CV_FLOAT64))
            return cv_error(CV_INVALID_ARGUMENT, "contrast_factor must be scalar: %s",
                            cv_shape_str(t->shape, t->rank, text, sizeof(text)));
        factor = t->dtype == CV_FLOAT32 ? *(const float *)t->data : *(const double *)t->data;
    }
    if (v->dtype != CV_FLOAT32)
        return cv_error(CV_INVALID_ARGUMENT, "AdjustContrastv2: unsupported dtype %s",
                        cv_dtype_name(v->dtype));
    if (v->rank < 3)
        return cv_error(CV_INVALID_ARGUMENT, "input must be at least 3-D, got shape%s",
                        cv_shape_str(v->shape, v->rank, text, sizeof(text)));
    CvStatus s = cv_tensor_alloc(&out[0], v->dtype, v->rank, v->shape, 0, NULL);
    if (s)
        return s;
    int64_t channels = v->shape[v->rank - 1];
    int64_t pixels = v->shape[v->rank - 2] * v->shape[v->rank - 3];
    int64_t plane = pixels * channels, total = cv_tensor_num_elements(v);
    if (total == 0)
        return CV_STATUS_OK;
    int64_t batch = total / plane;
    scratch = malloc((size_t)plane * sizeof(float));
    float *mean = malloc((size_t)channels * sizeof(float));
    if (!scratch || !mean) {
        s = cv_error_nomem();
        cv_tensor_clear(&out[0]);
        goto cleanup;
    }
    float f = (float)factor, scale = 1.0f / (float)pixels;
    unsigned mode_saved = cv_flush_denormals_begin(); /* as TensorFlow's kernels */
    for (int64_t b = 0; b < batch; b++) {
        const float *src = (const float *)v->data + b * plane;
        float *dst = (float *)out[0].data + b * plane;
        int64_t remaining = pixels;
        bool first = true;
        do {
            int64_t right = remaining / 2, left = remaining - right;
            if (first) {
                for (int64_t i = 0; i < right * channels; i++)
                    scratch[i] = src[left * channels + i] + src[i];
                if (left > right)
                    memcpy(scratch + right * channels, src + right * channels,
                           (size_t)channels * sizeof(float));
            } else {
                for (int64_t i = 0; i < right * channels; i++)
                    scratch[i] += scratch[left * channels + i];
            }
            remaining = left;
            first = false;
        } while (remaining > 1);
        for (int64_t c = 0; c < channels; c++)
            mean[c] = scratch[c] * scale;
        for (int64_t p = 0; p < pixels; p++)
            for (int64_t c = 0; c < channels; c++)
                dst[p * channels + c] = (src[p * channels + c] - mean[c]) * f + mean[c];
    }
    cv_flush_denormals_end(mode_saved);
cleanup:
    free(scratch);
    free(mean);
    return s;
}

const CvOp cv_op_adjust_contrast = {
    .name = "AdjustContrastv2", .min_inputs = 1, .max_inputs = 2, .run = contrast_run,
    .float_attrs = contrast_float_attrs};
