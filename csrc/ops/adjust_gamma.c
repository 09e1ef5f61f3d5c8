/* AdjustGamma(image): gain * image ** gamma on a float32 image
 * (tf.image.adjust_gamma after its conversion to float32).
 *
 * floats: [gamma, gain], float32 values. The power is computed in double
 * and rounded to float32 (correctly rounded in practice); TensorFlow's
 * vectorized float32 pow is within 1 ulp of it, so results may differ from
 * TensorFlow's by 1 ulp (docs/differences.md). The product with gain is a
 * float32 multiplication, as TensorFlow's. Output: a new tensor.
 */
#include <math.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { GAMMA_GAMMA, GAMMA_GAIN, GAMMA_NUM_FLOATS };
static const char *const gamma_float_attrs[] = {"gamma", "gain", NULL};
CV_ATTR_NAMES_MATCH(gamma_float_attrs, GAMMA_NUM_FLOATS);

static CvStatus gamma_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *v = &in[0];
    if (attrs->num_floats != GAMMA_NUM_FLOATS)
        return cv_error(CV_INVALID_ARGUMENT, "AdjustGamma: malformed attributes");
    if (v->dtype != CV_FLOAT32)
        return cv_error(CV_INVALID_ARGUMENT, "AdjustGamma: unsupported dtype %s",
                        cv_dtype_name(v->dtype));
    CvStatus s = cv_tensor_alloc(&out[0], v->dtype, v->rank, v->shape, 0, NULL);
    if (s)
        return s;
    double gamma = (double)(float)attrs->floats[GAMMA_GAMMA];
    float gain = (float)attrs->floats[GAMMA_GAIN];
    int64_t n = cv_tensor_num_elements(v);
    const float *src = (const float *)v->data;
    float *dst = (float *)out[0].data;
    for (int64_t i = 0; i < n; i++)
        dst[i] = gain * (float)pow((double)src[i], gamma);
    return CV_STATUS_OK;
}

const CvOp cv_op_adjust_gamma = {
    .name = "AdjustGamma", .min_inputs = 1, .max_inputs = 1, .run = gamma_run,
    .float_attrs = gamma_float_attrs};
