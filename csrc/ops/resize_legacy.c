/* ResizeLegacy(images): TensorFlow 1's resize_bilinear and
 * resize_nearest_neighbor with their align_corners and half_pixel_centers
 * flags (tf.compat.v1.image.*), which tf.image.resize (the other resize ops)
 * fixes at half_pixel_centers=True.
 *
 * Attributes: the common resize layout (ops/resize_common.h;
 * preserve_aspect_ratio must be 0), then `nearest` (0: bilinear, float32
 * output; 1: nearest neighbour, the input's dtype), `align_corners`,
 * `half_pixel_centers` (not both). The sample position of output index i is
 * i * scale (legacy) or (i + 0.5) * scale - 0.5 (half pixel; nearest:
 * (i + 0.5) * scale), scale = (in - 1) / (out - 1) with align_corners and
 * out > 1, else in / out, all float32 as TensorFlow's CPU kernels compute
 * it. Plain scalar loops: these are compatibility paths. Stateless and
 * reentrant. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/resize_common.h"

enum { LEGACY_NEAREST = RESIZE_PRESERVE_ASPECT_RATIO + 1, LEGACY_ALIGN, LEGACY_HALF, LEGACY_COUNT };
static const char *const legacy_int_attrs[] = {"height", "width", "preserve_aspect_ratio",
                                               "nearest", "align_corners", "half_pixel_centers",
                                               NULL};
CV_ATTR_NAMES_MATCH(legacy_int_attrs, LEGACY_COUNT);

typedef struct {
    int64_t lo, hi; /* source indices */
    float lerp;
} Lerp;

static float legacy_scale(int64_t in, int64_t out, bool align)
{
    return align && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}

static void bilinear_lerps(int64_t out_size, int64_t in_size, float scale, bool half, Lerp *l)
{
    for (int64_t i = 0; i < out_size; i++) {
        float in = half ? ((float)i + 0.5f) * scale - 0.5f : (float)i * scale;
        float f = floorf(in);
        int64_t lo = (int64_t)f, hi = (int64_t)ceilf(in);
        l[i].lo = lo > 0 ? lo : 0;
        l[i].hi = hi < in_size - 1 ? hi : in_size - 1;
        l[i].lerp = in - f;
    }
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

static void run_bilinear(const CvResizeGeom *g, const CvTensor *in, bool align, bool half,
                         float *rows, Lerp *xs, Lerp *ys, CvTensor *out)
{
    int64_t c = g->channels, row_n = g->in_w * c;
    size_t in_row = (size_t)row_n * g->in_item;
    float *top = rows, *bottom = rows + row_n, *dst = (float *)out->data;
    bilinear_lerps(g->out_w, g->in_w, legacy_scale(g->in_w, g->out_w, align), half, xs);
    bilinear_lerps(g->out_h, g->in_h, legacy_scale(g->in_h, g->out_h, align), half, ys);
    for (int64_t b = 0; b < g->batch; b++) {
        const char *image = in->data + (size_t)(b * g->in_h) * in_row;
        for (int64_t y = 0; y < g->out_h; y++) {
            cv_resize_load_row(in->dtype, image + (size_t)ys[y].lo * in_row, row_n, top);
            cv_resize_load_row(in->dtype, image + (size_t)ys[y].hi * in_row, row_n, bottom);
            float dy = ys[y].lerp;
            for (int64_t x = 0; x < g->out_w; x++) {
                const float *tl = top + xs[x].lo * c, *tr = top + xs[x].hi * c;
                const float *bl = bottom + xs[x].lo * c, *br = bottom + xs[x].hi * c;
                float dx = xs[x].lerp;
                for (int64_t k = 0; k < c; k++) {
                    float t = tl[k] + (tr[k] - tl[k]) * dx;
                    float u = bl[k] + (br[k] - bl[k]) * dx;
                    *dst++ = t + (u - t) * dy;
                }
            }
        }
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

static CvStatus legacy_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    CvResizeGeom g;
    void *scratch = NULL;
    CvStatus s = NULL;
    bool nearest = attrs->ints[LEGACY_NEAREST] != 0, align = attrs->ints[LEGACY_ALIGN] != 0;
    bool half = attrs->ints[LEGACY_HALF] != 0;
    if (align && half) {
        s = cv_error(CV_INVALID_ARGUMENT,
                     "If half_pixel_centers is True, align_corners must be False.");
        goto done;
    }
    if (attrs->ints[RESIZE_PRESERVE_ASPECT_RATIO]) {
        s = cv_error(CV_INVALID_ARGUMENT, "ResizeLegacy has no preserve_aspect_ratio");
        goto done;
    }
    if ((s = cv_resize_setup(attrs, &in[0], &g)))
        goto done;
    if (nearest && (g.in_h >= (1 << 24) || g.in_w >= (1 << 24))) {
        s = cv_error(CV_INVALID_ARGUMENT, "nearest neighbor requires max height & width of 2^24");
        goto done;
    }
    if ((s = cv_resize_alloc(&g, nearest ? in[0].dtype : CV_FLOAT32, &out[0], ctx)))
        goto done;
    if (g.batch == 0 || g.out_h == 0 || g.out_w == 0)
        goto done;
    size_t bytes = nearest ? (size_t)(g.out_w + g.out_h) * sizeof(int64_t)
                           : (size_t)(g.out_w + g.out_h) * sizeof(Lerp) +
                                 (size_t)(2 * g.in_w * g.channels) * sizeof(float);
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
        Lerp *xs = scratch;
        run_bilinear(&g, &in[0], align, half, (float *)(xs + g.out_w + g.out_h), xs, xs + g.out_w,
                     &out[0]);
    }
done:
    free(scratch);
    return s;
}

const CvOp cv_op_resize_legacy = {.name = "ResizeLegacy", .min_inputs = 1, .max_inputs = 1,
                                  .run = legacy_run, .int_attrs = legacy_int_attrs};
