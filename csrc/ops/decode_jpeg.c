/* DecodeJpeg(contents): a JPEG image as uint8 [height, width, channels]
 * (tf.io.decode_jpeg), on libjpeg-turbo; see ops/jpeg.h. As in TensorFlow, PNG
 * data is decoded too (ops/image_decode.h).
 *
 * ints: [0] channels (0, 1, 3), [1] ratio (1, 2, 4, 8), [2] fancy_upscaling,
 * [3] try_recover_truncated, [4] DCT (CvJpegDct: 0 fast, 1 accurate),
 * [5] max_pixels (<= 0: no limit), optionally [6], [7] a resize hint: the
 * height and width of the resize that alone consumes the image (put there by
 * the jpeg_scaled_decode program pass, conveyor/framework/tracing.py), which lets the
 * decoder decode at a reduced scale (CvJpegOptions.min_height; the output is
 * then smaller than the image). floats: [0] acceptable_fraction. */
#include "ops/image_decode.h"
#include "ops/op.h"

static CvStatus decode_jpeg_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints < 6 || attrs->num_floats < 1)
        return cv_error(CV_INVALID_ARGUMENT, "DecodeJpeg needs 6 int and 1 float attributes");
    CvJpegOptions o = {
        .channels = (int)attrs->ints[0],
        .ratio = (int)attrs->ints[1],
        .fancy_upscaling = attrs->ints[2] != 0,
        .try_recover_truncated = attrs->ints[3] != 0,
        .acceptable_fraction = (float)attrs->floats[0],
        .dct = attrs->ints[4] == CV_JPEG_DCT_ACCURATE ? CV_JPEG_DCT_ACCURATE : CV_JPEG_DCT_FAST,
        .max_pixels = attrs->ints[5],
        .min_height = attrs->num_ints >= 8 ? attrs->ints[6] : 0,
        .min_width = attrs->num_ints >= 8 ? attrs->ints[7] : 0,
    };
    return cv_image_decode_jpeg_contents("DecodeJpeg", &in[0], &o, &out[0]);
}

const CvOp cv_op_decode_jpeg = {
    .name = "DecodeJpeg", .min_inputs = 1, .max_inputs = 1, .run = decode_jpeg_run};
