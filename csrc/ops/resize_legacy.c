/* ResizeLegacy(images): TensorFlow 1's resize_bilinear,
 * resize_nearest_neighbor and resize_bicubic with their align_corners and
 * half_pixel_centers flags (tf.compat.v1.image.*), which tf.image.resize (the
 * other resize ops) fixes at half_pixel_centers=True.
 *
 * Attributes: the common resize layout (ops/resize_common.h;
 * preserve_aspect_ratio must be 0), then `method` (0: bilinear, 1: nearest
 * neighbour (the input's dtype), 2: bicubic without half-pixel centers;
 * others float32), `align_corners`, `half_pixel_centers` (not both). The
 * sample position of output index i is i * scale (legacy) or
 * (i + 0.5) * scale - 0.5 (half pixel; nearest: (i + 0.5) * scale),
 * scale = (in - 1) / (out - 1) with align_corners and out > 1, else
 * in / out, all float32 as TensorFlow's CPU kernels compute it. Bilinear
 * is ResizeBilinear's kernel with these sampling rules (cv_resize_bilinear;
 * TF1 recipes resize every image with it). The legacy bicubic is the cubic
 * convolution with a = -0.75 read from a 1025-entry table, its four taps
 * clamped to the image; it and nearest are plain scalar loops
 * (compatibility paths). Stateless and reentrant. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/resize_common.h"

enum { LEGACY_METHOD = RESIZE_PRESERVE_ASPECT_RATIO + 1, LEGACY_ALIGN, LEGACY_HALF, LEGACY_COUNT };
static const char *const legacy_int_attrs[] = {"height", "width", "preserve_aspect_ratio",
                                               "method", "align_corners", "half_pixel_centers",
                                               NULL};
enum { METHOD_BILINEAR, METHOD_NEAREST, METHOD_BICUBIC };
#define CUBIC_TABLE 1024
CV_ATTR_NAMES_MATCH(legacy_int_attrs, LEGACY_COUNT);

static float legacy_scale(int64_t in, int64_t out, bool align)
{
    return align && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}

static void nearest_indices(int64_t out_size, int64_t in_size, float scale, bool align, bool half,
                            int64_t *idx)
{
    for (int64_t i = 0; i < out_size; i++) {
        float in = half ? ((float)i + 0.5f) * scale : (float)i * scale;
        int64_t v = (int64_t)(align ? roundf(in) : floorf(in));
        v = v < in_size - 1 ? v : in_size - 1;
        idx[i] = half && v < 0 ? 0 : v;
    }
}

static void run_nearest(const CvResizeGeom *g, const CvTensor *in, bool align, bool half,
                        int64_t *xs, int64_t *ys, CvTensor *out)
{
    size_t pixel = (size_t)g->channels * g->in_item, in_row = (size_t)g->in_w * pixel;
    char *dst = out->data;
    nearest_indices(g->out_w, g->in_w, legacy_scale(g->in_w, g->out_w, align), align, half, xs);
    nearest_indices(g->out_h, g->in_h, legacy_scale(g->in_h, g->out_h, align), align, half, ys);
    for (int64_t b = 0; b < g->batch; b++) {
        const char *image = in->data + (size_t)(b * g->in_h) * in_row;
        for (int64_t y = 0; y < g->out_h; y++) {
            const char *src = image + (size_t)ys[y] * in_row;
            for (int64_t x = 0; x < g->out_w; x++, dst += pixel)
                memcpy(dst, src + (size_t)xs[x] * pixel, pixel);
        }
    }
}

/* The cubic kernel's weights at 1025 fractional offsets: [2i] for a tap at
 * distance i/1024, [2i+1] at distance 1 + i/1024; a = -0.75 in double,
 * stored as float (as TensorFlow's table). Built on each call: 8 KiB of
 * arithmetic, cheaper than shared lazily-initialized state. */
static void cubic_table(float *t)
{
    const double a = -0.75;
    for (int i = 0; i <= CUBIC_TABLE; i++) {
        float x = (float)(i * 1.0 / CUBIC_TABLE);
        t[i * 2] = (float)(((a + 2) * x - (a + 3)) * x * x + 1);
        x += 1.0f;
        t[i * 2 + 1] = (float)(((a * x - 5 * a) * x + 8 * a) * x - 4 * a);
    }
}

typedef struct {
    int64_t index[4];
    float weight[4];
} Taps;

static int64_t bound(int64_t v, int64_t limit)
{
    return v < 0 ? 0 : v > limit - 1 ? limit - 1 : v;
}

static void cubic_taps(int64_t out_size, int64_t in_size, float scale, const float *t, Taps *taps)
{
    for (int64_t i = 0; i < out_size; i++) {
        float in = (float)i * scale;
        int64_t base = (int64_t)floorf(in);
        float delta = in - (float)base;
        int64_t off = (int64_t)lrintf(delta * CUBIC_TABLE);
        taps[i].weight[0] = t[off * 2 + 1];
        taps[i].weight[1] = t[off * 2];
        taps[i].weight[2] = t[(CUBIC_TABLE - off) * 2];
        taps[i].weight[3] = t[(CUBIC_TABLE - off) * 2 + 1];
        for (int k = 0; k < 4; k++)
            taps[i].index[k] = bound(base - 1 + k, in_size);
    }
}

/* rows: the 4 float rows of in_w * channels an output row needs. Vertical
 * pass on each of the four tap columns, then the horizontal one, each
 * v0*w0 + v1*w1 + v2*w2 + v3*w3 left to right (TensorFlow's order). */
static void run_bicubic(const CvResizeGeom *g, const CvTensor *in, bool align, float *rows,
                        float *table, Taps *xs, Taps *ys, CvTensor *out)
{
    int64_t c = g->channels, row_n = g->in_w * c;
    size_t in_row = (size_t)row_n * g->in_item;
    float *dst = (float *)out->data;
    cubic_table(table);
    cubic_taps(g->out_w, g->in_w, legacy_scale(g->in_w, g->out_w, align), table, xs);
    cubic_taps(g->out_h, g->in_h, legacy_scale(g->in_h, g->out_h, align), table, ys);
    for (int64_t b = 0; b < g->batch; b++) {
        const char *image = in->data + (size_t)(b * g->in_h) * in_row;
        for (int64_t y = 0; y < g->out_h; y++) {
            for (int r = 0; r < 4; r++)
                cv_resize_load_row(in->dtype, image + (size_t)ys[y].index[r] * in_row, row_n,
                                   rows + r * row_n);
            const float *wy = ys[y].weight;
            for (int64_t x = 0; x < g->out_w; x++) {
                const Taps *tx = &xs[x];
                for (int64_t k = 0; k < c; k++) {
                    float v[4];
                    for (int j = 0; j < 4; j++) {
                        const float *col = rows + tx->index[j] * c + k;
                        v[j] = col[0] * wy[0] + col[row_n] * wy[1] + col[2 * row_n] * wy[2] +
                               col[3 * row_n] * wy[3];
                    }
                    *dst++ = v[0] * tx->weight[0] + v[1] * tx->weight[1] + v[2] * tx->weight[2] +
                             v[3] * tx->weight[3];
                }
            }
        }
    }
}

static CvStatus legacy_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_out;
    CvResizeGeom g;
    void *scratch = NULL;
    CvStatus s = NULL;
    int64_t method = attrs->ints[LEGACY_METHOD];
    bool nearest = method == METHOD_NEAREST, align = attrs->ints[LEGACY_ALIGN] != 0;
    bool half = attrs->ints[LEGACY_HALF] != 0;
    if (method < METHOD_BILINEAR || method > METHOD_BICUBIC ||
        (method == METHOD_BICUBIC && half)) {
        s = cv_error(CV_INVALID_ARGUMENT, "ResizeLegacy: unknown method %lld%s",
                     (long long)method, half ? " with half_pixel_centers" : "");
        goto done;
    }
    if (align && half) {
        s = cv_error(CV_INVALID_ARGUMENT,
                     "If half_pixel_centers is True, align_corners must be False.");
        goto done;
    }
    if (attrs->ints[RESIZE_PRESERVE_ASPECT_RATIO]) {
        s = cv_error(CV_INVALID_ARGUMENT, "ResizeLegacy has no preserve_aspect_ratio");
        goto done;
    }
    if (method == METHOD_BILINEAR) { /* TensorFlow's one ResizeBilinear kernel */
        s = cv_resize_bilinear(attrs, in, num_in, out, ctx, align, half);
        goto done;
    }
    if ((s = cv_resize_setup(attrs, in, num_in, &g)))
        goto done;
    if (ctx->epilogue && !cv_epilogue_fits(ctx->epilogue, ctx->num_epilogues, g.channels)) {
        s = cv_error(CV_INTERNAL, "ResizeLegacy: a per-channel epilogue does not fit %lld channels",
                     (long long)g.channels);
        goto done;
    }
    if (nearest && (g.in_h >= (1 << 24) || g.in_w >= (1 << 24))) {
        s = cv_error(CV_INVALID_ARGUMENT, "nearest neighbor requires max height & width of 2^24");
        goto done;
    }
    if ((s = cv_resize_alloc(&g, nearest ? in[0].dtype : CV_FLOAT32, &out[0], ctx)))
        goto done;
    if (g.batch == 0 || g.out_h == 0 || g.out_w == 0)
        goto done;
    size_t row_floats = (size_t)(g.in_w * g.channels);
    size_t bytes = nearest ? (size_t)(g.out_w + g.out_h) * sizeof(int64_t)
                   : (size_t)(g.out_w + g.out_h) * sizeof(Taps) +
                         (4 * row_floats + 2 * (CUBIC_TABLE + 1)) * sizeof(float);
    scratch = malloc(bytes);
    if (!scratch) {
        cv_tensor_clear(&out[0]);
        s = cv_error(CV_RESOURCE_EXHAUSTED, "out of memory resizing an image");
        goto done;
    }
    if (nearest) {
        int64_t *xs = scratch;
        run_nearest(&g, &in[0], align, half, xs, xs + g.out_w, &out[0]);
    } else {
        Taps *xs = scratch;
        float *rows = (float *)(xs + g.out_w + g.out_h);
        run_bicubic(&g, &in[0], align, rows, rows + 4 * row_floats, xs, xs + g.out_w, &out[0]);
    }
    if (ctx->epilogue && out[0].dtype == CV_FLOAT32)
        cv_epilogue_apply(ctx->epilogue, ctx->num_epilogues, (float *)out[0].data,
                          cv_tensor_num_elements(&out[0]));
done:
    free(scratch);
    return s;
}

const CvOp cv_op_resize_legacy = {.name = "ResizeLegacy", .min_inputs = 1, .max_inputs = 1,
                                  .run = legacy_run, .takes_epilogue = true,
                                  .int_attrs = legacy_int_attrs};
