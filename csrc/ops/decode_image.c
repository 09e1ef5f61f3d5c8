/* DecodeImage(contents): an image of any format TensorFlow knows by its
 * first bytes, as [height, width, channels] of uint8, uint16 or float32
 * (tf.io.decode_image). JPEG is decoded with TensorFlow's DecodeImage
 * defaults (see ops/jpeg.h), PNG by ops/png.h, both reached through
 * ops/image_decode.h; the other formats are UNIMPLEMENTED so far. For JPEG,
 * uint16 is value * 256 and float32 is value * (1/255 in float); for PNG,
 * uint16 is the decoder's (8-bit samples * 257) and float32 is that *
 * (1/65535 in float), as TensorFlow computes them.
 *
 * ints (named in order below): [0] channels (0, 1, 3, 4; 4 is refused for JPEG), [1] output CvDtype
 * (CV_UINT8, CV_UINT16 or CV_FLOAT32), [2] expand_animations (for GIF; no
 * effect on JPEG), [3] max_pixels (<= 0: no limit), optionally [4], [5] a
 * resize hint (see ops/decode_jpeg.c: the image may come out smaller). */
#include "ops/image_decode.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { DECODE_IMAGE_CHANNELS, DECODE_IMAGE_DTYPE, DECODE_IMAGE_EXPAND_ANIMATIONS, DECODE_IMAGE_MAX_PIXELS, DECODE_IMAGE_MIN_HEIGHT,
    DECODE_IMAGE_MIN_WIDTH, DECODE_IMAGE_NUM_INTS };
static const char *const decode_image_int_attrs[] = {"channels", "dtype", "expand_animations",
    "max_pixels", "min_height?", "min_width?", NULL};
CV_ATTR_NAMES_MATCH(decode_image_int_attrs, DECODE_IMAGE_NUM_INTS);

/* PNG: decoded to uint16 unless uint8 is asked for; float32 is then
 * value * (1/65535 in float), as TensorFlow computes it. */
static CvStatus decode_png(const CvTensor *contents, int channels, CvDtype dtype,
                           int64_t max_pixels, CvTensor *out)
{
    CvPngOptions po = {.channels = channels, .uint16 = dtype != CV_UINT8, .max_pixels = max_pixels};
    if (dtype != CV_FLOAT32)
        return cv_image_decode_png_contents("DecodeImage", contents, &po, out);
    CvTensor wide;
    CvStatus s = cv_image_decode_png_contents("DecodeImage", contents, &po, &wide);
    if (s)
        return s;
    s = cv_tensor_alloc(out, CV_FLOAT32, wide.rank, wide.shape, 0, NULL);
    if (!s) {
        const float scale = (float)(1.0 / 65535.0);
        const uint16_t *src = (const uint16_t *)wide.data;
        float *dst = (float *)out->data;
        int64_t n = cv_tensor_num_elements(&wide);
        for (int64_t i = 0; i < n; i++)
            dst[i] = (float)src[i] * scale;
    }
    cv_tensor_clear(&wide);
    return s;
}

static CvStatus decode_image_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                 CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints < DECODE_IMAGE_MIN_HEIGHT)
        return cv_error(CV_INVALID_ARGUMENT, "DecodeImage needs 4 int attributes");
    CvDtype dtype = (CvDtype)attrs->ints[DECODE_IMAGE_DTYPE];
    if (dtype != CV_UINT8 && dtype != CV_UINT16 && dtype != CV_FLOAT32)
        return cv_error(CV_INVALID_ARGUMENT, "`dtype` for `DecodeImage` must be uint8, uint16 or "
                                             "float32, got %s", cv_dtype_name(dtype));
    CvJpegOptions o = {
        .channels = (int)attrs->ints[DECODE_IMAGE_CHANNELS],
        .ratio = 1,
        .fancy_upscaling = true,
        .try_recover_truncated = false,
        .acceptable_fraction = 1.0f,
        .dct = CV_JPEG_DCT_FAST,
        .max_pixels = attrs->ints[DECODE_IMAGE_MAX_PIXELS],
        .min_height = attrs->num_ints > DECODE_IMAGE_MIN_WIDTH ? attrs->ints[DECODE_IMAGE_MIN_HEIGHT] : 0,
        .min_width = attrs->num_ints > DECODE_IMAGE_MIN_WIDTH ? attrs->ints[DECODE_IMAGE_MIN_WIDTH] : 0,
    };
    if (cv_image_contents_format(&in[0]) == CV_IMAGE_PNG)
        return decode_png(&in[0], (int)attrs->ints[DECODE_IMAGE_CHANNELS], dtype,
                          attrs->ints[DECODE_IMAGE_MAX_PIXELS], &out[0]);
    CvTensor pixels;
    CvStatus s = cv_image_decode_jpeg_contents("DecodeImage", &in[0], &o, &pixels);
    if (s || dtype == CV_UINT8) {
        out[0] = pixels;
        return s;
    }
    s = cv_tensor_alloc(&out[0], dtype, pixels.rank, pixels.shape, 0, NULL);
    if (s)
        goto done;
    const uint8_t *src = (const uint8_t *)pixels.data;
    int64_t n = cv_tensor_num_elements(&pixels);
    if (dtype == CV_UINT16) {
        uint16_t *dst = (uint16_t *)out[0].data;
        for (int64_t i = 0; i < n; i++)
            dst[i] = (uint16_t)(src[i] * 256u);
    } else {
        const float scale = (float)(1.0 / 255.0);
        float *dst = (float *)out[0].data;
        for (int64_t i = 0; i < n; i++)
            dst[i] = (float)src[i] * scale;
    }
done:
    cv_tensor_clear(&pixels);
    return s;
}

const CvOp cv_op_decode_image = {
    .name = "DecodeImage", .min_inputs = 1, .max_inputs = 1, .run = decode_image_run,
    .int_attrs = decode_image_int_attrs};
