/* DrawBoundingBoxesV2(images, boxes, colors): a copy of images [batch,
 * height, width, depth] (float32 or float16; depth 1, 3 or 4) with the
 * outline of each box [y1, x1, y2, x2] (normalized) of boxes [batch, n, 4]
 * drawn one pixel wide in colors[i % num_colors] (float32 [num_colors, >=
 * depth]; no rows: TensorFlow's table of ten, or white for gray images), as
 * tf.image.draw_bounding_boxes.
 * Edges are at trunc(y * (height - 1)) and trunc(x * (width - 1)), as
 * TensorFlow computes them: an edge outside the image is not drawn, the
 * others are clipped to it; a box whose corners are swapped is skipped.
 * No attributes, no state. */
#include <string.h>

#include "ops/numeric.h"
#include "ops/op.h"

static const float default_colors[10][4] = {
    {1, 1, 0, 1}, {0, 0, 1, 1}, {1, 0, 0, 1}, {0, 1, 0, 1}, {0.5f, 0, 0.5f, 1},
    {0.5f, 0.5f, 0, 1}, {0.5f, 0, 0, 1}, {0, 0, 0.5f, 1}, {0, 1, 1, 1}, {1, 0, 1, 1}};

/* Paint pixel (row, col) of image plane `img` in `color`. */
static void paint(char *img, CvDtype dtype, int64_t width, int64_t depth, int64_t row,
                  int64_t col, const float *color)
{
    int64_t at = (row * width + col) * depth;
    for (int64_t d = 0; d < depth; d++) {
        if (dtype == CV_FLOAT16)
            ((cv_half *)img)[at + d] = cv_float_to_half(color[d]);
        else
            ((float *)img)[at + d] = color[d];
    }
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static CvStatus draw_boxes_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                               CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)attrs;
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *images = &in[0], *boxes = &in[1], *colors = &in[2];
    char shape[64];
    if (images->rank != 4 || (images->dtype != CV_FLOAT32 && images->dtype != CV_FLOAT16))
        return cv_error(CV_INVALID_ARGUMENT, "images must be 4-D float32 or float16, got shape %s",
                        cv_shape_str(images->shape, images->rank, shape, sizeof(shape)));
    int64_t batch = images->shape[0], height = images->shape[1], width = images->shape[2];
    int64_t depth = images->shape[3];
    if (depth != 1 && depth != 3 && depth != 4)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)");
    if (boxes->dtype != CV_FLOAT32 || boxes->rank != 3 || boxes->shape[0] != batch ||
        boxes->shape[2] != 4)
        return cv_error(CV_INVALID_ARGUMENT, "boxes must be [batch, num_boxes, 4], got shape %s",
                        cv_shape_str(boxes->shape, boxes->rank, shape, sizeof(shape)));
    if (colors->dtype != CV_FLOAT32 || colors->rank != 2)
        return cv_error(CV_INVALID_ARGUMENT, "colors must be a 2-D matrix, got shape %s",
                        cv_shape_str(colors->shape, colors->rank, shape, sizeof(shape)));
    int64_t num_colors = colors->shape[0], color_width = colors->shape[1];
    if (num_colors > 0 && color_width < depth)
        return cv_error(CV_INVALID_ARGUMENT, "colors must have equal or more channels than the "
                        "image provided: %s",
                        cv_shape_str(colors->shape, colors->rank, shape, sizeof(shape)));
    CvStatus s = cv_tensor_alloc(&out[0], images->dtype, 4, images->shape, 0, NULL);
    if (s)
        return s;
    memcpy(out[0].data, images->data, cv_tensor_nbytes(images));
    size_t esize = images->dtype == CV_FLOAT16 ? 2 : 4;
    int64_t n = boxes->shape[1];
    const float *box = (const float *)boxes->data;
    for (int64_t b = 0; b < batch; b++) {
        char *img = (char *)out[0].data + (size_t)(b * height * width * depth) * esize;
        for (int64_t k = 0; k < n; k++) {
            const float *bx = box + (b * n + k) * 4;
            static const float white[4] = {1, 1, 1, 1};
            const float *color = num_colors > 0
                                     ? (const float *)colors->data + (k % num_colors) * color_width
                                 : depth == 1 ? white
                                              : default_colors[k % 10];
            /* float products truncated as TensorFlow's static_cast<int64> */
            int64_t r0 = cv_f2i64(bx[0] * (float)(height - 1));
            int64_t c0 = cv_f2i64(bx[1] * (float)(width - 1));
            int64_t r1 = cv_f2i64(bx[2] * (float)(height - 1));
            int64_t c1 = cv_f2i64(bx[3] * (float)(width - 1));
            if (r0 > r1 || c0 > c1 || r0 >= height || r1 < 0 || c0 >= width || c1 < 0)
                continue;
            int64_t r0c = clamp64(r0, 0, height - 1), r1c = clamp64(r1, 0, height - 1);
            int64_t c0c = clamp64(c0, 0, width - 1), c1c = clamp64(c1, 0, width - 1);
            for (int64_t c = c0c; c <= c1c; c++) {
                if (r0 >= 0)
                    paint(img, images->dtype, width, depth, r0, c, color);
                if (r1 < height)
                    paint(img, images->dtype, width, depth, r1, c, color);
            }
            for (int64_t r = r0c; r <= r1c; r++) {
                if (c0 >= 0)
                    paint(img, images->dtype, width, depth, r, c0, color);
                if (c1 < width)
                    paint(img, images->dtype, width, depth, r, c1, color);
            }
        }
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_draw_bounding_boxes = {
    .name = "DrawBoundingBoxesV2", .min_inputs = 3, .max_inputs = 3, .run = draw_boxes_run};
