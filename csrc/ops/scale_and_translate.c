/* ScaleAndTranslate(images[, size]): the filtered resize behind tf.image.resize with
 * antialias=True and the lanczos3/lanczos5/gaussian/mitchellcubic methods
 * (TensorFlow's ScaleAndTranslate with scale = out / in, translation 0).
 * Attributes: the common resize layout (ops/resize_common.h), then ints[3]
 * antialias (0 or 1); string: the kernel ("triangle", "keyscubic",
 * "lanczos1", "lanczos3", "lanczos5", "gaussian", "box", "mitchellcubic").
 * Output float32.
 *
 * Output pixel x samples the input at (x + 0.5) / scale; the kernel is
 * stretched by 1 / scale when downscaling with antialias, and the weights of
 * the input pixels under it are normalized to sum to 1. Rows first (each
 * output row is a weighted sum of input rows, converted on the fly), then
 * columns, in TensorFlow's order and float32 arithmetic. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/resize_common.h"

typedef enum { K_LANCZOS, K_GAUSSIAN, K_BOX, K_TRIANGLE, K_KEYS, K_MITCHELL } KernelKind;

typedef struct {
    const char *name;
    KernelKind kind;
    float radius;
} Kernel;

static const Kernel kernels[] = {
    {"lanczos1", K_LANCZOS, 1.0f},  {"lanczos3", K_LANCZOS, 3.0f}, {"lanczos5", K_LANCZOS, 5.0f},
    {"gaussian", K_GAUSSIAN, 1.5f}, {"box", K_BOX, 1.0f},          {"triangle", K_TRIANGLE, 1.0f},
    {"keyscubic", K_KEYS, 2.0f},    {"mitchellcubic", K_MITCHELL, 2.0f},
};

/* The kernel's value at distance x >= 0, in TensorFlow's float32 formulas. */
static float kernel_value(const Kernel *k, float x)
{
    switch (k->kind) {
    case K_LANCZOS: {
        const float pi = 3.14159265359f;
        if (x > k->radius)
            return 0.0f;
        if (x <= 1e-3) /* sin(x) / x at 0 */
            return 1.0f;
        return k->radius * sinf(pi * x) * sinf(pi * x / k->radius) / (pi * pi * x * x);
    }
    case K_GAUSSIAN: { /* sigma = radius / 3 */
        float sigma = k->radius / 3.0f;
        if (x >= k->radius)
            return 0.0f;
        return (float)exp(-x * x / (2.0 * sigma * sigma));
    }
    case K_BOX:
        return x < 0.5f ? 1.0f : x == 0.5f ? 0.5f : 0.0f;
    case K_TRIANGLE:
        return x < 1.0f ? 1.0f - x : 0.0f;
    case K_KEYS: /* Keys' cubic, a = -0.5 */
        if (x >= 2.0f)
            return 0.0f;
        if (x >= 1.0f)
            return ((-0.5f * x + 2.5f) * x - 4.0f) * x + 2.0f;
        return ((1.5f * x - 2.5f) * x) * x + 1.0f;
    case K_MITCHELL: /* Mitchell-Netravali, B = C = 1/3 */
        if (x >= 2.0f)
            return 0.0f;
        if (x >= 1.0f)
            return (((-7.0f / 18.0f) * x + 2.0f) * x - 10.0f / 3.0f) * x + 16.0f / 9.0f;
        return (((7.0f / 6.0f) * x - 2.0f) * x) * x + 8.0f / 9.0f;
    }
    return 0.0f;
}

/* Per output index: the first input index and `size` weights (zero past the
 * pixel's own span). `taps[i]` = how many of them lie inside the input. */
typedef struct {
    int size;
    int64_t *start;
    int *taps;
    float *weights; /* [out_size][size] */
} Spans;

static void compute_spans(const Kernel *k, int64_t out_size, int64_t in_size, bool antialias,
                          Spans *sp)
{
    float scale = (float)out_size / (float)in_size;
    float inv_scale = (float)(1.0 / (double)scale);
    float kernel_scale = antialias && inv_scale > 1.0f ? inv_scale : 1.0f;
    float reach = k->radius * kernel_scale, one_over_kernel_scale = 1.0f / kernel_scale;
    for (int64_t x = 0; x < out_size; x++) {
        float *w = sp->weights + x * sp->size;
        float sample = ((float)x + 0.5f) * inv_scale;
        sp->start[x] = 0;
        memset(w, 0, (size_t)sp->size * sizeof(float));
        if (sample < 0 || sample > (float)in_size) { /* outside the image: no taps */
            sp->taps[x] = (int)(sp->size < in_size ? sp->size : in_size);
            continue;
        }
        int64_t start = (int64_t)ceilf(sample - reach - 0.5f);
        int64_t end = (int64_t)floorf(sample + reach - 0.5f);
        start = start < 0 ? 0 : start > in_size - 1 ? in_size - 1 : start;
        end = (end < 0 ? 0 : end > in_size - 1 ? in_size - 1 : end) + 1;
        if (end - start > sp->size) /* cannot happen: size covers the reach */
            end = start + sp->size;
        float total = 0.0f;
        for (int64_t src = start; src < end; src++) {
            float pos = (float)src + 0.5f - sample;
            w[src - start] = kernel_value(k, fabsf(pos * one_over_kernel_scale));
            total += w[src - start];
        }
        if (fabsf(total) >= 1000.0f * FLT_MIN) {
            float inv = 1.0f / total;
            for (int64_t j = 0; j < end - start; j++)
                w[j] *= inv;
        } else {
            memset(w, 0, (size_t)sp->size * sizeof(float));
        }
        sp->start[x] = start;
        /* As TensorFlow, every tap up to `size` that is inside the input is
         * summed, zero weights included. */
        sp->taps[x] = (int)(start + sp->size < in_size ? sp->size : in_size - start);
    }
}

static int span_size(const Kernel *k, int64_t out_size, int64_t in_size, bool antialias)
{
    float scale = (float)out_size / (float)in_size;
    float inv_scale = (float)(1.0 / (double)scale);
    float kernel_scale = antialias && inv_scale > 1.0f ? inv_scale : 1.0f;
    double size = 2.0 * ceilf(k->radius * kernel_scale) + 1.0;
    return size < (double)in_size ? (int)size : (int)in_size;
}

/* dst[x, :] = sum over x's taps of weight * src[start + j, :]. With 3 or 4
 * channels a pixel is one vector (src has a float of padding past the row;
 * only `c` lanes are stored). */
static void gather_columns(const float *restrict src, const Spans *sp, int64_t out_w, int64_t c,
                           float *restrict dst)
{
    if (c == 3 || c == 4) {
        for (int64_t x = 0; x < out_w; x++) {
            const float *p = src + sp->start[x] * c, *w = sp->weights + x * sp->size;
            cv_v4f d = cv_v4f_splat(0.0f);
            for (int j = 0; j < sp->taps[x]; j++, p += c)
                d += cv_v4f_splat(w[j]) * cv_v4f_load(p);
            cv_v4f_store_n(dst + x * c, d, c);
        }
        return;
    }
    for (int64_t x = 0; x < out_w; x++) {
        const float *p = src + sp->start[x] * c, *w = sp->weights + x * sp->size;
        float *d = dst + x * c;
        for (int64_t k = 0; k < c; k++)
            d[k] = 0.0f;
        for (int j = 0; j < sp->taps[x]; j++, p += c)
            for (int64_t k = 0; k < c; k++)
                d[k] += w[j] * p[k];
    }
}

static CvStatus scale_and_translate_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                        CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_out;
    const Kernel *k = NULL;
    for (size_t i = 0; attrs->string && i < sizeof(kernels) / sizeof(kernels[0]); i++)
        if (strcmp(kernels[i].name, attrs->string) == 0)
            k = &kernels[i];
    if (!k || attrs->num_ints <= RESIZE_ANTIALIAS)
        return cv_error(CV_INVALID_ARGUMENT, "Unrecognized kernel type: %s",
                        attrs->string ? attrs->string : "(none)");
    bool antialias = attrs->ints[RESIZE_ANTIALIAS] != 0;
    CvResizeGeom g;
    CvStatus s = cv_resize_setup(attrs, in, num_in, &g);
    if (s || (s = cv_resize_alloc(&g, CV_FLOAT32, &out[0], ctx)) || g.batch == 0)
        return s;
    int64_t c = g.channels, in_row = g.in_w * c, out_row = g.out_w * c;
    size_t in_row_bytes = (size_t)in_row * g.in_item;
    Spans rows = {.size = span_size(k, g.out_h, g.in_h, antialias)};
    Spans cols = {.size = span_size(k, g.out_w, g.in_w, antialias)};
    size_t nrow = (size_t)g.out_h, ncol = (size_t)g.out_w;
    size_t bytes = (nrow + ncol) * (sizeof(int64_t) + sizeof(int)) +
                   (nrow * (size_t)rows.size + ncol * (size_t)cols.size + (size_t)in_row + 4) *
                       sizeof(float);
    char *block = malloc(bytes);
    if (!block) {
        cv_tensor_clear(&out[0]);
        return cv_error(CV_RESOURCE_EXHAUSTED, "out of memory resizing an image");
    }
    rows.start = (int64_t *)block;
    cols.start = rows.start + nrow;
    rows.weights = (float *)(cols.start + ncol);
    cols.weights = rows.weights + nrow * (size_t)rows.size;
    float *inter = cols.weights + ncol * (size_t)cols.size;
    rows.taps = (int *)(inter + in_row + 4);
    memset(inter + in_row, 0, 4 * sizeof(float)); /* the padding a 3-channel load reads */
    cols.taps = rows.taps + nrow;
    compute_spans(k, g.out_h, g.in_h, antialias, &rows);
    compute_spans(k, g.out_w, g.in_w, antialias, &cols);
    float *dst = (float *)out[0].data;
    for (int64_t b = 0; b < g.batch; b++) {
        const char *image = in[0].data + (size_t)(b * g.in_h) * in_row_bytes;
        for (int64_t y = 0; y < g.out_h; y++, dst += out_row) {
            const float *w = rows.weights + y * rows.size;
            memset(inter, 0, (size_t)in_row * sizeof(float));
            for (int j = 0; j < rows.taps[y]; j++)
                cv_resize_add_scaled_row(in[0].dtype,
                                         image + (size_t)(rows.start[y] + j) * in_row_bytes,
                                         in_row, w[j], inter);
            gather_columns(inter, &cols, g.out_w, c, dst);
        }
    }
    free(block);
    return CV_STATUS_OK;
}

const CvOp cv_op_scale_and_translate = {
    .name = "ScaleAndTranslate", .min_inputs = 1, .max_inputs = 2, .run = scale_and_translate_run,
    .int_attrs = cv_resize_antialias_int_attrs};
