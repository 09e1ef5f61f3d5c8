/* DecodePng(contents): a PNG image as uint8 or uint16 [height, width,
 * channels] (tf.io.decode_png), decoded with zlib; see ops/png.h. As in
 * TensorFlow, JPEG data is decoded too (ops/image_decode.h).
 *
 * ints (named in order below): [0] channels (0, 1, 3, 4), [1] output CvDtype (CV_UINT8 or
 * CV_UINT16), [2] max_pixels (<= 0: no limit). The output is new, owned by
 * the caller. */
#include "ops/image_decode.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { DECODE_PNG_CHANNELS, DECODE_PNG_DTYPE, DECODE_PNG_MAX_PIXELS, DECODE_PNG_NUM_INTS };
static const char *const decode_png_int_attrs[] = {"channels", "dtype", "max_pixels", NULL};
CV_ATTR_NAMES_MATCH(decode_png_int_attrs, DECODE_PNG_NUM_INTS);

static CvStatus decode_png_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                               CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints < DECODE_PNG_NUM_INTS)
        return cv_error(CV_INVALID_ARGUMENT, "DecodePng needs 3 int attributes");
    CvDtype dtype = (CvDtype)attrs->ints[DECODE_PNG_DTYPE];
    if (dtype != CV_UINT8 && dtype != CV_UINT16)
        return cv_error(CV_INVALID_ARGUMENT, "`dtype` for `DecodePng` must be uint8 or uint16, "
                                             "got %s", cv_dtype_name(dtype));
    CvPngOptions o = {
        .channels = (int)attrs->ints[DECODE_PNG_CHANNELS],
        .uint16 = dtype == CV_UINT16,
        .max_pixels = attrs->ints[DECODE_PNG_MAX_PIXELS],
    };
    return cv_image_decode_png_contents("DecodePng", &in[0], &o, &out[0]);
}

const CvOp cv_op_decode_png = {
    .name = "DecodePng", .min_inputs = 1, .max_inputs = 1, .run = decode_png_run,
    .int_attrs = decode_png_int_attrs};
