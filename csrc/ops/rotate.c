/* Rot90(image[, k]): tf.image.rot90 (k quarter turns counter-clockwise)
 * and tf.image.transpose, on a rank 3 or 4 image.
 *
 * ints[0]: k in 0..3, or 4 for the transpose (swap height and width); a
 * second input, a scalar integer, gives k at run time instead (taken mod
 * 4, as TensorFlow does).
 *
 * Each output pixel is one fixed-size copy from its source pixel: the
 * source of output (y, x) is base + y * dy + x * dx pixels into the image.
 */
#include <string.h>

#include "ops/image.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { ROTATE_K, ROTATE_NUM_INTS };
static const char *const rotate_int_attrs[] = {"k", NULL};
CV_ATTR_NAMES_MATCH(rotate_int_attrs, ROTATE_NUM_INTS);

static void gather(char *dst, const char *src, int64_t rows, int64_t cols, int64_t base,
                   int64_t dy, int64_t dx, size_t pixel)
{
#define GATHER(P)                                                                                  \
    for (int64_t y = 0; y < rows; y++)                                                             \
        for (int64_t x = 0; x < cols; x++, dst += (P))                                             \
            memcpy(dst, src + (base + y * dy + x * dx) * (int64_t)(P), (P));                       \
    return;
    switch (pixel) {
    case 1: GATHER(1)
    case 2: GATHER(2)
    case 3: GATHER(3)
    case 4: GATHER(4)
    case 6: GATHER(6)
    case 8: GATHER(8)
    case 12: GATHER(12)
    case 16: GATHER(16)
    default: GATHER(pixel)
    }
#undef GATHER
}

static CvStatus rot90_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)num_out;
    (void)ctx;
    const CvTensor *v = &in[0];
    int64_t k = attrs->num_ints > ROTATE_K ? attrs->ints[ROTATE_K] : 1;
    if (num_in > 1) {
        const CvTensor *t = &in[1];
        if (cv_tensor_num_elements(t) != 1 || (t->dtype != CV_INT32 && t->dtype != CV_INT64))
            return cv_error(CV_INVALID_ARGUMENT, "k must be a scalar int32 or int64");
        k = t->dtype == CV_INT32 ? *(const int32_t *)t->data : *(const int64_t *)t->data;
        k = ((k % 4) + 4) % 4;
    }
    if (k < 0 || k > 4)
        return cv_error(CV_INVALID_ARGUMENT, "Rot90: bad k %lld", (long long)k);
    if (v->dtype == CV_STRING)
        return cv_error(CV_UNIMPLEMENTED, "rotating string tensors is not supported");
    CvStatus s = cv_image_check(v, 4);
    if (s)
        return s;
    if (k == 0) {
        cv_tensor_copy_ref(&out[0], v);
        return CV_STATUS_OK;
    }
    int hd = v->rank - 3;
    int64_t h = v->shape[hd], w = v->shape[hd + 1], shape[4];
    memcpy(shape, v->shape, (size_t)v->rank * sizeof(int64_t));
    if (k != 2) {
        shape[hd] = w;
        shape[hd + 1] = h;
    }
    s = cv_tensor_alloc(&out[0], v->dtype, v->rank, shape, 0, NULL);
    if (s)
        return s;
    /* Output (y, x) reads input pixel base + y * dy + x * dx. */
    int64_t base, dy, dx;
    switch (k) {
    case 1: base = w - 1, dy = -1, dx = w; break;               /* in[x][w-1-y] */
    case 2: base = (h - 1) * w + w - 1, dy = -w, dx = -1; break; /* in[h-1-y][w-1-x] */
    case 3: base = (h - 1) * w, dy = 1, dx = -w; break;         /* in[h-1-x][y] */
    default: base = 0, dy = 1, dx = w; break;                    /* transpose: in[x][y] */
    }
    size_t pixel = cv_dtype_size(v->dtype) * (size_t)v->shape[hd + 2];
    size_t image = pixel * (size_t)(h * w);
    int64_t batch = v->rank == 4 ? v->shape[0] : 1;
    for (int64_t b = 0; b < batch; b++)
        gather(out[0].data + (size_t)b * image, v->data + (size_t)b * image, shape[hd],
               shape[hd + 1], base, dy, dx, pixel);
    return CV_STATUS_OK;
}

const CvOp cv_op_rotate = {.name = "Rot90", .min_inputs = 1, .max_inputs = 2, .run = rot90_run,
    .int_attrs = rotate_int_attrs};
