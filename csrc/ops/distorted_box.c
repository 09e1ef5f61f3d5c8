/* SampleDistortedBoundingBox's algorithm (ops/distorted_box.h), written from
 * TensorFlow's documented behaviour: up to max_attempts draws of an aspect
 * ratio and a crop of that ratio whose area lies in area_range, kept when it
 * covers at least min_object_covered of one bounding box; else the whole
 * image. Every float expression is float32, as the kernel's C++ is. */
#include "ops/distorted_box.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Rect {
    int32_t min_x, min_y, max_x, max_y;
} Rect;

static int64_t rect_area(Rect r)
{
    if (r.min_x > r.max_x || r.min_y > r.max_y)
        return 0;
    return (int64_t)(r.max_x - r.min_x) * (r.max_y - r.min_y);
}

static Rect rect_intersect(Rect a, Rect b)
{
    Rect r = {a.min_x > b.min_x ? a.min_x : b.min_x, a.min_y > b.min_y ? a.min_y : b.min_y,
              a.max_x < b.max_x ? a.max_x : b.max_x, a.max_y < b.max_y ? a.max_y : b.max_y};
    if (r.min_x > r.max_x || r.min_y > r.max_y)
        return (Rect){0, 0, 0, 0};
    return r;
}

void cv_distorted_box_skip(CvPhilox *rng, uint64_t blocks)
{
    uint64_t lo = (uint64_t)rng->counter[0] | ((uint64_t)rng->counter[1] << 32);
    uint64_t hi = (uint64_t)rng->counter[2] | ((uint64_t)rng->counter[3] << 32);
    uint64_t sum = lo + blocks;
    if (sum < lo)
        hi++;
    rng->counter[0] = (uint32_t)sum;
    rng->counter[1] = (uint32_t)(sum >> 32);
    rng->counter[2] = (uint32_t)hi;
    rng->counter[3] = (uint32_t)(hi >> 32);
}

/* SimplePhilox::RandFloat: 23 random bits as a float in [0, 1). */
static float rand_float(CvPhilox *rng)
{
    uint32_t bits = (cv_philox_next(rng) & 0x7fffffu) | 0x3f800000u;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f - 1.0f;
}

/* SimplePhilox::Uniform(n): uniform in [0, n), rejecting the low draws that
 * would bias it (a power of two masks; n == 0 draws and gives 0). */
static uint32_t rand_below(CvPhilox *rng, uint32_t n)
{
    if (n == 0) {
        (void)cv_philox_next(rng);
        return 0;
    }
    if ((n & (n - 1)) == 0)
        return cv_philox_next(rng) & (n - 1);
    const uint32_t rem = UINT32_MAX % n + 1;
    uint32_t r;
    do
        r = cv_philox_next(rng);
    while (r < rem);
    return r % n;
}

static int32_t round_int(float x)
{
    return (int32_t)lrintf(x);
}

/* One attempt (TensorFlow's GenerateRandomCrop): false when the constraints
 * cannot be met for this aspect ratio. */
static bool random_crop(int32_t width, int32_t height, float min_rel, float max_rel, float aspect,
                        CvPhilox *rng, Rect *crop)
{
    if (max_rel <= 0.0f || aspect <= 0.0f || width <= 0 || height <= 0 || min_rel > max_rel)
        return false;
    const float min_area = min_rel * (float)width * (float)height;
    const float max_area = max_rel * (float)width * (float)height;
    int32_t h = round_int(sqrtf(min_area / aspect));
    int32_t max_h = round_int(sqrtf(max_area / aspect));
    if (round_int((float)max_h * aspect) > width) {
        /* The largest max_h whose width rounds to at most `width` (in double,
         * as the kernel's expression is). */
        const float eps = 0.0000001f;
        max_h = (int32_t)(((double)width + 0.5 - (double)eps) / (double)aspect);
        if (round_int((float)max_h * aspect) > width)
            max_h -= 1;
    }
    if (max_h > height)
        max_h = height;
    if (h >= max_h)
        h = max_h;
    if (h < max_h)
        h += (int32_t)rand_below(rng, (uint32_t)(max_h - h + 1));
    int32_t w = round_int((float)h * aspect);
    float area = (float)((int64_t)w * h);
    /* Rounding may leave the area just outside the range: one step up, then down. */
    if (area < min_area) {
        h += 1;
        w = round_int((float)h * aspect);
        area = (float)((int64_t)w * h);
    }
    if (area > max_area) {
        h -= 1;
        w = round_int((float)h * aspect);
        area = (float)((int64_t)w * h);
    }
    if (area < min_area || area > max_area || w > width || h > height || w <= 0 || h <= 0)
        return false;
    int32_t y = h < height ? (int32_t)rand_below(rng, (uint32_t)(height - h)) : 0;
    int32_t x = w < width ? (int32_t)rand_below(rng, (uint32_t)(width - w)) : 0;
    *crop = (Rect){x, y, x + w, y + h};
    return true;
}

static bool covers(Rect crop, float min_covered, const Rect *boxes, int64_t n)
{
    if (rect_area(crop) < 1)
        return false;
    for (int64_t i = 0; i < n; i++) {
        float object = (float)rect_area(boxes[i]);
        if (object < 1.0f)
            continue;
        if ((float)rect_area(rect_intersect(crop, boxes[i])) / object >= min_covered)
            return true;
    }
    return false;
}

CvStatus cv_distorted_box_check(const CvDistortedBoxArgs *a)
{
    const float *ar = a->aspect_ratio_range, *area = a->area_range;
    if (!(ar[0] > 0 && ar[1] > 0))
        return cv_error(CV_INVALID_ARGUMENT, "Aspect ratio range must be non-negative: [%g, %g]",
                        (double)ar[0], (double)ar[1]);
    if (!(area[0] > 0 && area[1] > 0))
        return cv_error(CV_INVALID_ARGUMENT, "Area range must be non-negative: [%g, %g]",
                        (double)area[0], (double)area[1]);
    if (area[0] > 1 || area[1] > 1)
        return cv_error(CV_INVALID_ARGUMENT, "Area range must be less then or equal to 1.0: "
                        "[%g, %g]", (double)area[0], (double)area[1]);
    if (a->max_attempts <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "Max attempts must be non-negative: %lld",
                        (long long)a->max_attempts);
    return CV_STATUS_OK;
}

static bool read_int(const CvTensor *t, int i, uint64_t *v)
{
    switch (t->dtype) {
    case CV_UINT8: *v = ((const uint8_t *)t->data)[i]; return true;
    case CV_INT8: *v = (uint64_t)(int64_t)((const int8_t *)t->data)[i]; return true;
    case CV_INT16: *v = (uint64_t)(int64_t)((const int16_t *)t->data)[i]; return true;
    case CV_INT32: *v = (uint64_t)(int64_t)((const int32_t *)t->data)[i]; return true;
    case CV_INT64: *v = (uint64_t)((const int64_t *)t->data)[i]; return true;
    default: return false;
    }
}

static void write_int(CvTensor *t, int i, int64_t v)
{
    switch (t->dtype) {
    case CV_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case CV_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case CV_INT16: ((int16_t *)t->data)[i] = (int16_t)v; break;
    case CV_INT32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    default: ((int64_t *)t->data)[i] = v; break;
    }
}

CvStatus cv_distorted_box_run(const CvDistortedBoxArgs *a, const CvTensor *image_size,
                              const CvTensor *boxes_t, const CvTensor *min_object_covered,
                              CvPhilox *rng, CvTensor *out)
{
    char text[CV_MAX_RANK * 24];
    Rect *boxes = NULL;
    memset(out, 0, 3 * sizeof(*out));
    CvStatus s = cv_distorted_box_check(a);
    if (s)
        goto error;
    uint64_t hw[2];
    if (image_size->rank != 1 || image_size->shape[0] != 3 || !read_int(image_size, 0, &hw[0]) ||
        !read_int(image_size, 1, &hw[1])) {
        s = cv_error(CV_INVALID_ARGUMENT, "image_size must be a 1-D integer tensor of 3 elements, "
                     "got %s shape %s", cv_dtype_name(image_size->dtype),
                     cv_shape_str(image_size->shape, image_size->rank, text, sizeof(text)));
        goto error;
    }
    if (hw[0] > INT32_MAX || hw[1] > INT32_MAX) {
        s = cv_error(CV_INVALID_ARGUMENT, "image height and width must be within int32 range");
        goto error;
    }
    const int32_t height = (int32_t)hw[0], width = (int32_t)hw[1];
    if (boxes_t->dtype != CV_FLOAT32 || boxes_t->rank != 3 || boxes_t->shape[2] != 4) {
        s = cv_error(CV_INVALID_ARGUMENT, "input boxes must be a 3-D float32 tensor [batch, "
                     "num_boxes, 4], got %s shape %s", cv_dtype_name(boxes_t->dtype),
                     cv_shape_str(boxes_t->shape, boxes_t->rank, text, sizeof(text)));
        goto error;
    }
    if (min_object_covered->dtype != CV_FLOAT32 || min_object_covered->rank != 0) {
        s = cv_error(CV_INVALID_ARGUMENT, "min_object_covered must be a float32 scalar, got %s "
                     "shape %s", cv_dtype_name(min_object_covered->dtype),
                     cv_shape_str(min_object_covered->shape, min_object_covered->rank, text,
                                  sizeof(text)));
        goto error;
    }
    const float min_covered = *(const float *)min_object_covered->data;
    if (!(min_covered >= 0)) {
        s = cv_error(CV_INVALID_ARGUMENT, "Min object covered must be non-negative: %g",
                     (double)min_covered);
        goto error;
    }
    int64_t n = boxes_t->shape[0] * boxes_t->shape[1];
    const float *v = (const float *)boxes_t->data;
    if (!(boxes = malloc((size_t)(n + 1) * sizeof(*boxes)))) {
        s = cv_error_nomem();
        goto error;
    }
    for (int64_t b = 0; b < n; b++) {
        for (int i = 0; i < 4; i++) {
            if (!(v[4 * b + i] >= 0.0f && v[4 * b + i] <= 1.0f)) {
                s = cv_error(CV_INVALID_ARGUMENT, "All bounding box coordinates must be in "
                             "[0.0, 1.0]: %g", (double)v[4 * b + i]);
                goto error;
            }
        }
        boxes[b] = (Rect){(int32_t)(v[4 * b + 1] * (float)width),
                          (int32_t)(v[4 * b + 0] * (float)height),
                          (int32_t)(v[4 * b + 3] * (float)width),
                          (int32_t)(v[4 * b + 2] * (float)height)};
    }
    const Rect image = {0, 0, width, height};
    if (n == 0) {
        if (!a->use_image_if_no_bounding_boxes) {
            s = cv_error(CV_INVALID_ARGUMENT, "No bounding boxes provided as input. One must "
                         "enable use_image_if_no_bounding_boxes if you wish to not provide any "
                         "bounding boxes.");
            goto error;
        }
        boxes[n++] = image;
    }
    const float lo = a->aspect_ratio_range[0], hi = a->aspect_ratio_range[1];
    Rect crop = image;
    for (int64_t i = 0; i < a->max_attempts; i++) {
        Rect r;
        float aspect = rand_float(rng) * (hi - lo) + lo;
        if (random_crop(width, height, a->area_range[0], a->area_range[1], aspect, rng, &r) &&
            covers(r, min_covered, boxes, n)) {
            crop = r;
            break;
        }
    }
    int64_t three = 3, box_shape[3] = {1, 1, 4};
    if ((s = cv_tensor_alloc(&out[0], image_size->dtype, 1, &three, 0, NULL)) ||
        (s = cv_tensor_alloc(&out[1], image_size->dtype, 1, &three, 0, NULL)) ||
        (s = cv_tensor_alloc(&out[2], CV_FLOAT32, 3, box_shape, 0, NULL)))
        goto error;
    write_int(&out[0], 0, crop.min_y);
    write_int(&out[0], 1, crop.min_x);
    write_int(&out[0], 2, 0);
    write_int(&out[1], 0, crop.max_y - crop.min_y);
    write_int(&out[1], 1, crop.max_x - crop.min_x);
    write_int(&out[1], 2, -1);
    float *bb = (float *)out[2].data;
    bb[0] = (float)crop.min_y / (float)height;
    bb[1] = (float)crop.min_x / (float)width;
    bb[2] = (float)crop.max_y / (float)height;
    bb[3] = (float)crop.max_x / (float)width;
    free(boxes);
    return CV_STATUS_OK;
error:
    free(boxes);
    for (int i = 0; i < 3; i++)
        cv_tensor_clear(&out[i]);
    return s;
}
