/* ResizeBilinear(images[, size]): tf.image.resize(method='bilinear', antialias=False),
 * i.e. TensorFlow's ResizeBilinear with half_pixel_centers=True. Attributes:
 * the common resize layout (ops/resize_common.h). Output float32.
 *
 * Output pixel (y, x) samples the input at ((y + 0.5) * scale - 0.5, ...),
 * between the clamped floor and ceil rows/columns, with TensorFlow's lerp
 * form: top = tl + (tr - tl) * dx, then top + (bottom - top) * dy. The
 * horizontal lerps of each needed input row are computed once (two-row
 * cache), then each output row is one vectorizable pass over two rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/resize_common.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef struct {
    int64_t lo, hi; /* source indices (columns: already times channels) */
    float lerp;
} Lerp;

/* half: TensorFlow's HalfPixelScaler, else its LegacyScaler (i * scale). */
static void bilinear_lerps(int64_t out_size, int64_t in_size, float scale, bool half,
                           int64_t stride, Lerp *l)
{
    for (int64_t i = 0; i < out_size; i++) {
        float in = half ? ((float)i + 0.5f) * scale - 0.5f : (float)i * scale;
        float f = floorf(in);
        int64_t lo = (int64_t)f, hi = (int64_t)ceilf(in);
        l[i].lo = (lo > 0 ? lo : 0) * stride;
        l[i].hi = (hi < in_size - 1 ? hi : in_size - 1) * stride;
        l[i].lerp = in - f;
    }
}

/* dst[x, :] = lerp of src's columns xs[x], src already float. For 3 and 4
 * channels a pixel is one 4-lane vector: src and dst have one float of
 * padding past the row (a 3-channel store spills into the next pixel, which
 * is written after). */
static void lerp_row(const float *restrict src, const Lerp *xs, int64_t out_w, int64_t c,
                     float *restrict dst)
{
    if (c == 3 || c == 4) {
        for (int64_t x = 0; x < out_w; x++) {
            cv_v4f a = cv_v4f_load(src + xs[x].lo), b = cv_v4f_load(src + xs[x].hi);
            float t = xs[x].lerp;
            cv_v4f_store(dst + x * c, a + (b - a) * cv_v4f_splat(t));
        }
    } else if (c == 1) {
        for (int64_t x = 0; x < out_w; x++) {
            float a = src[xs[x].lo], b = src[xs[x].hi];
            dst[x] = a + (b - a) * xs[x].lerp;
        }
    } else {
        for (int64_t x = 0; x < out_w; x++) {
            const float *a = src + xs[x].lo, *b = src + xs[x].hi;
            float t = xs[x].lerp;
            for (int64_t k = 0; k < c; k++)
                dst[x * c + k] = a[k] + (b[k] - a[k]) * t;
        }
    }
}

/* The same for uint8 or float32 rows of 3 or 4 channels read in place,
 * converting each pixel as it is loaded. A 4-lane load of a 3-channel pixel
 * reads one value past it: pixels from `edge` on (those touching the last
 * column) are loaded lane by lane so the row's end is never overrun. */
static inline cv_v4f load4_u8(const uint8_t *p)
{
#ifdef __SSE2__ /* zero-extend 4 bytes to 4 ints, then convert: 4 instructions */
    int32_t bits;
    memcpy(&bits, p, sizeof(bits));
    __m128i zero = _mm_setzero_si128();
    __m128i v = _mm_unpacklo_epi8(_mm_cvtsi32_si128(bits), zero);
    return (cv_v4f)_mm_cvtepi32_ps(_mm_unpacklo_epi16(v, zero));
#else
    return (cv_v4f){(float)p[0], (float)p[1], (float)p[2], (float)p[3]};
#endif
}

static inline cv_v4f load3_u8(const uint8_t *p)
{
    return (cv_v4f){(float)p[0], (float)p[1], (float)p[2], 0.0f};
}

static inline cv_v4f load3_f32(const float *p)
{
    return (cv_v4f){p[0], p[1], p[2], 0.0f};
}

#define FUSED_LERP_ROW(NAME, T, LOAD4, LOAD3)                                                      \
    static void NAME(const T *restrict src, const Lerp *xs, int64_t out_w, int64_t c,              \
                     int64_t edge, float *restrict dst)                                            \
    {                                                                                              \
        int64_t x = 0;                                                                             \
        for (; x < edge; x++) {                                                                    \
            cv_v4f a = LOAD4(src + xs[x].lo), b = LOAD4(src + xs[x].hi);                           \
            float t = xs[x].lerp;                                                                  \
            cv_v4f_store(dst + x * c, a + (b - a) * cv_v4f_splat(t));                              \
        }                                                                                          \
        for (; x < out_w; x++) {                                                                   \
            cv_v4f a = LOAD3(src + xs[x].lo), b = LOAD3(src + xs[x].hi);                           \
            float t = xs[x].lerp;                                                                  \
            cv_v4f_store(dst + x * c, a + (b - a) * cv_v4f_splat(t));                              \
        }                                                                                          \
    }

FUSED_LERP_ROW(lerp_row_u8, uint8_t, load4_u8, load3_u8)
FUSED_LERP_ROW(lerp_row_f32, float, cv_v4f_load, load3_f32)
#undef FUSED_LERP_ROW

/* lerp_row_u8 two pixels per 8-lane vector where the CPU has AVX2 (the
 * same operations lane by lane, so the same floats): the horizontal pass
 * of a decoded photo is most of a resize's time. Pixels from `edge` on go
 * to lerp_row_u8. Stores go in pixel order, as there. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_ROW 1

__attribute__((target("avx2"))) static inline __m128i load_u32(const uint8_t *p)
{
    int32_t bits;
    memcpy(&bits, p, sizeof(bits));
    return _mm_cvtsi32_si128(bits);
}

__attribute__((target("avx2"))) static void lerp_row_u8_avx2(const uint8_t *restrict src,
                                                              const Lerp *xs, int64_t out_w,
                                                              int64_t c, int64_t edge,
                                                              float *restrict dst)
{
    int64_t x = 0;
    for (; x + 1 < edge; x += 2) {
        __m128i lo = _mm_unpacklo_epi32(load_u32(src + xs[x].lo), load_u32(src + xs[x + 1].lo));
        __m128i hi = _mm_unpacklo_epi32(load_u32(src + xs[x].hi), load_u32(src + xs[x + 1].hi));
        __m256 a = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo));
        __m256 b = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi));
        __m256 t = _mm256_set_m128(_mm_set1_ps(xs[x + 1].lerp), _mm_set1_ps(xs[x].lerp));
        __m256 r = _mm256_add_ps(a, _mm256_mul_ps(_mm256_sub_ps(b, a), t));
        _mm_storeu_ps(dst + x * c, _mm256_castps256_ps128(r));
        _mm_storeu_ps(dst + (x + 1) * c, _mm256_extractf128_ps(r, 1));
    }
    lerp_row_u8(src, xs + x, out_w - x, c, edge - x, dst + x * c);
}
#endif

CV_CLONES_AVX2
static void lerp_rows(const float *restrict top, const float *restrict bottom, float t, int64_t n,
                      float *restrict out)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = top[i] + (bottom[i] - top[i]) * t;
}

/* in / out, or (in - 1) / (out - 1) with align_corners, in float32 as
 * TensorFlow's CalculateResizeScale. */
static float bilinear_scale(int64_t in_size, int64_t out_size, bool align)
{
    return align && out_size > 1 ? (float)(in_size - 1) / (float)(out_size - 1)
                                 : cv_resize_scale(in_size, out_size);
}

CvStatus cv_resize_bilinear(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                            const CvOpContext *ctx, bool align_corners, bool half_pixel_centers)
{
    CvResizeGeom g;
    CvStatus s = cv_resize_setup(attrs, in, num_in, &g);
    if (!s && ctx->epilogue && !cv_epilogue_fits(ctx->epilogue, ctx->num_epilogues, g.channels))
        s = cv_error(CV_INTERNAL, "ResizeBilinear: a per-channel epilogue does not fit %lld "
                     "channels", (long long)g.channels);
    if (s || (s = cv_resize_alloc(&g, CV_FLOAT32, &out[0], ctx)) || g.batch == 0)
        return s;
    float *dst = (float *)out[0].data;
    if (g.out_h == g.in_h && g.out_w == g.in_w) { /* as TensorFlow: a plain cast */
        cv_resize_load_row(in[0].dtype, in[0].data, cv_tensor_num_elements(&in[0]), dst);
        if (ctx->epilogue)
            cv_epilogue_apply(ctx->epilogue, ctx->num_epilogues, dst,
                              cv_tensor_num_elements(&out[0]));
        return CV_STATUS_OK;
    }
    int64_t c = g.channels, in_row = g.in_w * c, out_row = g.out_w * c;
    size_t in_row_bytes = (size_t)in_row * g.in_item;
    /* One block: column and row lerps, the converted source row, two
     * filtered rows; each float row has 4 floats of padding. */
    size_t bytes = (size_t)(g.out_w + g.out_h) * sizeof(Lerp) +
                   ((size_t)in_row + 2 * (size_t)out_row + 12) * sizeof(float);
    Lerp *xs = malloc(bytes);
    if (!xs) {
        cv_tensor_clear(&out[0]);
        return cv_error(CV_RESOURCE_EXHAUSTED, "out of memory resizing an image");
    }
    Lerp *ys = xs + g.out_w;
    float *conv = (float *)(ys + g.out_h);
    CvRowCache cache = {.slot = {conv + in_row + 4, conv + in_row + out_row + 8}};
    conv[in_row] = 0.0f; /* the padding lane a 3-channel load reads */
    bool half = half_pixel_centers;
    bilinear_lerps(g.out_w, g.in_w, bilinear_scale(g.in_w, g.out_w, align_corners), half, c, xs);
    bilinear_lerps(g.out_h, g.in_h, bilinear_scale(g.in_h, g.out_h, align_corners), half, 1, ys);
    bool fused = (c == 3 || c == 4) && (in[0].dtype == CV_UINT8 || in[0].dtype == CV_FLOAT32);
#ifdef HAVE_AVX2_ROW
    bool avx2 = __builtin_cpu_supports("avx2");
#endif
    int64_t edge = g.out_w;
    while (c == 3 && edge > 0 && xs[edge - 1].hi + 4 > in_row)
        edge--;
    for (int64_t b = 0; b < g.batch; b++) {
        const char *image = in[0].data + (size_t)(b * g.in_h) * in_row_bytes;
        cv_row_cache_reset(&cache);
        for (int64_t y = 0; y < g.out_h; y++) {
            float *rows[2];
            int64_t want[2] = {ys[y].lo, ys[y].hi};
            for (int k = 0; k < 2; k++) {
                int victim;
                rows[k] = cv_row_cache_find(&cache, want[k], &victim);
                if (!rows[k]) {
                    const char *src = image + (size_t)want[k] * in_row_bytes;
                    rows[k] = cv_row_cache_claim(&cache, victim, want[k]);
                    if (fused && in[0].dtype == CV_UINT8) {
#ifdef HAVE_AVX2_ROW
                        if (avx2)
                            lerp_row_u8_avx2((const uint8_t *)src, xs, g.out_w, c, edge, rows[k]);
                        else
#endif
                            lerp_row_u8((const uint8_t *)src, xs, g.out_w, c, edge, rows[k]);
                    } else if (fused) {
                        lerp_row_f32((const float *)src, xs, g.out_w, c, edge, rows[k]);
                    } else {
                        cv_resize_load_row(in[0].dtype, src, in_row, conv);
                        lerp_row(conv, xs, g.out_w, c, rows[k]);
                    }
                }
            }
            float *row = dst + ((b * g.out_h) + y) * out_row;
            lerp_rows(rows[0], rows[1], ys[y].lerp, out_row, row);
            if (ctx->epilogue) /* while the row is in L1 */
                cv_epilogue_apply(ctx->epilogue, ctx->num_epilogues, row, out_row);
        }
    }
    free(xs);
    return CV_STATUS_OK;
}

static CvStatus bilinear_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                             int num_out, CvOpContext *ctx)
{
    (void)num_out;
    return cv_resize_bilinear(attrs, in, num_in, out, ctx, false, true);
}

const CvOp cv_op_resize_bilinear = {
    .name = "ResizeBilinear", .min_inputs = 1, .max_inputs = 2, .run = bilinear_run,
    .takes_epilogue = true,
    .int_attrs = cv_resize_int_attrs};
