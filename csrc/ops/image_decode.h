/* The image-decode room: what TensorFlow's decode ops do with their
 * `contents` before a codec sees a byte. It owns the format sniffing
 * (TensorFlow's magic-byte rules), the checks on `contents` (a non-empty
 * scalar string) and the dispatch to the codecs, ops/jpeg.h and ops/png.h,
 * which decode one format each and know nothing of each other. The op files
 * (decode_jpeg.c, decode_png.c, decode_image.c) call only this room. Not an
 * op.
 *
 * As in TensorFlow, DecodeJpeg decodes PNG data too and DecodePng decodes
 * JPEG data; the other formats TensorFlow knows (GIF, BMP, WebP, JPEG XL)
 * are UNIMPLEMENTED here, unknown data is INVALID_ARGUMENT.
 *
 * Plain C, no globals: any number of threads may decode at once.
 */
#ifndef CV_IMAGE_DECODE_H
#define CV_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "ops/jpeg.h"
#include "ops/png.h"

typedef enum CvImageFormat {
    CV_IMAGE_UNKNOWN = 0,
    CV_IMAGE_JPEG,
    CV_IMAGE_PNG,
    CV_IMAGE_GIF,
    CV_IMAGE_BMP,
    CV_IMAGE_WEBP,
    CV_IMAGE_JXL,
} CvImageFormat;

/* The format named by the first bytes (TensorFlow's magic-byte rules). */
CvImageFormat cv_image_format(const uint8_t *data, size_t size);
const char *cv_image_format_name(CvImageFormat f); /* "JPEG", "PNG", ... */

/* The format of `contents` when it is a scalar string, else
 * CV_IMAGE_UNKNOWN (the decode functions below then give the error). */
CvImageFormat cv_image_contents_format(const CvTensor *contents);

/* What DecodeJpeg and DecodeImage do with their input: `contents` must be
 * a scalar string (INVALID_ARGUMENT otherwise, or when empty or of no known
 * format) holding a JPEG, decoded with `options`, or a PNG, decoded to uint8
 * with options' channels and max_pixels, as TensorFlow's DecodeJpeg does.
 * `op` names the op in messages. *out: a new tensor owned by the caller on
 * OK, cleared on error. */
CvStatus cv_image_decode_jpeg_contents(const char *op, const CvTensor *contents,
                                       const CvJpegOptions *options, CvTensor *out);

/* What DecodeAndCropJpeg does with its input: as DecodeJpeg, but only JPEG
 * data is accepted (INVALID_ARGUMENT naming the format detected otherwise);
 * options' crop window says what is decoded. Ownership as above. */
CvStatus cv_image_decode_and_crop_jpeg_contents(const char *op, const CvTensor *contents,
                                                const CvJpegOptions *options, CvTensor *out);

/* What DecodePng does with its input (and DecodeImage with PNG data):
 * `contents` must be a non-empty scalar string. PNG data is decoded with
 * `options`; JPEG data is decoded as DecodeJpeg's defaults do (channels 0, 1
 * or 3; uint16 output is value * 257), as TensorFlow's DecodePng does.
 * Ownership as above. */
CvStatus cv_image_decode_png_contents(const char *op, const CvTensor *contents,
                                      const CvPngOptions *options, CvTensor *out);

#endif
