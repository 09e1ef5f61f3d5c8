/* The image-decode room (ops/image_decode.h): sniffing, contents checks and
 * dispatch to the codecs. The messages are TensorFlow's. */
#include "ops/image_decode.h"

#include <string.h>

/* ------------------------------------------------------- format sniffing */

CvImageFormat cv_image_format(const uint8_t *d, size_t n)
{
    if (n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff)
        return CV_IMAGE_JPEG;
    if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0)
        return CV_IMAGE_PNG;
    if (n >= 4 && memcmp(d, "GIF8", 4) == 0)
        return CV_IMAGE_GIF;
    if (n >= 2 && d[0] == 'B' && d[1] == 'M')
        return CV_IMAGE_BMP;
    if (n > 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0)
        return CV_IMAGE_WEBP;
    if ((n >= 2 && d[0] == 0xff && d[1] == 0x0a) ||
        (n >= 12 && memcmp(d, "\0\0\0\x0cJXL \r\n\x87\n", 12) == 0))
        return CV_IMAGE_JXL;
    return CV_IMAGE_UNKNOWN;
}

const char *cv_image_format_name(CvImageFormat f)
{
    switch (f) {
    case CV_IMAGE_JPEG:
        return "JPEG";
    case CV_IMAGE_PNG:
        return "PNG";
    case CV_IMAGE_GIF:
        return "GIF";
    case CV_IMAGE_BMP:
        return "BMP";
    case CV_IMAGE_WEBP:
        return "WebP";
    case CV_IMAGE_JXL:
        return "JPEG XL";
    default:
        return "unknown";
    }
}

/* -------------------------------------------------------------- contents */

static bool is_string_scalar(const CvTensor *t)
{
    return t->dtype == CV_STRING && t->rank == 0;
}

/* The bytes of a scalar string tensor (borrowed from it). */
static const uint8_t *string_scalar(const CvTensor *t, size_t *size)
{
    const CvStringRef *ref = (const CvStringRef *)t->data;
    *size = (size_t)ref->length;
    return (const uint8_t *)cv_string_data(t, ref);
}

CvImageFormat cv_image_contents_format(const CvTensor *contents)
{
    if (!is_string_scalar(contents))
        return CV_IMAGE_UNKNOWN;
    size_t size;
    const uint8_t *data = string_scalar(contents, &size);
    return cv_image_format(data, size);
}

/* The checks every decode op makes first: `contents` is a non-empty scalar
 * string; on OK *data, *size are its bytes (borrowed). */
static CvStatus checked_contents(const CvTensor *contents, const uint8_t **data, size_t *size)
{
    if (!is_string_scalar(contents)) {
        char shape[64];
        return cv_error(CV_INVALID_ARGUMENT, "`contents` must be a scalar string but got %s shape %s",
                        cv_dtype_name(contents->dtype),
                        cv_shape_str(contents->shape, contents->rank, shape, sizeof(shape)));
    }
    *data = string_scalar(contents, size);
    if (*size == 0)
        return cv_error(CV_INVALID_ARGUMENT, "Input is empty.");
    return CV_STATUS_OK;
}

static CvStatus unknown_format(void)
{
    return cv_error(CV_INVALID_ARGUMENT, "Unknown image file format. One of JPEG, JPEG XL, "
                                         "PNG, GIF, BMP, WebP required.");
}

static CvStatus unimplemented_format(const char *op, CvImageFormat format)
{
    return cv_error(CV_UNIMPLEMENTED, "%s: the data is a %s image; conveyor decodes only JPEG and "
                    "PNG images so far", op, cv_image_format_name(format));
}

/* -------------------------------------------------------------- dispatch */

CvStatus cv_image_decode_jpeg_contents(const char *op, const CvTensor *contents,
                                       const CvJpegOptions *o, CvTensor *out)
{
    memset(out, 0, sizeof(*out));
    const uint8_t *data = NULL;
    size_t size = 0;
    CvStatus s = checked_contents(contents, &data, &size);
    if (s)
        return s;
    CvImageFormat format = cv_image_format(data, size);
    if (format == CV_IMAGE_UNKNOWN)
        return unknown_format();
    if (format == CV_IMAGE_PNG) { /* as TensorFlow's DecodeJpeg: decoded as uint8 */
        CvPngOptions po = {.channels = o->channels, .uint16 = false, .max_pixels = o->max_pixels};
        return cv_png_decode(data, size, &po, out);
    }
    if (format != CV_IMAGE_JPEG)
        return unimplemented_format(op, format);
    return cv_jpeg_decode(data, size, o, out);
}

CvStatus cv_image_decode_and_crop_jpeg_contents(const char *op, const CvTensor *contents,
                                                const CvJpegOptions *o, CvTensor *out)
{
    memset(out, 0, sizeof(*out));
    const uint8_t *data = NULL;
    size_t size = 0;
    CvStatus s = checked_contents(contents, &data, &size);
    if (s)
        return s;
    CvImageFormat format = cv_image_format(data, size);
    if (format == CV_IMAGE_UNKNOWN)
        return unknown_format();
    if (format != CV_IMAGE_JPEG)
        return cv_error(CV_INVALID_ARGUMENT, "%s operation can run on JPEG only, but detected %s.",
                        op, cv_image_format_name(format));
    return cv_jpeg_decode(data, size, o, out);
}

CvStatus cv_image_decode_png_contents(const char *op, const CvTensor *contents,
                                      const CvPngOptions *o, CvTensor *out)
{
    memset(out, 0, sizeof(*out));
    const uint8_t *data = NULL;
    size_t size = 0;
    CvStatus s = checked_contents(contents, &data, &size);
    if (s)
        return s;
    CvImageFormat format = cv_image_format(data, size);
    if (format == CV_IMAGE_PNG)
        return cv_png_decode(data, size, o, out);
    if (format == CV_IMAGE_UNKNOWN)
        return unknown_format();
    if (format != CV_IMAGE_JPEG)
        return unimplemented_format(op, format);
    /* As TensorFlow's DecodePng: JPEG data with DecodeJpeg's defaults. */
    CvJpegOptions jo = {
        .channels = o->channels,
        .ratio = 1,
        .fancy_upscaling = true,
        .acceptable_fraction = 1.0f,
        .dct = CV_JPEG_DCT_FAST,
        .max_pixels = o->max_pixels,
    };
    CvTensor pixels;
    s = cv_jpeg_decode(data, size, &jo, &pixels);
    if (s || !o->uint16) {
        *out = pixels;
        return s;
    }
    s = cv_tensor_alloc(out, CV_UINT16, pixels.rank, pixels.shape, 0, NULL);
    if (!s) {
        const uint8_t *src = (const uint8_t *)pixels.data;
        uint16_t *dst = (uint16_t *)out->data;
        int64_t n = cv_tensor_num_elements(&pixels);
        for (int64_t i = 0; i < n; i++)
            dst[i] = (uint16_t)(src[i] * 257u);
    }
    cv_tensor_clear(&pixels);
    return s;
}
