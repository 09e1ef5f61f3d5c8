/* DecodeJpeg(contents): a JPEG image as uint8 [height, width, channels]
 * (tf.io.decode_jpeg), on libjpeg-turbo; see ops/jpeg.h. As in TensorFlow, PNG
 * data is decoded too (ops/image_decode.h).
 *
 * ints (named in order below): [0] channels (0, 1, 3), [1] ratio (1, 2, 4, 8), [2] fancy_upscaling,
 * [3] try_recover_truncated, [4] DCT (CvJpegDct: 0 fast, 1 accurate),
 * [5] max_pixels (<= 0: no limit), optionally [6], [7] a resize hint: the
 * height and width of the resize that alone consumes the image (put there by
 * the jpeg_scaled_decode program pass, conveyor/framework/tracing.py), which lets the
 * decoder decode at a reduced scale (CvJpegOptions.min_height; the output is
 * then smaller than the image). floats: [0] acceptable_fraction. */
#include "ops/image_decode.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { DECODE_JPEG_CHANNELS, DECODE_JPEG_RATIO, DECODE_JPEG_FANCY_UPSCALING, DECODE_JPEG_TRY_RECOVER_TRUNCATED, DECODE_JPEG_DCT_METHOD,
    DECODE_JPEG_MAX_PIXELS, DECODE_JPEG_MIN_HEIGHT, DECODE_JPEG_MIN_WIDTH, DECODE_JPEG_NUM_INTS };
static const char *const decode_jpeg_int_attrs[] = {"channels", "ratio", "fancy_upscaling",
    "try_recover_truncated", "dct_method", "max_pixels", "min_height?", "min_width?", NULL};
CV_ATTR_NAMES_MATCH(decode_jpeg_int_attrs, DECODE_JPEG_NUM_INTS);
enum { DECODE_JPEG_ACCEPTABLE_FRACTION, DECODE_JPEG_NUM_FLOATS };
static const char *const decode_jpeg_float_attrs[] = {"acceptable_fraction", NULL};
CV_ATTR_NAMES_MATCH(decode_jpeg_float_attrs, DECODE_JPEG_NUM_FLOATS);

static CvStatus decode_jpeg_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints < DECODE_JPEG_MIN_HEIGHT || attrs->num_floats < DECODE_JPEG_NUM_FLOATS)
        return cv_error(CV_INVALID_ARGUMENT, "DecodeJpeg needs 6 int and 1 float attributes");
    CvJpegOptions o = {
        .channels = (int)attrs->ints[DECODE_JPEG_CHANNELS],
        .ratio = (int)attrs->ints[DECODE_JPEG_RATIO],
        .fancy_upscaling = attrs->ints[DECODE_JPEG_FANCY_UPSCALING] != 0,
        .try_recover_truncated = attrs->ints[DECODE_JPEG_TRY_RECOVER_TRUNCATED] != 0,
        .acceptable_fraction = (float)attrs->floats[DECODE_JPEG_ACCEPTABLE_FRACTION],
        .dct = attrs->ints[DECODE_JPEG_DCT_METHOD] == CV_JPEG_DCT_ACCURATE ? CV_JPEG_DCT_ACCURATE
                                                                  : CV_JPEG_DCT_FAST,
        .max_pixels = attrs->ints[DECODE_JPEG_MAX_PIXELS],
        .min_height = attrs->num_ints > DECODE_JPEG_MIN_WIDTH ? attrs->ints[DECODE_JPEG_MIN_HEIGHT] : 0,
        .min_width = attrs->num_ints > DECODE_JPEG_MIN_WIDTH ? attrs->ints[DECODE_JPEG_MIN_WIDTH] : 0,
    };
    return cv_image_decode_jpeg_contents("DecodeJpeg", &in[0], &o, &out[0]);
}

const CvOp cv_op_decode_jpeg = {
    .name = "DecodeJpeg", .min_inputs = 1, .max_inputs = 1, .run = decode_jpeg_run,
    .int_attrs = decode_jpeg_int_attrs, .float_attrs = decode_jpeg_float_attrs};
