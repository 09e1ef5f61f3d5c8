/* PerImageStandardization(image): tf.image.per_image_standardization.
 *
 * Each image (the last 3 dims) is cast to float32, then
 * (x - mean) / max(stddev, 1 / sqrt(N)), N its number of values. Sums run
 * in float32 over short blocks and in double across them, so results may
 * differ from TensorFlow's float32 reductions in the last bits (see
 * docs/differences.md). Output float32.
 */
#include <math.h>

#include "ops/image.h"
#include "ops/image_convert.h"
#include "ops/op.h"

#define BLOCK 64

static CvStatus standardize_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)attrs;
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *v = &in[0];
    if (v->dtype == CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "per_image_standardization of strings");
    CvStatus s = cv_image_check(v, CV_MAX_RANK);
    if (s)
        return s;
    s = cv_tensor_alloc(&out[0], CV_FLOAT32, v->rank, v->shape, 0, NULL);
    if (s)
        return s;
    int64_t total = cv_tensor_num_elements(v);
    int64_t n = v->shape[v->rank - 3] * v->shape[v->rank - 2] * v->shape[v->rank - 1];
    float *dst = (float *)out[0].data;
    /* tf.cast to float32 (bool: 0 or 1); the integer scale is 1. */
    if (v->dtype == CV_BOOL) {
        for (int64_t i = 0; i < total; i++)
            dst[i] = ((const uint8_t *)v->data)[i] ? 1.0f : 0.0f;
    } else {
        cv_image_to_f32(v->dtype, v->data, total, dst, 1.0f);
    }
    float min_stddev = 1.0f / sqrtf((float)n);
    for (float *x = dst; x < dst + total; x += n) {
        double sum = 0, squares = 0;
        for (int64_t b = 0; b < n; b += BLOCK) { /* float32 partial sums, vectorized */
            float part = 0;
            for (int64_t i = b; i < n && i < b + BLOCK; i++)
                part += x[i];
            sum += part;
        }
        float mean = (float)(sum / (double)n);
        for (int64_t b = 0; b < n; b += BLOCK) {
            float part = 0;
            for (int64_t i = b; i < n && i < b + BLOCK; i++)
                part += (x[i] - mean) * (x[i] - mean);
            squares += part;
        }
        float stddev = (float)sqrt(squares / (double)n);
        float adjusted = stddev > min_stddev ? stddev : min_stddev;
        for (int64_t i = 0; i < n; i++)
            x[i] = (x[i] - mean) / adjusted;
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_standardize = {
    .name = "PerImageStandardization", .min_inputs = 1, .max_inputs = 1, .run = standardize_run};
