/* ReverseV2(tensor): the values with the order of some axes reversed
 * (tf.reverse, tf.image.flip_left_right / flip_up_down and their random
 * versions).
 *
 * ints (named below) [0] mode: 0 = always reverse; 1 = random, as tf.image.random_flip_*: a
 *   rank 3 image is reversed when one uniform draw is < 0.5, a rank 4 batch
 *   draws once per image (dim 0); 2 = stateless, as
 *   tf.image.stateless_random_flip_*: input 1 is the seed (ops/stateless.h);
 *   a rank 3 image is reversed when the draw is < 0.5; in a rank 4 batch
 *   image b is f * reversed + (1 - f) * image with f = round(draw b) (so
 *   reversed when the draw is > 0.5), computed in the image's dtype.
 * [1] image: 1 = the input is an image: its rank must be 3 or 4 and its inner
 *   3 dims > 0 (TensorFlow's run-time checks for images of unknown shape).
 * [2..] axes: a negative axis counts from the end (-2 is an
 *   image's width whatever its rank).
 *
 * Rows are copied whole; within the innermost reversed axis the blocks (a
 * pixel's channels and everything after) move with fixed-size copies. An
 * unchanged result shares the input's memory. Strings (not random) are
 * copied into the result through an index map.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/image.h"
#include "ops/index_map.h"
#include "ops/numeric.h"
#include "ops/op.h"
#include "ops/stateless.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { FLIP_MODE, FLIP_IMAGE, FLIP_AXES, FLIP_NUM_INTS };
static const char *const flip_int_attrs[] = {"mode", "image", "axes[]", NULL};
CV_ATTR_NAMES_MATCH(flip_int_attrs, FLIP_NUM_INTS);

/* Reverse n blocks of `block` bytes from src into dst. Fixed sizes let the
 * compiler turn each memcpy into a move or two. */
static void reverse_blocks(char *dst, const char *src, int64_t n, size_t block)
{
#define REVERSE(B)                                                                                 \
    for (int64_t i = 0; i < n; i++)                                                                \
        memcpy(dst + i * (B), src + (n - 1 - i) * (B), (B));                                       \
    return;
    switch (block) {
    case 1: REVERSE(1)
    case 2: REVERSE(2)
    case 3: REVERSE(3)
    case 4: REVERSE(4)
    case 6: REVERSE(6)
    case 8: REVERSE(8)
    case 12: REVERSE(12)
    case 16: REVERSE(16)
    default: REVERSE(block)
    }
#undef REVERSE
}

/* dst = src with the axes in `mask` (bit d: axis d) reversed; a dense
 * tensor of `rank` dims `shape`, values of `esize` bytes. */
static void reverse_copy(char *dst, const char *src, const int64_t *shape, int rank, uint32_t mask,
                         size_t esize)
{
    int last = -1;
    int64_t rows = 1, n, idx[CV_MAX_RANK] = {0};
    size_t block = esize;
    for (int d = 0; d < rank; d++) {
        if (shape[d] == 0)
            return;
        if (mask & (1u << d))
            last = d;
    }
    for (int d = last + 1; d < rank; d++)
        block *= (size_t)shape[d];
    if (last < 0) {
        memcpy(dst, src, block);
        return;
    }
    for (int d = 0; d < last; d++)
        rows *= shape[d];
    n = shape[last];
    size_t row_bytes = (size_t)n * block;
    for (int64_t r = 0; r < rows; r++) {
        /* Source row: the row index with the reversed outer axes mirrored. */
        int64_t from = 0;
        for (int d = 0; d < last; d++)
            from = from * shape[d] + ((mask & (1u << d)) ? shape[d] - 1 - idx[d] : idx[d]);
        reverse_blocks(dst + (size_t)r * row_bytes, src + (size_t)from * row_bytes, n, block);
        for (int d = last - 1; d >= 0 && ++idx[d] == shape[d]; d--)
            idx[d] = 0;
    }
}

/* dst = f * flipped + (1 - f) * src in T, f in {0, 1}. */
#define BLEND(T, TO, FROM)                                                                         \
    for (int64_t i = 0; i < n; i++)                                                                \
        ((T *)dst)[i] = FROM(f * TO(((const T *)flipped)[i]) + (1 - f) * TO(((const T *)src)[i]));

/* Mode 2 on a batch: each image blended with its reversed copy. */
static CvStatus blend_flips(const CvTensor *v, CvTensor *out, uint32_t mask, size_t esize,
                            CvPhilox *rng)
{
    CvStatus s = cv_tensor_alloc(out, v->dtype, v->rank, v->shape, 0, NULL);
    if (s)
        return s;
    size_t item = cv_tensor_nbytes(v) / (size_t)(v->shape[0] ? v->shape[0] : 1);
    int64_t n = (int64_t)(item / esize);
    char *flipped = malloc(item ? item : 1);
    if (!flipped) {
        cv_tensor_clear(out);
        return cv_error_nomem();
    }
    for (int64_t b = 0; b < v->shape[0]; b++) {
        const char *src = v->data + (size_t)b * item;
        char *dst = out->data + (size_t)b * item;
        float u = cv_stateless_float(rng);
        int f = u > 0.5f; /* round half to even: 0.5 gives 0 */
        reverse_copy(flipped, src, v->shape + 1, 3, mask, esize);
        switch (v->dtype) {
        case CV_FLOAT32: BLEND(float, (float), (float)) break;
        case CV_FLOAT64: BLEND(double, (double), (double)) break;
        case CV_FLOAT16: BLEND(cv_half, cv_half_to_float, cv_float_to_half) break;
        default: memcpy(dst, f ? flipped : src, item); break;
        }
    }
    free(flipped);
    return CV_STATUS_OK;
}
#undef BLEND

static CvStatus reverse_strings(const CvTensor *v, uint32_t mask, CvTensor *out)
{
    CvIndexMap m;
    int64_t stride[CV_MAX_RANK];
    CvStatus s = cv_index_map_init(&m, v->rank, v->shape);
    if (s)
        return s;
    cv_index_map_strides(v, stride);
    if (m.total)
        for (int d = 0; d < v->rank; d++) {
            m.stride[d] = stride[d];
            for (int64_t o = 0; o < v->shape[d]; o++)
                m.map[d][o] = (mask & (1u << d)) ? v->shape[d] - 1 - o : o;
        }
    s = cv_index_map_copy(&m, v, NULL, out);
    cv_index_map_free(&m);
    return s;
}

static CvStatus flip_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                         int num_out, CvOpContext *ctx)
{
    (void)num_out;
    const CvTensor *v = &in[0];
    bool random = attrs->num_ints > FLIP_MODE && attrs->ints[FLIP_MODE] == 1;
    bool stateless = attrs->num_ints > FLIP_MODE && attrs->ints[FLIP_MODE] == 2 && num_in > 1;
    CvPhilox rng;
    bool image = attrs->num_ints > FLIP_IMAGE && attrs->ints[FLIP_IMAGE] == 1;
    uint32_t mask = 0;
    if (v->dtype == CV_STRING && (random || stateless))
        return cv_error(CV_UNIMPLEMENTED, "flipping string images is not supported");
    if (image || random || stateless) {
        CvStatus s = cv_image_check(v, 4);
        if (s || (stateless && (s = cv_stateless_init(&in[1], &rng))))
            return s;
    }
    for (int i = FLIP_AXES; i < attrs->num_ints; i++) {
        int64_t axis = attrs->ints[i] < 0 ? attrs->ints[i] + v->rank : attrs->ints[i];
        if (axis < 0 || axis >= v->rank)
            return cv_error(CV_INVALID_ARGUMENT, "axis %lld is out of range for a rank %d tensor",
                            (long long)attrs->ints[i], v->rank);
        if (v->shape[axis] > 1) /* reversing a dim of size 1 changes nothing */
            mask |= 1u << axis;
    }
    size_t esize = cv_dtype_size(v->dtype);
    if (random && v->rank == 4) {
        /* One draw per image: reversed or copied. */
        CvStatus s = cv_tensor_alloc(&out[0], v->dtype, v->rank, v->shape, 0, NULL);
        if (s)
            return s;
        size_t item = cv_tensor_nbytes(v) / (size_t)(v->shape[0] ? v->shape[0] : 1);
        for (int64_t b = 0; b < v->shape[0]; b++) {
            const char *src = v->data + (size_t)b * item;
            char *dst = out[0].data + (size_t)b * item;
            if (cv_op_random_uniform(ctx) < 0.5f)
                reverse_copy(dst, src, v->shape + 1, 3, mask >> 1, esize);
            else
                memcpy(dst, src, item);
        }
        return CV_STATUS_OK;
    }
    if (stateless && v->rank == 4)
        return blend_flips(v, &out[0], mask >> 1, esize, &rng);
    if (stateless && !(cv_stateless_float(&rng) < 0.5f))
        mask = 0;
    if (random && !(cv_op_random_uniform(ctx) < 0.5f))
        mask = 0;
    if (mask == 0) {
        cv_tensor_copy_ref(&out[0], v);
        return CV_STATUS_OK;
    }
    if (v->dtype == CV_STRING)
        return reverse_strings(v, mask, &out[0]);
    CvStatus s = cv_tensor_alloc(&out[0], v->dtype, v->rank, v->shape, 0, NULL);
    if (s)
        return s;
    reverse_copy(out[0].data, v->data, v->shape, v->rank, mask, esize);
    return CV_STATUS_OK;
}

const CvOp cv_op_flip = {.name = "ReverseV2", .min_inputs = 1, .max_inputs = 2, .run = flip_run,
    .int_attrs = flip_int_attrs};
