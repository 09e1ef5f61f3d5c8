/* PNG decoding with zlib, giving the pixels TensorFlow's DecodePng gives
 * (TensorFlow decodes with libpng; these are the same results, written from
 * the PNG specification and measured against TensorFlow).
 *
 * Every standard PNG decodes: bit depths 1, 2, 4, 8 and 16; gray, gray +
 * alpha, RGB, RGBA and palette images; tRNS transparency; Adam7
 * interlacing; the five row filters; any number of IDAT chunks. Chunk CRCs
 * and the zlib stream's Adler-32 are checked: a bad CRC on a critical chunk
 * (IHDR, PLTE, IDAT, IEND) or a bad Adler-32 is an error, an ancillary chunk
 * with a bad CRC is skipped (libpng's default). The image data must be
 * complete and the file must reach IEND; bytes after IEND are ignored, and
 * so is image data past the last row.
 *
 * Conversions (`channels`): 1 is gray (from RGB: (9797 R + 19234 G + 3737 B)
 * >> 15, rounded for 16-bit samples, truncated for 8-bit ones, as libpng's
 * rgb_to_gray; through libpng's gamma tables when the file has gAMA or
 * sRGB), 3 is RGB (gray replicated), 4 is RGBA (alpha from the image,
 * from tRNS, or opaque), 0 is the image's own (palette: RGB, RGBA with
 * tRNS). Gray samples of 1, 2 or 4 bits are scaled to 8 bits. uint8 output
 * of 16-bit samples keeps the high byte; uint16 output of 8-bit samples is
 * value * 257.
 *
 * A codec for one format: which bytes reach it, and what the decode ops do
 * with other formats, is ops/image_decode.h's business.
 *
 * Plain C, no globals: any number of threads may decode at once.
 */
#ifndef CV_PNG_H
#define CV_PNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

typedef struct CvPngOptions {
    int channels;       /* 0 (the image's own), 1, 3 or 4 */
    bool uint16;        /* output uint16 (else uint8) */
    /* Decompression-bomb guard: images whose header declares more pixels
     * (width x height) are refused before anything is allocated. <= 0: none. */
    int64_t max_pixels;
} CvPngOptions;

/* Decode `size` bytes of PNG into a new tensor [height, width, channels]
 * (*out, owned by the caller on OK, cleared on error). Errors:
 * INVALID_ARGUMENT saying what is wrong with the data. */
CvStatus cv_png_decode(const uint8_t *data, size_t size, const CvPngOptions *options,
                       CvTensor *out);

#endif
