/* DecodeAndCropJpeg(contents, crop_window): the window [y, x, height, width]
 * (int32) of a JPEG image, decoded alone (tf.image.decode_and_crop_jpeg):
 * libjpeg-turbo skips the rows above the window, decodes only the iMCU
 * columns that cover it and stops after its last row (ops/jpeg.h). JPEG data
 * only, as TensorFlow's op.
 *
 * ints: as DecodeJpeg's [0..5] (channels, ratio, fancy_upscaling,
 * try_recover_truncated, dct_method, max_pixels); floats: [0]
 * acceptable_fraction. No state. */
#include "ops/image_decode.h"
#include "ops/op.h"

enum { CROP_JPEG_CHANNELS, CROP_JPEG_RATIO, CROP_JPEG_FANCY_UPSCALING,
    CROP_JPEG_TRY_RECOVER_TRUNCATED, CROP_JPEG_DCT_METHOD, CROP_JPEG_MAX_PIXELS,
    CROP_JPEG_NUM_INTS };
static const char *const crop_jpeg_int_attrs[] = {"channels", "ratio", "fancy_upscaling",
    "try_recover_truncated", "dct_method", "max_pixels", NULL};
CV_ATTR_NAMES_MATCH(crop_jpeg_int_attrs, CROP_JPEG_NUM_INTS);
enum { CROP_JPEG_ACCEPTABLE_FRACTION, CROP_JPEG_NUM_FLOATS };
static const char *const crop_jpeg_float_attrs[] = {"acceptable_fraction", NULL};
CV_ATTR_NAMES_MATCH(crop_jpeg_float_attrs, CROP_JPEG_NUM_FLOATS);

static CvStatus decode_and_crop_jpeg_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                         CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *w = &in[1];
    char shape[64];
    if (w->rank != 1)
        return cv_error(CV_INVALID_ARGUMENT, "crop_window must be 1-D, got shape %s",
                        cv_shape_str(w->shape, w->rank, shape, sizeof(shape)));
    if (w->shape[0] != 4)
        return cv_error(CV_INVALID_ARGUMENT, "crop_size must have four elements %s",
                        cv_shape_str(w->shape, w->rank, shape, sizeof(shape)));
    if (w->dtype != CV_INT32)
        return cv_error(CV_INVALID_ARGUMENT, "crop_window must be int32, got %s",
                        cv_dtype_name(w->dtype));
    const int32_t *win = (const int32_t *)w->data;
    CvJpegOptions o = {
        .channels = (int)attrs->ints[CROP_JPEG_CHANNELS],
        .ratio = (int)attrs->ints[CROP_JPEG_RATIO],
        .fancy_upscaling = attrs->ints[CROP_JPEG_FANCY_UPSCALING] != 0,
        .try_recover_truncated = attrs->ints[CROP_JPEG_TRY_RECOVER_TRUNCATED] != 0,
        .acceptable_fraction = (float)attrs->floats[CROP_JPEG_ACCEPTABLE_FRACTION],
        .dct = attrs->ints[CROP_JPEG_DCT_METHOD] == CV_JPEG_DCT_ACCURATE ? CV_JPEG_DCT_ACCURATE
                                                                        : CV_JPEG_DCT_FAST,
        .max_pixels = attrs->ints[CROP_JPEG_MAX_PIXELS],
        .crop = true,
        .crop_y = win[0],
        .crop_x = win[1],
        .crop_height = win[2],
        .crop_width = win[3],
    };
    return cv_image_decode_and_crop_jpeg_contents("DecodeAndCropJpeg", &in[0], &o, &out[0]);
}

const CvOp cv_op_decode_and_crop_jpeg = {
    .name = "DecodeAndCropJpeg", .min_inputs = 2, .max_inputs = 2,
    .run = decode_and_crop_jpeg_run, .int_attrs = crop_jpeg_int_attrs,
    .float_attrs = crop_jpeg_float_attrs};
