/* ResizeBicubic(images[, size]): tf.image.resize(method='bicubic', antialias=False),
 * TensorFlow's ResizeBicubic with half_pixel_centers=True. Attributes: the
 * common resize layout (ops/resize_common.h). Output float32.
 *
 * Keys' cubic convolution with a = -0.5 over the 4 nearest rows and
 * columns of the sample point (y + 0.5) * scale - 0.5. As in TensorFlow,
 * the fractional offset is quantized to 1/1024 (its kernels read the
 * weights from a 1024-entry table, which this computes on the fly with the
 * same double-precision formula), taps outside the image get weight 0 and
 * the rest are renormalized. Each output row is a vertical pass over 4
 * input rows, then a 4-tap horizontal pass, in TensorFlow's order. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/resize_common.h"

#define TABLE_SIZE 1024
#define KEYS_A (-0.5)

typedef struct {
    int64_t index[4]; /* clamped source indices (columns: times channels) */
    float weight[4];
} Taps;

/* Keys' kernel at distance i / TABLE_SIZE (the near taps) and at 1 + that
 * (the far taps), rounded to float as TensorFlow's table stores them. */
static float near_weight(int64_t i)
{
    float x = (float)((double)i / TABLE_SIZE);
    return (float)(((KEYS_A + 2) * x - (KEYS_A + 3)) * x * x + 1);
}

static float far_weight(int64_t i)
{
    float x = (float)((double)i / TABLE_SIZE);
    x += 1.0f;
    return (float)(((KEYS_A * x - 5 * KEYS_A) * x + 8 * KEYS_A) * x - 4 * KEYS_A);
}

static void cubic_taps(int64_t out_size, int64_t in_size, float scale, int64_t stride, Taps *t)
{
    for (int64_t i = 0; i < out_size; i++) {
        float in = ((float)i + 0.5f) * scale - 0.5f;
        int64_t loc = (int64_t)floorf(in);
        float delta = in - (float)loc;
        int64_t offset = (int64_t)lrintf(delta * (float)TABLE_SIZE);
        float w[4] = {far_weight(offset), near_weight(offset), near_weight(TABLE_SIZE - offset),
                      far_weight(TABLE_SIZE - offset)};
        for (int k = 0; k < 4; k++) {
            int64_t src = loc - 1 + k;
            int64_t clamped = src < 0 ? 0 : src >= in_size ? in_size - 1 : src;
            if (clamped != src)
                w[k] = 0.0f;
            t[i].index[k] = clamped * stride;
        }
        float sum = w[0] + w[1] + w[2] + w[3];
        if (fabsf(sum) >= 1000.0f * FLT_MIN) {
            float inv = 1.0f / sum;
            for (int k = 0; k < 4; k++)
                w[k] *= inv;
        }
        memcpy(t[i].weight, w, sizeof(w));
    }
}

/* With 3 or 4 channels a pixel is one vector (src has a float of padding
 * past the row; only `c` lanes are stored). */
static void cubic_row(const float *restrict src, const Taps *xs, int64_t out_w, int64_t c,
                      float *restrict dst)
{
    for (int64_t x = 0; x < out_w; x++) {
        const Taps *t = &xs[x];
        const float *p0 = src + t->index[0], *p1 = src + t->index[1], *p2 = src + t->index[2],
                    *p3 = src + t->index[3];
        if (c == 3 || c == 4) {
            cv_v4f d = cv_v4f_load(p0) * cv_v4f_splat(t->weight[0]) +
                       cv_v4f_load(p1) * cv_v4f_splat(t->weight[1]) +
                       cv_v4f_load(p2) * cv_v4f_splat(t->weight[2]) +
                       cv_v4f_load(p3) * cv_v4f_splat(t->weight[3]);
            cv_v4f_store_n(dst + x * c, d, c);
            continue;
        }
        for (int64_t k = 0; k < c; k++)
            dst[x * c + k] = p0[k] * t->weight[0] + p1[k] * t->weight[1] + p2[k] * t->weight[2] +
                             p3[k] * t->weight[3];
    }
}

static CvStatus bicubic_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                            int num_out, CvOpContext *ctx)
{
    (void)num_out;
    CvResizeGeom g;
    CvStatus s = cv_resize_setup(attrs, in, num_in, &g);
    if (s || (s = cv_resize_alloc(&g, CV_FLOAT32, &out[0], ctx)) || g.batch == 0)
        return s;
    int64_t c = g.channels, in_row = g.in_w * c, out_row = g.out_w * c;
    size_t in_row_bytes = (size_t)in_row * g.in_item;
    size_t bytes =
        (size_t)(g.out_w + g.out_h) * sizeof(Taps) + ((size_t)in_row + 4) * sizeof(float);
    Taps *xs = malloc(bytes);
    if (!xs) {
        cv_tensor_clear(&out[0]);
        return cv_error(CV_RESOURCE_EXHAUSTED, "out of memory resizing an image");
    }
    Taps *ys = xs + g.out_w;
    float *column = (float *)(ys + g.out_h);
    memset(column + in_row, 0, 4 * sizeof(float)); /* the padding a 3-channel load reads */
    cubic_taps(g.out_w, g.in_w, cv_resize_scale(g.in_w, g.out_w), c, xs);
    cubic_taps(g.out_h, g.in_h, cv_resize_scale(g.in_h, g.out_h), 1, ys);
    float *dst = (float *)out[0].data;
    for (int64_t b = 0; b < g.batch; b++) {
        const char *image = in[0].data + (size_t)(b * g.in_h) * in_row_bytes;
        for (int64_t y = 0; y < g.out_h; y++, dst += out_row) {
            memset(column, 0, (size_t)in_row * sizeof(float));
            for (int k = 0; k < 4; k++)
                cv_resize_add_scaled_row(in[0].dtype, image + (size_t)ys[y].index[k] * in_row_bytes,
                                         in_row, ys[y].weight[k], column);
            cubic_row(column, xs, g.out_w, c, dst);
        }
    }
    free(xs);
    return CV_STATUS_OK;
}

const CvOp cv_op_resize_bicubic = {
    .name = "ResizeBicubic", .min_inputs = 1, .max_inputs = 2, .run = bicubic_run,
    .int_attrs = cv_resize_int_attrs};
