/* Shared parts of the resize ops: argument checks, output size, row
 * conversions (see ops/resize_common.h). */
#include <math.h>
#include <string.h>

#include "ops/image.h"
#include "ops/numeric.h"
#include "ops/resize_common.h"

const char *const cv_resize_int_attrs[] = {"height", "width", "preserve_aspect_ratio", NULL};
CV_ATTR_NAMES_MATCH(cv_resize_int_attrs, RESIZE_PRESERVE_ASPECT_RATIO + 1);
const char *const cv_resize_antialias_int_attrs[] = {"height", "width", "preserve_aspect_ratio",
                                                     "antialias", NULL};
CV_ATTR_NAMES_MATCH(cv_resize_antialias_int_attrs, RESIZE_ANTIALIAS + 1);

static bool is_numeric(CvDtype dtype)
{
    return dtype != CV_BOOL && dtype != CV_STRING && dtype >= 0 && dtype < CV_NUM_DTYPES;
}

/* tf.image.resize's preserve_aspect_ratio: scale both sides by the smaller
 * of the two float32 ratios, rounding half to even (tf.round). A result
 * outside int32 is what TensorFlow's cast makes negative. */
static int64_t preserved_size(int64_t requested_h, int64_t requested_w, int64_t in_h, int64_t in_w,
                              bool height)
{
    float sh = (float)requested_h / (float)in_h;
    float sw = (float)requested_w / (float)in_w;
    float s = sh < sw ? sh : sw;
    float v = rintf(s * (float)(height ? in_h : in_w));
    if (!(v > -2147483648.0f && v < 2147483648.0f))
        return -1;
    return (int64_t)v;
}

/* The optional size input: [new_height, new_width], int32 or int64. */
static CvStatus size_input(const CvTensor *size, int64_t *h, int64_t *w)
{
    if (size->rank != 1 || size->shape[0] != 2 ||
        (size->dtype != CV_INT32 && size->dtype != CV_INT64))
        return cv_error(CV_INVALID_ARGUMENT,
                        "size must be a 1-D int32 tensor of 2 elements: new_height, new_width");
    if (size->dtype == CV_INT32) {
        int32_t v[2];
        memcpy(v, size->data, sizeof(v));
        *h = v[0];
        *w = v[1];
    } else {
        int64_t v[2];
        memcpy(v, size->data, sizeof(v));
        *h = v[0];
        *w = v[1];
    }
    return CV_STATUS_OK;
}

CvStatus cv_resize_setup(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvResizeGeom *g)
{
    const CvTensor *image = &in[0];
    if (attrs->num_ints <= RESIZE_PRESERVE_ASPECT_RATIO)
        return cv_error(CV_INVALID_ARGUMENT,
                        "resize needs size and preserve_aspect_ratio attributes");
    CvStatus s = cv_image_check_rank(image, "images");
    if (s)
        return s;
    if (!is_numeric(image->dtype))
        return cv_error(CV_INVALID_ARGUMENT, "images of dtype %s cannot be resized",
                        cv_dtype_name(image->dtype));
    const int64_t *dims = image->shape + (image->rank - 3);
    g->rank = image->rank;
    g->batch = image->rank == 4 ? image->shape[0] : 1;
    g->in_h = dims[0];
    g->in_w = dims[1];
    g->channels = dims[2];
    g->in_item = cv_dtype_size(image->dtype);
    if (g->channels <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "image must have at least one channel");
    if (g->in_h <= 0 || g->in_w <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "input image must be of non-zero size");
    if (g->in_h > INT32_MAX || g->in_w > INT32_MAX)
        return cv_error(CV_INVALID_ARGUMENT, "input sizes must be between 0 and max int32");
    int64_t h = attrs->ints[RESIZE_HEIGHT], w = attrs->ints[RESIZE_WIDTH];
    if (num_in > 1 && (s = size_input(&in[1], &h, &w)))
        return s;
    if (attrs->ints[RESIZE_PRESERVE_ASPECT_RATIO] && h >= INT32_MIN && h <= INT32_MAX &&
        w >= INT32_MIN && w <= INT32_MAX) {
        int64_t ph = preserved_size(h, w, g->in_h, g->in_w, true);
        w = preserved_size(h, w, g->in_h, g->in_w, false);
        h = ph;
    }
    if (h <= 0 || w <= 0 || h > INT32_MAX || w > INT32_MAX)
        return cv_error(CV_INVALID_ARGUMENT, "output dimensions must be positive");
    g->out_h = h;
    g->out_w = w;
    return CV_STATUS_OK;
}

CvStatus cv_resize_alloc(const CvResizeGeom *g, CvDtype dtype, CvTensor *out,
                         const CvOpContext *ctx)
{
    int64_t shape[4] = {g->batch, g->out_h, g->out_w, g->channels};
    return g->rank == 4 ? cv_op_output(ctx, out, dtype, 4, shape)
                        : cv_op_output(ctx, out, dtype, 3, shape + 1);
}

/* X(dtype, C type, load expression of `p[i]`) for every numeric dtype. */
#define CV_RESIZE_DTYPES(X)                                                                        \
    X(CV_INT8, int8_t, (float)p[i])                                                                \
    X(CV_INT16, int16_t, (float)p[i])                                                              \
    X(CV_INT32, int32_t, (float)p[i])                                                              \
    X(CV_INT64, int64_t, (float)p[i])                                                              \
    X(CV_UINT8, uint8_t, (float)p[i])                                                              \
    X(CV_UINT16, uint16_t, (float)p[i])                                                            \
    X(CV_UINT32, uint32_t, (float)p[i])                                                            \
    X(CV_UINT64, uint64_t, (float)p[i])                                                            \
    X(CV_FLOAT16, cv_half, cv_half_to_float(p[i]))                                                 \
    X(CV_FLOAT32, float, p[i])                                                                     \
    X(CV_FLOAT64, double, (float)p[i])

void cv_resize_load_row(CvDtype dtype, const char *src, int64_t n, float *restrict dst)
{
    switch (dtype) {
#define LOAD_CASE(DT, T, LOAD)                                                                     \
    case DT: {                                                                                     \
        const T *restrict p = (const T *)src;                                                      \
        for (int64_t i = 0; i < n; i++)                                                            \
            dst[i] = LOAD;                                                                         \
        break;                                                                                     \
    }
        CV_RESIZE_DTYPES(LOAD_CASE)
#undef LOAD_CASE
    default: /* cv_resize_setup refuses other dtypes */
        memset(dst, 0, (size_t)n * sizeof(float));
        break;
    }
}

void cv_resize_add_scaled_row(CvDtype dtype, const char *src, int64_t n, float w,
                              float *restrict acc)
{
    switch (dtype) {
#define ADD_CASE(DT, T, LOAD)                                                                      \
    case DT: {                                                                                     \
        const T *restrict p = (const T *)src;                                                      \
        for (int64_t i = 0; i < n; i++)                                                            \
            acc[i] += w * LOAD;                                                                    \
        break;                                                                                     \
    }
        CV_RESIZE_DTYPES(ADD_CASE)
#undef ADD_CASE
    default:
        break;
    }
}
