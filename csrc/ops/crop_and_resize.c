/* CropAndResize(image, boxes, box_indices, crop_size): for each box
 * [y1, x1, y2, x2] (normalized) of image[box_indices[b]], a float32 crop of
 * crop_size [h, w] sampled bilinearly or at the nearest pixel
 * (tf.image.crop_and_resize). A box index outside the batch is OUT_OF_RANGE,
 * as in TensorFlow. Sample rows and columns are spread evenly
 * from y1 * (height - 1) to y2 * (height - 1) (the box's centre when the
 * crop is 1 high); a sample outside the image is extrapolation_value. The
 * arithmetic is TensorFlow's, in float32 (the centre in double), so values
 * are TensorFlow's bit for bit.
 *
 * image [batch, height, width, depth] of any real dtype; boxes [n, 4]
 * float32; box_indices [n] int32; crop_size [2] int32. ints: [0] method
 * (0 bilinear, 1 nearest). floats: [0] extrapolation_value. No state. */
#include <math.h>
#include <string.h>

#include "ops/numeric.h"
#include "ops/op.h"

enum { CROP_RESIZE_METHOD, CROP_RESIZE_NUM_INTS };
enum { CROP_RESIZE_EXTRAPOLATION, CROP_RESIZE_NUM_FLOATS };
static const char *const crop_resize_int_attrs[] = {"method", NULL};
static const char *const crop_resize_float_attrs[] = {"extrapolation_value", NULL};
CV_ATTR_NAMES_MATCH(crop_resize_int_attrs, CROP_RESIZE_NUM_INTS);
CV_ATTR_NAMES_MATCH(crop_resize_float_attrs, CROP_RESIZE_NUM_FLOATS);

/* Element i of a real tensor as float32, as TensorFlow's static_cast<float>. */
static float load(const CvTensor *t, int64_t i)
{
    switch (t->dtype) {
    case CV_INT8: return (float)((const int8_t *)t->data)[i];
    case CV_INT16: return (float)((const int16_t *)t->data)[i];
    case CV_INT32: return (float)((const int32_t *)t->data)[i];
    case CV_INT64: return (float)((const int64_t *)t->data)[i];
    case CV_UINT8: return (float)((const uint8_t *)t->data)[i];
    case CV_UINT16: return (float)((const uint16_t *)t->data)[i];
    case CV_UINT32: return (float)((const uint32_t *)t->data)[i];
    case CV_UINT64: return (float)((const uint64_t *)t->data)[i];
    case CV_FLOAT16: return cv_half_to_float(((const cv_half *)t->data)[i]);
    case CV_FLOAT64: return (float)((const double *)t->data)[i];
    default: return ((const float *)t->data)[i];
    }
}

/* The sample position of output row/column k of n along a side of `len`
 * pixels, for box edges lo..hi. */
static float sample_at(float lo, float hi, int64_t k, int64_t n, int64_t len)
{
    if (n > 1) {
        float scale = (hi - lo) * (float)(len - 1) / (float)(n - 1);
        return lo * (float)(len - 1) + (float)k * scale;
    }
    return (float)(0.5 * (double)(lo + hi) * (double)(len - 1));
}

static CvStatus crop_and_resize_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                    CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *image = &in[0], *boxes = &in[1], *index = &in[2], *size = &in[3];
    char shape[64];
    if (image->rank != 4 || image->dtype == CV_STRING || image->dtype == CV_BOOL)
        return cv_error(CV_INVALID_ARGUMENT, "input image must be 4-D, got shape %s",
                        cv_shape_str(image->shape, image->rank, shape, sizeof(shape)));
    if (size->dtype != CV_INT32 || size->rank != 1 || size->shape[0] != 2)
        return cv_error(CV_INVALID_ARGUMENT, "crop_size must have two elements, got shape %s",
                        cv_shape_str(size->shape, size->rank, shape, sizeof(shape)));
    int64_t n = boxes->rank == 2 ? boxes->shape[0] : -1;
    if (boxes->dtype != CV_FLOAT32 || n < 0 || boxes->shape[1] != 4)
        return cv_error(CV_INVALID_ARGUMENT, "boxes must be 2-D [num_boxes, 4], got shape %s",
                        cv_shape_str(boxes->shape, boxes->rank, shape, sizeof(shape)));
    if (index->dtype != CV_INT32 || index->rank != 1 || index->shape[0] != n)
        return cv_error(CV_INVALID_ARGUMENT, "box_index has incompatible shape %s",
                        cv_shape_str(index->shape, index->rank, shape, sizeof(shape)));
    const int32_t *crop = (const int32_t *)size->data;
    int64_t batch = image->shape[0], height = image->shape[1], width = image->shape[2];
    int64_t depth = image->shape[3], ch = crop[0], cw = crop[1];
    if (ch <= 0 || cw <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "crop dimensions must be positive");
    if (height <= 0 || width <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "image dimensions must be positive");
    const int32_t *bi = (const int32_t *)index->data;
    for (int64_t b = 0; b < n; b++)
        if (bi[b] < 0 || bi[b] >= batch)
            return cv_error(CV_OUT_OF_RANGE, "box_index has values outside [0, batch_size)");
    int64_t out_shape[4] = {n, ch, cw, depth};
    CvStatus s = cv_tensor_alloc(&out[0], CV_FLOAT32, 4, out_shape, 0, NULL);
    if (s)
        return s;
    float *dst = (float *)out[0].data;
    const float *box = (const float *)boxes->data;
    bool nearest = attrs->ints[CROP_RESIZE_METHOD] == 1;
    float fill = (float)attrs->floats[CROP_RESIZE_EXTRAPOLATION];
    for (int64_t b = 0; b < n; b++) {
        float y1 = box[4 * b], x1 = box[4 * b + 1], y2 = box[4 * b + 2], x2 = box[4 * b + 3];
        int64_t base = (int64_t)bi[b] * height * width * depth;
        for (int64_t y = 0; y < ch; y++) {
            float *row = dst + ((b * ch + y) * cw) * depth;
            float in_y = sample_at(y1, y2, y, ch, height);
            /* !(in range) also catches NaN, which has no pixel */
            if (!(in_y >= 0 && in_y <= (float)(height - 1))) {
                for (int64_t i = 0; i < cw * depth; i++)
                    row[i] = fill;
                continue;
            }
            int64_t top = (int64_t)floorf(in_y), bottom = (int64_t)ceilf(in_y);
            float y_lerp = in_y - (float)top;
            for (int64_t x = 0; x < cw; x++) {
                float *px = row + x * depth;
                float in_x = sample_at(x1, x2, x, cw, width);
                if (!(in_x >= 0 && in_x <= (float)(width - 1))) {
                    for (int64_t d = 0; d < depth; d++)
                        px[d] = fill;
                    continue;
                }
                if (nearest) {
                    int64_t yy = (int64_t)roundf(in_y), xx = (int64_t)roundf(in_x);
                    for (int64_t d = 0; d < depth; d++)
                        px[d] = load(image, base + (yy * width + xx) * depth + d);
                    continue;
                }
                int64_t left = (int64_t)floorf(in_x), right = (int64_t)ceilf(in_x);
                float x_lerp = in_x - (float)left;
                for (int64_t d = 0; d < depth; d++) {
                    float tl = load(image, base + (top * width + left) * depth + d);
                    float tr = load(image, base + (top * width + right) * depth + d);
                    float bl = load(image, base + (bottom * width + left) * depth + d);
                    float br = load(image, base + (bottom * width + right) * depth + d);
                    float t = tl + (tr - tl) * x_lerp;
                    float bo = bl + (br - bl) * x_lerp;
                    px[d] = t + (bo - t) * y_lerp;
                }
            }
        }
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_crop_and_resize = {
    .name = "CropAndResize", .min_inputs = 4, .max_inputs = 4, .run = crop_and_resize_run,
    .int_attrs = crop_resize_int_attrs, .float_attrs = crop_resize_float_attrs};
