/* ResizeNearestNeighbor(images[, size]): tf.image.resize(method='nearest'), i.e.
 * TensorFlow's ResizeNearestNeighbor with half_pixel_centers=True.
 * Attributes: the common resize layout (ops/resize_common.h). The output
 * keeps the input's dtype: pixels are copied, never converted.
 *
 * Output pixel (y, x) takes input pixel (floor((y + 0.5) * scale), ...),
 * clamped to the image, with scale = in / out in float32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/resize_common.h"

static void nearest_indices(int64_t out_size, int64_t in_size, float scale, int64_t stride,
                            int64_t *idx)
{
    for (int64_t i = 0; i < out_size; i++) {
        int64_t v = (int64_t)floorf(((float)i + 0.5f) * scale);
        v = v < in_size - 1 ? v : in_size - 1;
        idx[i] = (v > 0 ? v : 0) * stride;
    }
}

/* Copies one output row; a fixed pixel size lets the compiler inline the
 * copy. xs are byte offsets of source pixels. */
#define GATHER(N)                                                                                  \
    for (int64_t x = 0; x < out_w; x++)                                                            \
        memcpy(dst + x * (N), src + xs[x], (N));                                                   \
    break;

static void gather_row(const char *restrict src, const int64_t *xs, int64_t out_w, size_t pixel,
                       char *restrict dst)
{
    switch (pixel) {
    case 1:
        GATHER(1)
    case 2:
        GATHER(2)
    case 3:
        GATHER(3)
    case 4:
        GATHER(4)
    case 6:
        GATHER(6)
    case 8:
        GATHER(8)
    case 12:
        GATHER(12)
    case 16:
        GATHER(16)
    default:
        for (int64_t x = 0; x < out_w; x++)
            memcpy(dst + (size_t)x * pixel, src + xs[x], pixel);
        break;
    }
}
#undef GATHER

static CvStatus nearest_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                            int num_out, CvOpContext *ctx)
{
    (void)num_out;
    CvResizeGeom g;
    CvStatus s = cv_resize_setup(attrs, in, num_in, &g);
    if (s)
        return s;
    if (g.in_h >= (1 << 24) || g.in_w >= (1 << 24))
        return cv_error(CV_INVALID_ARGUMENT,
                        "nearest neighbor requires max height & width of 2^24");
    if ((s = cv_resize_alloc(&g, in[0].dtype, &out[0], ctx)) || g.batch == 0)
        return s;
    size_t pixel = (size_t)g.channels * g.in_item;
    size_t in_row = (size_t)g.in_w * pixel, out_row = (size_t)g.out_w * pixel;
    int64_t *xs = malloc((size_t)(g.out_w + g.out_h) * sizeof(int64_t));
    if (!xs) {
        cv_tensor_clear(&out[0]);
        return cv_error(CV_RESOURCE_EXHAUSTED, "out of memory resizing an image");
    }
    int64_t *ys = xs + g.out_w;
    nearest_indices(g.out_w, g.in_w, cv_resize_scale(g.in_w, g.out_w), (int64_t)pixel, xs);
    nearest_indices(g.out_h, g.in_h, cv_resize_scale(g.in_h, g.out_h), 1, ys);
    for (int64_t b = 0; b < g.batch; b++) {
        const char *image = in[0].data + (size_t)(b * g.in_h) * in_row;
        char *dst = out[0].data + (size_t)(b * g.out_h) * out_row;
        for (int64_t y = 0; y < g.out_h; y++, dst += out_row) {
            if (y > 0 && ys[y] == ys[y - 1]) /* upscaling: repeat the row */
                memcpy(dst, dst - out_row, out_row);
            else
                gather_row(image + (size_t)ys[y] * in_row, xs, g.out_w, pixel, dst);
        }
    }
    free(xs);
    return CV_STATUS_OK;
}

const CvOp cv_op_resize_nearest_neighbor = {
    .name = "ResizeNearestNeighbor", .min_inputs = 1, .max_inputs = 2, .run = nearest_run,
    .int_attrs = cv_resize_int_attrs};
