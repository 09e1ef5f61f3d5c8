/* EncodePng: a uint8 or uint16 image [h, w, c] (c = 1 gray, 2 gray +
 * alpha, 3 RGB, 4 RGBA) to PNG bytes with zlib (tf.io.encode_png).
 *
 * ints: [0] compression (-1: zlib's default, 0..9). The output is a new
 * scalar string owned by the caller. Each row gets the filter (of the five)
 * whose output has the smallest sum of absolute byte values (libpng's
 * heuristic); the bytes are not TensorFlow's, the decoded pixels are. Not
 * interlaced, one IDAT chunk. */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { ENCODE_PNG_COMPRESSION, ENCODE_PNG_NUM_INTS };
static const char *const encode_png_int_attrs[] = {"compression", NULL};
CV_ATTR_NAMES_MATCH(encode_png_int_attrs, ENCODE_PNG_NUM_INTS);

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
    p[3] = (uint8_t)v;
}

/* A chunk at p: length, type, `n` data bytes already in place at p + 8, CRC. */
static size_t finish_chunk(uint8_t *p, const char *type, size_t n)
{
    put32(p, (uint32_t)n);
    memcpy(p + 4, type, 4);
    put32(p + 8 + n, (uint32_t)crc32(0L, p + 4, (uInt)(n + 4)));
    return n + 12;
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    if (pa <= pb && pa <= pc)
        return a;
    return pb <= pc ? b : c;
}

/* Filter `row` (n bytes; prev NULL for the first row) with filter f into out. */
static uint64_t filter_row(int f, const uint8_t *row, const uint8_t *prev, size_t n, size_t bpp,
                           uint8_t *out)
{
    uint64_t cost = 0;
    for (size_t i = 0; i < n; i++) {
        int a = i >= bpp ? row[i - bpp] : 0, b = prev ? prev[i] : 0;
        int c = (prev && i >= bpp) ? prev[i - bpp] : 0, pred;
        switch (f) {
        case 0:
            pred = 0;
            break;
        case 1:
            pred = a;
            break;
        case 2:
            pred = b;
            break;
        case 3:
            pred = (a + b) >> 1;
            break;
        default:
            pred = paeth(a, b, c);
            break;
        }
        out[i] = (uint8_t)(row[i] - pred);
        cost += out[i] < 128 ? out[i] : 256u - out[i];
    }
    return cost;
}

static CvStatus encode_png_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                               CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *img = &in[0];
    int level =
        attrs->num_ints > ENCODE_PNG_COMPRESSION ? (int)attrs->ints[ENCODE_PNG_COMPRESSION] : -1;
    if (level < -1 || level > 9)
        return cv_error(CV_INVALID_ARGUMENT, "compression should be in [-1,9], got %d", level);
    if (img->dtype != CV_UINT8 && img->dtype != CV_UINT16)
        return cv_error(CV_INVALID_ARGUMENT, "EncodePng: image must be uint8 or uint16, got %s",
                        cv_dtype_name(img->dtype));
    if (img->rank != 3)
        return cv_error(CV_INVALID_ARGUMENT, "images must be at least rank 3 (got rank %d)",
                        img->rank);
    const int64_t h = img->shape[0], w = img->shape[1], c = img->shape[2];
    if (c < 1 || c > 4)
        return cv_error(CV_INVALID_ARGUMENT, "image must have 1, 2, 3, or 4 channels, got %lld",
                        (long long)c);
    if (h <= 0 || w <= 0 || h > 0x7fffffff || w > 0x7fffffff)
        return cv_error(CV_INTERNAL, "PNG encoding failed: image of %lldx%lld pixels",
                        (long long)w, (long long)h);
    const size_t depth = img->dtype == CV_UINT16 ? 2 : 1, bpp = (size_t)c * depth;
    if ((uint64_t)w > (SIZE_MAX / 4) / bpp || (uint64_t)h > (SIZE_MAX / 4) / ((size_t)w * bpp + 1))
        return cv_error(CV_INVALID_ARGUMENT, "EncodePng: image too large");
    const size_t rb = (size_t)w * bpp, raw_size = (size_t)h * (rb + 1);
    uLong bound = compressBound((uLong)raw_size);
    uint8_t *raw = malloc(raw_size), *rows = malloc(2 * rb), *trial = malloc(rb);
    uint8_t *z = malloc(bound + 64);
    CvStatus s = CV_STATUS_OK;
    if (!raw || !rows || !trial || !z) {
        s = cv_error_nomem();
        goto done;
    }
    /* Rows in PNG's big-endian sample order, then filtered. */
    uint8_t *cur = rows, *prev = NULL;
    for (int64_t y = 0; y < h; y++) {
        const uint8_t *src = (const uint8_t *)img->data + (size_t)y * rb;
        if (depth == 1) {
            memcpy(cur, src, rb);
        } else {
            const uint16_t *s16 = (const uint16_t *)(const void *)src;
            for (size_t i = 0; i < rb / 2; i++)
                cur[2 * i] = (uint8_t)(s16[i] >> 8), cur[2 * i + 1] = (uint8_t)s16[i];
        }
        uint8_t *dst = raw + (size_t)y * (rb + 1);
        uint64_t best = UINT64_MAX;
        for (int f = 0; f < 5; f++) {
            uint64_t cost = filter_row(f, cur, prev, rb, bpp, trial);
            if (cost < best) {
                best = cost;
                dst[0] = (uint8_t)f;
                memcpy(dst + 1, trial, rb);
            }
        }
        prev = cur;
        cur = cur == rows ? rows + rb : rows;
    }
    uLongf zlen = bound;
    if (compress2(z, &zlen, raw, (uLong)raw_size, level) != Z_OK) {
        s = cv_error(CV_INTERNAL, "PNG encoding failed: zlib could not compress the image");
        goto done;
    }
    const size_t total = 8 + 25 + (12 + (size_t)zlen) + 12;
    char *blob;
    s = cv_tensor_alloc_scalar_string(&out[0], total, &blob);
    if (s)
        goto done;
    uint8_t *p = (uint8_t *)blob;
    static const uint8_t color_types[5] = {0, 0, 4, 2, 6};
    memcpy(p, "\x89PNG\r\n\x1a\n", 8);
    p += 8;
    put32(p + 8, (uint32_t)w);
    put32(p + 12, (uint32_t)h);
    p[16] = (uint8_t)(depth * 8);
    p[17] = color_types[c];
    p[18] = p[19] = p[20] = 0;
    p += finish_chunk(p, "IHDR", 13);
    memcpy(p + 8, z, zlen);
    p += finish_chunk(p, "IDAT", zlen);
    finish_chunk(p, "IEND", 0);
done:
    free(raw);
    free(rows);
    free(trial);
    free(z);
    return s;
}

const CvOp cv_op_encode_png = {
    .name = "EncodePng", .min_inputs = 1, .max_inputs = 1, .run = encode_png_run,
    .int_attrs = encode_png_int_attrs};
