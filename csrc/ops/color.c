/* ImageColor(images): tf.image.rgb_to_grayscale and grayscale_to_rgb.
 *
 * ints[0]: 0 = RGB to grayscale: the last dim (3) becomes 1. As TensorFlow:
 *   convert_image_dtype to float32 (floats[0] = the integer scale 1 / max
 *   as float32), gray = (r * 0.2989 + g * 0.5870) + b * 0.1140 in float32
 *   (the weights rounded to float32, no fused multiply-add), and
 *   convert_image_dtype back (floats[1] = max + 0.5 as float32, no
 *   saturation);
 * 1 = grayscale to RGB: the last dim (1) is repeated 3 times.
 */
#include <string.h>

#include "ops/image_convert.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { COLOR_MODE, COLOR_NUM_INTS };
static const char *const color_int_attrs[] = {"mode", NULL};
CV_ATTR_NAMES_MATCH(color_int_attrs, COLOR_NUM_INTS);
enum { COLOR_SCALE_IN, COLOR_SCALE_OUT, COLOR_NUM_FLOATS };
static const char *const color_float_attrs[] = {"scale_in?", "scale_out?", NULL};
CV_ATTR_NAMES_MATCH(color_float_attrs, COLOR_NUM_FLOATS);

#define CHUNK 256 /* pixels per conversion chunk */

static CvStatus color_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *v = &in[0];
    bool to_rgb = attrs->num_ints > COLOR_MODE && attrs->ints[COLOR_MODE] == 1;
    int64_t shape[CV_MAX_RANK];
    char text[CV_MAX_RANK * 24];
    if (v->dtype == CV_STRING || v->dtype == CV_BOOL)
        return cv_error(CV_INVALID_ARGUMENT, "color conversion of %s images is not supported",
                        cv_dtype_name(v->dtype));
    if (v->rank < (to_rgb ? 2 : 1) || v->shape[v->rank - 1] != (to_rgb ? 1 : 3))
        return cv_error(CV_INVALID_ARGUMENT, "%s, got shape %s",
                        to_rgb ? "Last dimension of a grayscale image should be size 1."
                               : "the last dimension of an RGB image must be 3",
                        cv_shape_str(v->shape, v->rank, text, sizeof(text)));
    memcpy(shape, v->shape, (size_t)v->rank * sizeof(int64_t));
    shape[v->rank - 1] = to_rgb ? 3 : 1;
    CvStatus s = cv_tensor_alloc(&out[0], v->dtype, v->rank, shape, 0, NULL);
    if (s)
        return s;
    int64_t pixels = cv_tensor_num_elements(&out[0]) / shape[v->rank - 1];
    size_t esize = cv_dtype_size(v->dtype);
    if (to_rgb) {
        const char *src = v->data;
        char *dst = out[0].data;
        for (int64_t i = 0; i < pixels; i++, src += esize)
            for (int c = 0; c < 3; c++, dst += esize)
                memcpy(dst, src, esize);
        return CV_STATUS_OK;
    }
    const float w0 = (float)0.2989, w1 = (float)0.5870, w2 = (float)0.1140;
    float rgb[CHUNK * 3], gray[CHUNK];
    const double *f = attrs->floats;
    float scale_in = attrs->num_floats > COLOR_SCALE_IN ? (float)f[COLOR_SCALE_IN] : 1.0f;
    float scale_out = attrs->num_floats > COLOR_SCALE_OUT ? (float)f[COLOR_SCALE_OUT] : 1.0f;
    for (int64_t start = 0; start < pixels; start += CHUNK) {
        int64_t n = pixels - start < CHUNK ? pixels - start : CHUNK;
        cv_image_to_f32(v->dtype, v->data + (size_t)(start * 3) * esize, n * 3, rgb, scale_in);
        for (int64_t i = 0; i < n; i++)
            gray[i] = (rgb[3 * i] * w0 + rgb[3 * i + 1] * w1) + rgb[3 * i + 2] * w2;
        cv_image_from_f32(v->dtype, gray, n, out[0].data + (size_t)start * esize, scale_out, false,
                          0.0f, 0.0f);
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_color = {.name = "ImageColor", .min_inputs = 1, .max_inputs = 1, .run = color_run,
    .int_attrs = color_int_attrs, .float_attrs = color_float_attrs};
