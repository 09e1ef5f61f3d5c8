/* PNG decoding with zlib; see ops/png.h for what it decodes and how.
 *
 * The file is read in one pass over its chunks: IHDR, then PLTE and tRNS,
 * then the IDAT chunks, whose zlib stream is inflated into one buffer of
 * filtered rows (its size known from the header, so a hostile stream cannot
 * make it grow), then the chunks up to IEND. Only then are the rows
 * unfiltered and converted, one row at a time, into the output tensor (for
 * an interlaced image each of the seven Adam7 passes in turn, its pixels
 * placed at their positions in the image).
 *
 * Every length read from the file is checked against the bytes that are
 * there, the image size against libpng's limits (1,000,000 rows or columns)
 * and the decompression-bomb guard before anything image-sized is
 * allocated, and buffer sizes are computed in 64 bits.
 */
#include "ops/png.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>


#define PNG_MAX_DIM 1000000u /* libpng's default user limit on width and height */

#define TAG(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))
#define T_IHDR TAG('I', 'H', 'D', 'R')
#define T_PLTE TAG('P', 'L', 'T', 'E')
#define T_IDAT TAG('I', 'D', 'A', 'T')
#define T_IEND TAG('I', 'E', 'N', 'D')
#define T_tRNS TAG('t', 'R', 'N', 'S')
#define T_gAMA TAG('g', 'A', 'M', 'A')
#define T_sRGB TAG('s', 'R', 'G', 'B')
#define T_sBIT TAG('s', 'B', 'I', 'T')

static const char BAD_HEADER[] = "Invalid PNG. Failed to initialize decoder";
static const char BAD_DATA[] = "Invalid PNG data";

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

typedef struct Chunk {
    uint32_t type;
    uint32_t length;
    const uint8_t *data;
    bool crc_ok;
    bool critical;
    char name[5];
} Chunk;

typedef struct Reader {
    const uint8_t *data;
    size_t size;
    size_t pos;
} Reader;

/* The next chunk, its CRC checked. `what` prefixes errors. */
static CvStatus next_chunk(Reader *r, Chunk *c, const char *what)
{
    size_t left = r->size - r->pos;
    if (left < 12)
        return cv_error(CV_INVALID_ARGUMENT, "%s: the data ends after %zu bytes, inside a chunk "
                        "header (truncated file?)", what, r->size);
    const uint8_t *p = r->data + r->pos;
    c->length = be32(p);
    c->type = be32(p + 4);
    memcpy(c->name, p + 4, 4);
    c->name[4] = '\0';
    for (int i = 0; i < 4; i++) {
        uint8_t ch = p[4 + i];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z')))
            return cv_error(CV_INVALID_ARGUMENT, "%s: invalid chunk type at byte %zu", what,
                            r->pos + 4);
    }
    if (c->length > 0x7fffffffu)
        return cv_error(CV_INVALID_ARGUMENT, "%s: chunk %s declares %u bytes (more than 2^31-1)",
                        what, c->name, c->length);
    if (left - 12 < c->length)
        return cv_error(CV_INVALID_ARGUMENT, "%s: the data ends inside chunk %s (%zu bytes, the "
                        "chunk needs %u; truncated file?)", what, c->name, r->size,
                        c->length);
    c->data = p + 8;
    uLong crc = crc32(0L, p + 4, 4);
    crc = crc32(crc, c->data, (uInt)c->length);
    c->crc_ok = (uint32_t)crc == be32(p + 8 + c->length);
    c->critical = (p[4] & 0x20) == 0;
    r->pos += 12 + (size_t)c->length;
    if (c->critical && !c->crc_ok)
        return cv_error(CV_INVALID_ARGUMENT, "%s: CRC error in chunk %s", what, c->name);
    return CV_STATUS_OK;
}

typedef struct Png {
    uint32_t width, height;
    int depth;      /* bits per sample: 1, 2, 4, 8, 16 */
    int color;      /* color type: 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA */
    int nc;         /* samples per pixel in the file */
    bool interlaced;
    int npalette;   /* 0: no PLTE */
    bool seen_plte; /* any PLTE, used or not */
    uint8_t palette[256][3];
    bool has_trns;
    int ntrns;
    uint8_t trns_alpha[256]; /* palette images */
    uint16_t trns_key[3];    /* gray ([0]) or RGB images */
    int32_t gama;            /* gAMA * 100000 (0: none) */
    bool srgb;               /* an sRGB chunk: gamma 45455 whatever gAMA says */
    bool bad_gama;           /* a gAMA out of range came first */
    /* libpng's gamma tables for rgb_to_gray when the file has a gamma
     * (8-bit samples only; see build_gamma). */
    bool gamma_gray;
    uint8_t to_linear[256], from_linear[256];
    /* The same for 16-bit samples: tables indexed by value >> gamma_shift
     * (malloc'd; NULL when not needed). same16 maps gray pixels (R = G = B). */
    unsigned gamma_shift;
    int sbit; /* the largest significant bits of R, G, B from sBIT (0: none) */
    uint16_t *to_linear16, *from_linear16, *same16;
} Png;

static CvStatus read_ihdr(const Chunk *c, Png *png)
{
    if (c->type != T_IHDR)
        return cv_error(CV_INVALID_ARGUMENT, "%s: the first chunk is %s, not IHDR", BAD_HEADER,
                        c->name);
    if (c->length != 13)
        return cv_error(CV_INVALID_ARGUMENT, "%s: IHDR has %u bytes, not 13", BAD_HEADER,
                        c->length);
    const uint8_t *d = c->data;
    png->width = be32(d);
    png->height = be32(d + 4);
    png->depth = d[8];
    png->color = d[9];
    if (png->width == 0 || png->height == 0 || png->width > PNG_MAX_DIM ||
        png->height > PNG_MAX_DIM)
        return cv_error(CV_INVALID_ARGUMENT, "%s: image size %ux%u (width and height must be "
                        "1 to %u)", BAD_HEADER, png->width, png->height, PNG_MAX_DIM);
    int dp = png->depth;
    bool ok;
    switch (png->color) {
    case 0:
        ok = dp == 1 || dp == 2 || dp == 4 || dp == 8 || dp == 16;
        png->nc = 1;
        break;
    case 3:
        ok = dp == 1 || dp == 2 || dp == 4 || dp == 8;
        png->nc = 1;
        break;
    case 2:
    case 4:
    case 6:
        ok = dp == 8 || dp == 16;
        png->nc = png->color == 2 ? 3 : png->color == 4 ? 2 : 4;
        break;
    default:
        return cv_error(CV_INVALID_ARGUMENT, "%s: invalid color type %d", BAD_HEADER,
                        png->color);
    }
    if (!ok)
        return cv_error(CV_INVALID_ARGUMENT, "%s: invalid bit depth %d for color type %d",
                        BAD_HEADER, dp, png->color);
    if (d[10] != 0 || d[11] != 0 || d[12] > 1)
        return cv_error(CV_INVALID_ARGUMENT, "%s: unknown compression (%d), filter (%d) or "
                        "interlace (%d) method", BAD_HEADER, d[10], d[11], d[12]);
    png->interlaced = d[12] == 1;
    return CV_STATUS_OK;
}

/* Chunks between IHDR and the first IDAT. */
static CvStatus read_ancillary(const Chunk *c, Png *png)
{
    if (c->type == T_PLTE) {
        /* libpng's order of checks: a second PLTE is an error in any image,
         * one in a gray image is ignored, a bad length is an error only in
         * a palette image (except 0, always), a color image's is unused. */
        if (png->seen_plte)
            return cv_error(CV_INVALID_ARGUMENT, "%s: duplicate PLTE chunk", BAD_HEADER);
        png->seen_plte = true;
        if (!(png->color & 2))
            return CV_STATUS_OK;
        if (c->length % 3 || c->length > 768) {
            if (png->color != 3)
                return CV_STATUS_OK;
            return cv_error(CV_INVALID_ARGUMENT, "%s: invalid PLTE length %u", BAD_HEADER,
                            c->length);
        }
        if (c->length == 0)
            return cv_error(CV_INVALID_ARGUMENT, "%s: empty PLTE chunk", BAD_HEADER);
        if (png->color != 3)
            return CV_STATUS_OK; /* a suggested palette */
        int n = (int)(c->length / 3), max = 1 << png->depth;
        png->npalette = n < max ? n : max;
        memcpy(png->palette, c->data, (size_t)png->npalette * 3);
        return CV_STATUS_OK;
    }
    if (c->type == T_tRNS) {
        if (!c->crc_ok || png->has_trns)
            return CV_STATUS_OK;
        if (png->color == 3) {
            if (png->npalette == 0 || c->length == 0 || c->length > (uint32_t)png->npalette)
                return CV_STATUS_OK; /* out of place or invalid: ignored, as libpng */
            png->ntrns = (int)c->length;
            memcpy(png->trns_alpha, c->data, c->length);
            png->has_trns = true;
        } else if (png->color == 0 && c->length == 2) {
            png->trns_key[0] = (uint16_t)(c->data[0] << 8 | c->data[1]);
            png->has_trns = true;
        } else if (png->color == 2 && c->length == 6) {
            for (int i = 0; i < 3; i++)
                png->trns_key[i] = (uint16_t)(c->data[2 * i] << 8 | c->data[2 * i + 1]);
            png->has_trns = true;
        }
        /* libpng compares the key cut to the bit depth (0x0105 is 5 in an
         * 8-bit image). */
        if (png->depth < 16)
            for (int i = 0; i < 3; i++)
                png->trns_key[i] &= (uint16_t)((1u << png->depth) - 1u);
        return CV_STATUS_OK;
    }
    if (c->type == T_sBIT) {
        /* Only its R, G, B of 16-bit color images matter (the gamma tables). */
        uint32_t want = png->color == 2 ? 3u : png->color == 6 ? 4u : 0u;
        if (!c->crc_ok || png->seen_plte || want == 0 || c->length != want || png->sbit)
            return CV_STATUS_OK;
        int max = 0;
        for (uint32_t i = 0; i < want; i++) {
            if (c->data[i] == 0 || c->data[i] > png->depth)
                return CV_STATUS_OK; /* invalid: ignored */
            if (i < 3 && c->data[i] > max)
                max = c->data[i];
        }
        png->sbit = max;
        return CV_STATUS_OK;
    }
    if (c->type == T_gAMA || c->type == T_sRGB) {
        /* Before PLTE only; bad ones are ignored, as libpng does. */
        if (!c->crc_ok || png->seen_plte)
            return CV_STATUS_OK;
        if (c->type == T_sRGB && c->length == 1 && c->data[0] < 4 && !png->bad_gama)
            png->srgb = true;
        if (c->type == T_gAMA && c->length == 4 && png->gama == 0) {
            uint32_t g = be32(c->data);
            if (g >= 16 && g <= 625000000u)
                png->gama = (int32_t)g;
            else
                png->bad_gama = true; /* libpng then ignores a later sRGB too */
        }
        return CV_STATUS_OK;
    }
    if (c->type == T_IHDR)
        return cv_error(CV_INVALID_ARGUMENT, "%s: duplicate IHDR chunk", BAD_HEADER);
    if (c->type == T_IEND)
        return cv_error(CV_INVALID_ARGUMENT, "%s: no image data (IEND before any IDAT)",
                        BAD_HEADER);
    if (c->critical)
        return cv_error(CV_INVALID_ARGUMENT, "%s: unknown critical chunk %s", BAD_HEADER,
                        c->name);
    return CV_STATUS_OK;
}

/* Adam7 passes: x0, y0, dx, dy. A plain image is one pass 0, 0, 1, 1. */
static const uint8_t ADAM7[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                    {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
static const uint8_t PLAIN[1][4] = {{0, 0, 1, 1}};

static uint32_t pass_len(uint32_t n, unsigned start, unsigned step)
{
    return n > start ? (n - start + step - 1) / step : 0;
}

static uint64_t row_bytes(const Png *png, uint32_t w)
{
    return ((uint64_t)w * (uint64_t)png->nc * (uint64_t)png->depth + 7) / 8;
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    if (pa <= pb && pa <= pc)
        return a;
    return pb <= pc ? b : c;
}

/* Undo row filter `f` on `row` (n bytes) given the previous row (NULL for
 * the first of a pass). */
static void unfilter(int f, uint8_t *row, const uint8_t *prev, size_t n, size_t bpp)
{
    switch (f) {
    case 1:
        for (size_t i = bpp; i < n; i++)
            row[i] = (uint8_t)(row[i] + row[i - bpp]);
        break;
    case 2:
        if (prev)
            for (size_t i = 0; i < n; i++)
                row[i] = (uint8_t)(row[i] + prev[i]);
        break;
    case 3:
        for (size_t i = 0; i < n; i++) {
            int a = i >= bpp ? row[i - bpp] : 0, b = prev ? prev[i] : 0;
            row[i] = (uint8_t)(row[i] + ((a + b) >> 1));
        }
        break;
    case 4:
        for (size_t i = 0; i < n; i++) {
            int a = i >= bpp ? row[i - bpp] : 0, b = prev ? prev[i] : 0;
            int c = (prev && i >= bpp) ? prev[i - bpp] : 0;
            row[i] = (uint8_t)(row[i] + paeth(a, b, c));
        }
        break;
    default:
        break;
    }
}

/* The samples of `n` values of an unfiltered row. */
static void unpack(const Png *png, const uint8_t *p, size_t n, uint16_t *s)
{
    if (png->depth == 16) {
        for (size_t i = 0; i < n; i++)
            s[i] = (uint16_t)(p[2 * i] << 8 | p[2 * i + 1]);
    } else if (png->depth == 8) {
        for (size_t i = 0; i < n; i++)
            s[i] = p[i];
    } else {
        unsigned d = (unsigned)png->depth, per = 8 / d, mask = (1u << d) - 1;
        for (size_t i = 0; i < n; i++) {
            unsigned shift = 8 - d * (unsigned)(i % per + 1);
            s[i] = (uint16_t)((p[i / per] >> shift) & mask);
        }
    }
}

/* libpng's rgb_to_gray with its default coefficients and no gamma: rounded
 * for 16-bit samples, truncated for 8-bit ones. */
static uint32_t to_gray(uint32_t r, uint32_t g, uint32_t b, bool wide)
{
    return (9797u * r + 19234u * g + 3737u * b + (wide ? 16384u : 0u)) >> 15;
}

/* libpng's fixed-point gamma helpers (its floating-point builds). */
static int32_t reciprocal(int32_t a)
{
    double r = floor(1e10 / a + .5);
    return r <= 2147483647. && r >= -2147483648. ? (int32_t)r : 0;
}

static bool gamma_significant(int32_t g)
{
    return g < 100000 - 5000 || g > 100000 + 5000;
}

static void gamma_table(uint8_t *table, int32_t g)
{
    for (int i = 0; i < 256; i++) {
        if (gamma_significant(g) && i > 0 && i < 255)
            table[i] = (uint8_t)floor(255 * pow(i / 255., g * .00001) + .5);
        else
            table[i] = (uint8_t)i;
    }
}

static int32_t reciprocal2(int32_t a, int32_t b)
{
    double r = floor(1e15 / a / b + .5);
    return r <= 2147483647. && r >= -2147483648. ? (int32_t)r : 0;
}

static int32_t product2(int32_t a, int32_t b)
{
    double r = floor(a * 1e-5 * b + .5);
    return r <= 2147483647. && r >= -2147483648. ? (int32_t)r : 0;
}

static uint16_t gamma16_correct(unsigned v, int32_t g)
{
    if (v > 0 && v < 65535)
        return (uint16_t)floor(65535 * pow(v / 65535., g * .00001) + .5);
    return (uint16_t)v;
}

/* libpng's 16-bit table for samples of 16 - shift significant bits. */
static uint16_t *gamma_table16(unsigned shift, int32_t g)
{
    const unsigned n = 1u << (16 - shift), max = n - 1, half = 1u << (15 - shift);
    const double fmax = 1.0 / max;
    uint16_t *t = malloc(n * sizeof(uint16_t));
    if (!t)
        return NULL;
    for (unsigned ig = 0; ig < n; ig++) {
        if (gamma_significant(g))
            t[ig] = (uint16_t)floor(65535. * pow(ig * fmax, g * .00001) + .5);
        else
            t[ig] = (uint16_t)(shift ? (ig * 65535u + half) / max : ig);
    }
    return t;
}

/* libpng's table for 16-bit samples that end as 8 bits: each input maps to
 * the nearest i * 257 after gamma. */
static uint16_t *gamma_table16to8(unsigned shift, int32_t g)
{
    const unsigned n = 1u << (16 - shift), max = n - 1;
    uint16_t *t = malloc(n * sizeof(uint16_t));
    if (!t)
        return NULL;
    unsigned last = 0;
    for (unsigned i = 0; i < 255; i++) {
        unsigned out = i * 257u;
        uint32_t bound = gamma16_correct(out + 128u, g);
        bound = (bound * max + 32768u) / 65535u + 1u;
        while (last < bound && last < n)
            t[last++] = (uint16_t)out;
    }
    while (last < n)
        t[last++] = 65535u;
    return t;
}

/* A file gamma (gAMA, or sRGB's 45455) with no screen gamma set, as in
 * TensorFlow, makes libpng's screen gamma its reciprocal: no correction
 * overall, but rgb_to_gray then mixes linear values: each sample through
 * the file's gamma, the weighted sum rounded, back through the screen's. */
static CvStatus build_gamma(Png *png, int channels, bool out16)
{
    int32_t g = png->srgb ? 45455 : png->gama;
    if (channels != 1 || !(png->color & 2) || g == 0)
        return CV_STATUS_OK;
    int32_t screen = reciprocal(g);
    if (!gamma_significant(g) && !gamma_significant(screen))
        return CV_STATUS_OK;
    int32_t from = screen > 0 ? reciprocal(screen) : g;
    if (png->depth <= 8) {
        gamma_table(png->to_linear, reciprocal(g));
        gamma_table(png->from_linear, from);
    } else {
        /* The significant bits (sBIT), at most 11 when the output is 8-bit. */
        unsigned sh = png->sbit > 0 && png->sbit < 16 ? 16u - (unsigned)png->sbit : 0u;
        if (!out16 && sh < 5)
            sh = 5;
        if (sh > 8)
            sh = 8;
        png->gamma_shift = sh;
        png->to_linear16 = gamma_table16(sh, reciprocal(g));
        png->from_linear16 = gamma_table16(sh, from);
        png->same16 = out16 ? gamma_table16(sh, screen > 0 ? reciprocal2(g, screen) : 100000)
                            : gamma_table16to8(sh, screen > 0 ? product2(g, screen) : 100000);
        if (!png->to_linear16 || !png->from_linear16 || !png->same16)
            return cv_error_nomem();
    }
    png->gamma_gray = true;
    return CV_STATUS_OK;
}

/* One pixel as `channels` values at the working depth (16 bits for 16-bit
 * images, 8 otherwise). */
static void convert_pixel(const Png *png, int channels, const uint16_t *s, uint32_t *v)
{
    const bool wide = png->depth == 16;
    const uint32_t maxv = wide ? 65535u : 255u;
    uint32_t r, g, b, a = maxv;
    bool color = false, alpha = false;
    switch (png->color) {
    case 0:
        r = s[0];
        if (png->depth < 8)
            r = r * 255u / ((1u << png->depth) - 1u);
        g = b = r;
        if (png->has_trns) {
            alpha = true;
            a = s[0] == png->trns_key[0] ? 0 : maxv;
        }
        break;
    case 2:
        r = s[0], g = s[1], b = s[2];
        color = true;
        if (png->has_trns) {
            alpha = true;
            a = (r == png->trns_key[0] && g == png->trns_key[1] && b == png->trns_key[2]) ? 0
                                                                                          : maxv;
        }
        break;
    case 3: {
        unsigned i = s[0];
        color = true;
        if ((int)i < png->npalette) {
            r = png->palette[i][0], g = png->palette[i][1], b = png->palette[i][2];
        } else {
            r = g = b = 0; /* an index past the palette: black, as libpng's zeroed palette */
        }
        if (png->has_trns) {
            alpha = true;
            a = (int)i < png->ntrns ? png->trns_alpha[i] : 255u;
        }
        break;
    }
    case 4:
        r = g = b = s[0];
        a = s[1];
        alpha = true;
        break;
    default:
        r = s[0], g = s[1], b = s[2];
        a = s[3];
        alpha = true;
        color = true;
        break;
    }
    switch (channels) {
    case 1:
        if (color && png->gamma_gray && wide) {
            const unsigned sh = png->gamma_shift;
            if (r == g && r == b) {
                v[0] = png->same16[r >> sh];
            } else {
                uint32_t gray = (9797u * png->to_linear16[r >> sh] +
                                 19234u * png->to_linear16[g >> sh] +
                                 3737u * png->to_linear16[b >> sh] + 16384u) >> 15;
                v[0] = png->from_linear16[gray >> sh];
            }
        } else if (color && png->gamma_gray && (r != g || r != b))
            v[0] = png->from_linear[(9797u * png->to_linear[r] + 19234u * png->to_linear[g] +
                                     3737u * png->to_linear[b] + 16384u) >> 15];
        else
            v[0] = color ? to_gray(r, g, b, wide) : r;
        break;
    case 2:
        v[0] = r;
        v[1] = a;
        break;
    case 3:
        v[0] = r, v[1] = g, v[2] = b;
        break;
    default:
        v[0] = r, v[1] = g, v[2] = b;
        if (!alpha) /* libpng's filler 0xff, cut to the bit depth of a low-depth image */
            a = wide ? 65535u : (png->color == 0 || png->color == 3) && png->depth < 8
                                    ? (1u << png->depth) - 1u
                                    : 255u;
        v[3] = a;
        break;
    }
}

/* The IDAT reading. The zlib stream is inflated as libpng does it for
 * TensorFlow, because that decides which damage is an error: one row at a
 * time (avail_out is the row), the input in pieces of at most 8192 bytes of
 * one IDAT chunk. A zlib error while a row is being produced fails the
 * decode; once the last row is complete, inflate calls into a 1024-byte
 * scratch buffer look for the end of the stream, for as long as the stream
 * gives more data, and a zlib error or extra data found then is ignored
 * (libpng's benign "Extra compressed data" and late zlib errors). Running
 * out of IDAT chunks while data is still needed (rows, or input for one of
 * those calls) is an error. */
#define IDAT_READ_SIZE 8192u

typedef struct IdatReader {
    Reader *r;
    Chunk *c;    /* the current chunk */
    size_t used; /* bytes of it given to zlib */
} IdatReader;

static CvStatus feed(IdatReader *in, z_stream *zs)
{
    while (in->used == in->c->length) {
        CvStatus s = next_chunk(in->r, in->c, BAD_DATA);
        if (s)
            return s;
        in->used = 0;
        if (in->c->type != T_IDAT)
            return cv_error(CV_INVALID_ARGUMENT, "%s: not enough image data (the IDAT chunks "
                            "end before the image does)", BAD_DATA);
    }
    size_t n = in->c->length - in->used;
    if (n > IDAT_READ_SIZE)
        n = IDAT_READ_SIZE;
    zs->next_in = (Bytef *)(uintptr_t)(in->c->data + in->used);
    zs->avail_in = (uInt)n;
    in->used += n;
    return CV_STATUS_OK;
}

/* Inflate the IDAT chunks, starting with `c`, into raw: the rows of every
 * pass one after the other, each a filter byte and row_bytes. On return *c
 * is the first chunk after the IDATs. */
static CvStatus inflate_idat(const Png *png, Reader *r, Chunk *c, uint8_t *raw)
{
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    /* windowBits 0: the window the stream's header declares, as libpng
     * (a distance past it is an error, not silently accepted). */
    if (inflateInit2(&zs, 0) != Z_OK)
        return cv_error_nomem();
    CvStatus s = CV_STATUS_OK;
    IdatReader in = {r, c, 0};
    bool ended = false;
    uint8_t *pos = raw;
    const int npass = png->interlaced ? 7 : 1;
    for (int p = 0; p < npass; p++) {
        const uint8_t *g = png->interlaced ? ADAM7[p] : PLAIN[0];
        const uint32_t pw = pass_len(png->width, g[0], g[2]), ph = pass_len(png->height, g[1], g[3]);
        if (pw == 0 || ph == 0)
            continue;
        const size_t len = (size_t)row_bytes(png, pw) + 1;
        for (uint32_t j = 0; j < ph; j++, pos += len) {
            zs.next_out = pos;
            zs.avail_out = (uInt)len;
            while (zs.avail_out > 0) {
                if (ended) {
                    s = cv_error(CV_INVALID_ARGUMENT, "%s: not enough image data (the compressed "
                                 "data ends in row %u of pass %d)", BAD_DATA, (unsigned)j, p + 1);
                    goto done;
                }
                if (zs.avail_in == 0 && (s = feed(&in, &zs)))
                    goto done;
                int z = inflate(&zs, Z_NO_FLUSH);
                if (z == Z_STREAM_END) {
                    ended = true;
                } else if (z == Z_MEM_ERROR) {
                    s = cv_error_nomem();
                    goto done;
                } else if (z != Z_OK) {
                    s = cv_error(CV_INVALID_ARGUMENT, "%s: the compressed image data is corrupt "
                                 "(%s)", BAD_DATA, zs.msg ? zs.msg : "zlib error");
                    goto done;
                }
            }
        }
    }
    /* After the last row: inflate on while that gives more (extra) data. */
    size_t extra = 0;
    while (!ended) {
        uint8_t scratch[1024];
        if (zs.avail_in == 0 && (s = feed(&in, &zs)))
            goto done;
        zs.next_out = scratch;
        zs.avail_out = sizeof(scratch);
        int z = inflate(&zs, Z_NO_FLUSH);
        extra += sizeof(scratch) - zs.avail_out;
        if (z != Z_OK || extra == 0)
            break;
    }
    while (c->type == T_IDAT && !(s = next_chunk(r, c, BAD_DATA)))
        ;
done:
    inflateEnd(&zs);
    return s;
}

/* Unfilter and convert every row of `raw` into out. */
static CvStatus decode_rows(const Png *png, uint8_t *raw, int channels, bool out16,
                            uint16_t *samples, CvTensor *out)
{
    const int npass = png->interlaced ? 7 : 1;
    const uint8_t(*passes)[4] = png->interlaced ? ADAM7 : PLAIN;
    const size_t bpp = png->nc * png->depth >= 8 ? (size_t)(png->nc * png->depth / 8) : 1;
    const size_t out_row = (size_t)png->width * (size_t)channels;
    const bool wide = png->depth == 16;
    /* Rows that are already the output: copied (8-bit) or byte-swapped. */
    const bool same = png->color != 3 && channels == png->nc && !png->interlaced &&
                      ((png->depth == 8 && !out16) || (wide && out16));
    uint8_t *pos = raw;
    for (int p = 0; p < npass; p++) {
        const unsigned x0 = passes[p][0], y0 = passes[p][1], dx = passes[p][2], dy = passes[p][3];
        const uint32_t pw = pass_len(png->width, x0, dx), ph = pass_len(png->height, y0, dy);
        if (pw == 0 || ph == 0)
            continue;
        const size_t rb = (size_t)row_bytes(png, pw);
        const uint8_t *prev = NULL;
        for (uint32_t j = 0; j < ph; j++, pos += rb + 1) {
            int f = pos[0];
            uint8_t *row = pos + 1;
            if (f > 4)
                return cv_error(CV_INVALID_ARGUMENT, "%s: bad adaptive filter value %d in row %u",
                                BAD_DATA, f, (unsigned)(y0 + (uint64_t)j * dy));
            unfilter(f, row, prev, rb, bpp);
            prev = row;
            const size_t y = y0 + (size_t)j * dy;
            if (same) {
                if (!out16) {
                    memcpy(out->data + y * out_row, row, out_row);
                } else {
                    uint16_t *o = (uint16_t *)out->data + y * out_row;
                    for (size_t i = 0; i < out_row; i++)
                        o[i] = (uint16_t)(row[2 * i] << 8 | row[2 * i + 1]);
                }
                continue;
            }
            unpack(png, row, (size_t)pw * (size_t)png->nc, samples);
            for (uint32_t i = 0; i < pw; i++) {
                uint32_t v[4];
                convert_pixel(png, channels, samples + (size_t)i * (size_t)png->nc, v);
                const size_t at = y * out_row + (size_t)(x0 + (uint64_t)i * dx) * channels;
                if (out16) {
                    uint16_t *o = (uint16_t *)out->data + at;
                    for (int k = 0; k < channels; k++)
                        o[k] = (uint16_t)(wide ? v[k] : v[k] * 257u);
                } else {
                    uint8_t *o = (uint8_t *)out->data + at;
                    for (int k = 0; k < channels; k++)
                        o[k] = (uint8_t)(wide ? v[k] >> 8 : v[k]);
                }
            }
        }
    }
    return CV_STATUS_OK;
}

CvStatus cv_png_decode(const uint8_t *data, size_t size, const CvPngOptions *o, CvTensor *out)
{
    memset(out, 0, sizeof(*out));
    if (size == 0)
        return cv_error(CV_INVALID_ARGUMENT, "Input is empty.");
    if (o->channels != 0 && o->channels != 1 && o->channels != 3 && o->channels != 4)
        return cv_error(CV_INVALID_ARGUMENT, "`channels` must be 0, 1, 3 or 4 but got %d",
                        o->channels);
    if (size < 8 || memcmp(data, "\x89PNG\r\n\x1a\n", 8) != 0)
        return cv_error(CV_INVALID_ARGUMENT, "%s: no PNG signature", BAD_HEADER);
    Png *png = calloc(1, sizeof(*png));
    if (!png)
        return cv_error_nomem();
    uint8_t *raw = NULL;
    uint16_t *samples = NULL;
    Reader r = {data, size, 8};
    Chunk c;
    CvStatus s = next_chunk(&r, &c, BAD_HEADER);
    if (!s)
        s = read_ihdr(&c, png);
    while (!s) {
        s = next_chunk(&r, &c, BAD_HEADER);
        if (s || c.type == T_IDAT)
            break;
        s = read_ancillary(&c, png);
    }
    if (s)
        goto done;
    if (png->color == 3 && png->npalette == 0) {
        s = cv_error(CV_INVALID_ARGUMENT, "%s: a palette image without a PLTE chunk", BAD_HEADER);
        goto done;
    }

    const int channels = o->channels ? o->channels
                         : png->color == 3 ? (png->has_trns ? 4 : 3)
                                           : png->nc;
    s = build_gamma(png, channels, o->uint16);
    if (s)
        goto done;
    const int64_t pixels = (int64_t)png->width * (int64_t)png->height;
    if (o->max_pixels > 0 && pixels > o->max_pixels) {
        s = cv_error(CV_INVALID_ARGUMENT,
                     "PNG image of %ux%u pixels (%lld) exceeds the limit of %lld pixels (a "
                     "decompression bomb?); raise it with conveyor.io.set_max_image_pixels()",
                     png->width, png->height, (long long)pixels, (long long)o->max_pixels);
        goto done;
    }
    if (pixels * channels > INT_MAX) {
        s = cv_error(CV_INVALID_ARGUMENT, "PNG size too large for int: %u by %u", png->width,
                     png->height);
        goto done;
    }
    uint64_t raw_size = 0;
    const int npass = png->interlaced ? 7 : 1;
    for (int p = 0; p < npass; p++) {
        const uint8_t *g = png->interlaced ? ADAM7[p] : PLAIN[0];
        uint32_t pw = pass_len(png->width, g[0], g[2]), ph = pass_len(png->height, g[1], g[3]);
        if (pw && ph)
            raw_size += (uint64_t)ph * (1 + row_bytes(png, pw));
    }
    if (raw_size > SIZE_MAX / 2) {
        s = cv_error_nomem();
        goto done;
    }
    raw = malloc((size_t)raw_size);
    samples = malloc((size_t)png->width * (size_t)png->nc * sizeof(uint16_t));
    if (!raw || !samples) {
        s = cv_error_nomem();
        goto done;
    }
    s = inflate_idat(png, &r, &c, raw);
    /* The chunks after the image data, up to IEND. */
    while (!s && c.type != T_IEND) {
        if (c.type == T_IHDR || (c.type == T_PLTE && png->seen_plte))
            s = cv_error(CV_INVALID_ARGUMENT, "%s: %s chunk after the image data", BAD_DATA,
                         c.name);
        else if (c.type == T_PLTE) /* a first PLTE after the image: ignored, as libpng */
            s = next_chunk(&r, &c, BAD_DATA);
        else if (c.critical && c.type != T_IDAT)
            s = cv_error(CV_INVALID_ARGUMENT, "%s: unknown critical chunk %s", BAD_DATA, c.name);
        else
            s = next_chunk(&r, &c, BAD_DATA);
    }
    if (s)
        goto done;
    int64_t shape[3] = {png->height, png->width, channels};
    s = cv_tensor_alloc(out, o->uint16 ? CV_UINT16 : CV_UINT8, 3, shape, 0, NULL);
    if (!s)
        s = decode_rows(png, raw, channels, o->uint16, samples, out);
done:
    if (s)
        cv_tensor_clear(out);
    free(samples);
    free(raw);
    free(png->to_linear16);
    free(png->from_linear16);
    free(png->same16);
    free(png);
    return s;
}
