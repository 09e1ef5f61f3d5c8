/* ResizeArea(images[, size]): tf.image.resize(method='area'), TensorFlow's ResizeArea
 * (align_corners=False). Attributes: the common resize layout
 * (ops/resize_common.h). Output float32.
 *
 * Output pixel x covers input interval [x * scale, (x + 1) * scale); each
 * input pixel it touches counts with the length of the overlap (1 inside,
 * fractions at the two ends; indices past the edge are clamped). A row's
 * horizontal sums are computed once (two-row cache); the output row is the
 * overlap-weighted sum of those rows times 1 / (scale_y * scale_x), in
 * TensorFlow's order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/resize_common.h"

typedef struct {
    int64_t start, end; /* input cells [start, end), unclamped */
    float start_scale, end_scale;
} Cover;

/* The overlap of cell v with [a, b), as TensorFlow computes it. */
static float overlap(int64_t v, float a, float b, float scale)
{
    if ((float)v < a)
        return (float)(v + 1) > b ? scale : (float)(v + 1) - a;
    return (float)(v + 1) > b ? b - (float)v : 1.0f;
}

static void covers(int64_t out_size, float scale, Cover *cv)
{
    for (int64_t i = 0; i < out_size; i++) {
        float a = (float)i * scale, b = (float)(i + 1) * scale;
        cv[i].start = (int64_t)floorf(a);
        cv[i].end = (int64_t)ceilf(b);
        cv[i].start_scale = overlap(cv[i].start, a, b, scale);
        cv[i].end_scale = overlap(cv[i].end - 1, a, b, scale);
    }
}

static inline int64_t bound(int64_t v, int64_t size)
{
    return v < 0 ? 0 : v >= size ? size - 1 : v;
}

/* dst[x, k] = the overlap-weighted sum of src's cells under output column x.
 * With 3 or 4 channels a pixel is one vector (src has a float of padding
 * past the row; only `c` lanes are stored). */
static void sum_row(const float *restrict src, const Cover *xs, int64_t out_w, int64_t in_w,
                    int64_t c, float *restrict dst)
{
    for (int64_t x = 0; x < out_w; x++) {
        const Cover *cx = &xs[x];
        const float *first = src + bound(cx->start, in_w) * c;
        if (c == 3 || c == 4) {
            cv_v4f d = cv_v4f_load(first) * cv_v4f_splat(cx->start_scale);
            if (cx->start + 1 != cx->end) {
                for (int64_t v = cx->start + 1; v < cx->end - 1; v++)
                    d += cv_v4f_load(src + bound(v, in_w) * c);
                d += cv_v4f_load(src + bound(cx->end - 1, in_w) * c) * cv_v4f_splat(cx->end_scale);
            }
            cv_v4f_store_n(dst + x * c, d, c);
            continue;
        }
        float *d = dst + x * c;
        for (int64_t k = 0; k < c; k++)
            d[k] = first[k] * cx->start_scale;
        if (cx->start + 1 != cx->end) {
            for (int64_t v = cx->start + 1; v < cx->end - 1; v++) {
                const float *p = src + bound(v, in_w) * c;
                for (int64_t k = 0; k < c; k++)
                    d[k] += p[k];
            }
            const float *last = src + bound(cx->end - 1, in_w) * c;
            for (int64_t k = 0; k < c; k++)
                d[k] += last[k] * cx->end_scale;
        }
    }
}

static CvStatus area_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                         int num_out, CvOpContext *ctx)
{
    (void)num_out;
    CvResizeGeom g;
    CvStatus s = cv_resize_setup(attrs, in, num_in, &g);
    if (s || (s = cv_resize_alloc(&g, CV_FLOAT32, &out[0], ctx)) || g.batch == 0)
        return s;
    int64_t c = g.channels, in_row = g.in_w * c, out_row = g.out_w * c;
    size_t in_row_bytes = (size_t)in_row * g.in_item;
    float hs = cv_resize_scale(g.in_h, g.out_h), ws = cv_resize_scale(g.in_w, g.out_w);
    float scale = (float)(1.0 / (double)(hs * ws));
    size_t bytes = (size_t)(g.out_w + g.out_h) * sizeof(Cover) +
                   ((size_t)in_row + 4 + 3 * (size_t)out_row) * sizeof(float);
    Cover *xs = malloc(bytes);
    if (!xs) {
        cv_tensor_clear(&out[0]);
        return cv_error(CV_RESOURCE_EXHAUSTED, "out of memory resizing an image");
    }
    Cover *ys = xs + g.out_w;
    float *conv = (float *)(ys + g.out_h), *acc = conv + in_row + 4;
    memset(conv + in_row, 0, 4 * sizeof(float)); /* the padding a 3-channel load reads */
    CvRowCache cache = {.slot = {acc + out_row, acc + 2 * out_row}};
    covers(g.out_w, ws, xs);
    covers(g.out_h, hs, ys);
    float *dst = (float *)out[0].data;
    for (int64_t b = 0; b < g.batch; b++) {
        const char *image = in[0].data + (size_t)(b * g.in_h) * in_row_bytes;
        cv_row_cache_reset(&cache);
        for (int64_t y = 0; y < g.out_h; y++, dst += out_row) {
            float a = (float)y * hs, e = (float)(y + 1) * hs;
            memset(acc, 0, (size_t)out_row * sizeof(float));
            for (int64_t i = ys[y].start; i < ys[y].end; i++) {
                int64_t r = bound(i, g.in_h);
                int victim;
                float *row = cv_row_cache_find(&cache, r, &victim);
                if (!row) {
                    cv_resize_load_row(in[0].dtype, image + (size_t)r * in_row_bytes, in_row, conv);
                    row = cv_row_cache_claim(&cache, victim, r);
                    sum_row(conv, xs, g.out_w, g.in_w, c, row);
                }
                float w = overlap(i, a, e, hs);
                for (int64_t j = 0; j < out_row; j++)
                    acc[j] += row[j] * w;
            }
            for (int64_t j = 0; j < out_row; j++)
                dst[j] = acc[j] * scale;
        }
    }
    free(xs);
    return CV_STATUS_OK;
}

const CvOp cv_op_resize_area = {
    .name = "ResizeArea", .min_inputs = 1, .max_inputs = 2, .run = area_run,
    .int_attrs = cv_resize_int_attrs};
