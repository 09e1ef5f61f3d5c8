/* JPEG decoding with libjpeg-turbo, as TensorFlow's DecodeJpeg does it: a
 * codec for one format. Which bytes reach it, and what the decode ops do
 * with other formats, is ops/image_decode.h's business.
 *
 * The decoder reproduces TensorFlow's jpeg::Uncompress step by step (color
 * space choice, the Adobe-inverted CMYK -> RGB conversion, how a truncated
 * stream suspends or is completed with a fake EOI, acceptable_fraction, the
 * black or repeated rows), so the same bytes and options give the same pixels
 * and the same success or failure. libjpeg's fatal errors longjmp back to
 * the decoder (its default error_exit would exit the process) and its
 * warnings are counted, never printed.
 *
 * Plain C, no globals: any number of threads may decode at once.
 */
#ifndef CV_JPEG_H
#define CV_JPEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

typedef enum CvJpegDct {
    CV_JPEG_DCT_FAST = 0,     /* JDCT_IFAST: TensorFlow's default ('' or 'INTEGER_FAST') */
    CV_JPEG_DCT_ACCURATE = 1, /* JDCT_ISLOW: 'INTEGER_ACCURATE' */
} CvJpegDct;

typedef struct CvJpegOptions {
    int channels; /* 0 (the image's, CMYK -> 3), 1 or 3 */
    int ratio;    /* 1, 2, 4 or 8: libjpeg's scaled decoding */
    bool fancy_upscaling;
    bool try_recover_truncated;
    float acceptable_fraction; /* rows that must decode when the data ends early */
    CvJpegDct dct;
    /* Decompression-bomb guard: images whose header declares more pixels
     * (width x height, before any ratio) are refused before anything is
     * allocated. <= 0: no limit. */
    int64_t max_pixels;
    /* Scaled decoding for a resize that follows (a traced program with
     * options.experimental_optimization.jpeg_scaled_decode): when both are > 0,
     * ratio is 1 and the image's height and width are each more than twice
     * these, the image is decoded at the smallest of libjpeg's scales 1/8,
     * 1/4 and 1/2 whose output is still at least min_height x min_width (less
     * IDCT, color conversion and memory; the entropy decoding is the same).
     * An image that fails or whose data ends early at that scale is
     * decoded again at full size, so errors, messages and the handling of
     * truncated data are those of the full-size decode. 0: full size. */
    int64_t min_height, min_width;
    /* DecodeAndCropJpeg's window, in output pixels (after `ratio`): when
     * `crop`, only rows [crop_y, crop_y + crop_height) and columns
     * [crop_x, crop_x + crop_width) are decoded (libjpeg-turbo's
     * jpeg_crop_scanline and jpeg_skip_scanlines, as TensorFlow does) and the
     * decoder stops after the window. A window outside the image is
     * INVALID_ARGUMENT. Excludes the resize hint. */
    bool crop;
    int64_t crop_y, crop_x, crop_height, crop_width;
} CvJpegOptions;

/* Decode `size` bytes of JPEG into a new uint8 tensor [height, width,
 * channels] (*out, owned by the caller on OK, cleared on error). Errors:
 * INVALID_ARGUMENT naming what libjpeg found wrong (or the row where the
 * data ended), or the dimensions and the limit for a refused large image. */
CvStatus cv_jpeg_decode(const uint8_t *data, size_t size, const CvJpegOptions *options,
                        CvTensor *out);

/* ExtractJpegShape: the header alone (jpeg_read_header), nothing decoded.
 * shape = {height, width, components} as the header declares them (4 for a
 * CMYK image). INVALID_ARGUMENT for data that is not a JPEG header. */
CvStatus cv_jpeg_shape(const uint8_t *data, size_t size, int64_t shape[3]);

#endif
