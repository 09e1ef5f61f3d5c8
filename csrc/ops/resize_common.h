/* Shared parts of the image resize ops (tf.image.resize): ResizeBilinear,
 * ResizeNearestNeighbor, ResizeArea, ResizeBicubic and ScaleAndTranslate.
 *
 * Attribute layout common to these ops: ints[0], ints[1] the requested
 * height and width (tf.image.resize's `size`, any int64: checked here;
 * unused when the op has its optional second input, the size per call),
 * ints[2] preserve_aspect_ratio (0 or 1). Ops with more attributes document
 * them after these. Images are [height, width, channels] or [batch, height,
 * width, channels] of any numeric dtype; the output has the input's rank.
 *
 * All arithmetic is float32, in the order TensorFlow's CPU kernels use, so
 * that results match tf.image.resize to a few float32 ulps. Every pass is
 * separable: per-output-column and per-output-row indices and weights are
 * computed once per call, then rows are filtered one at a time.
 */
#ifndef CV_RESIZE_COMMON_H
#define CV_RESIZE_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ops/op.h"

/* The common attribute slots; ScaleAndTranslate adds RESIZE_ANTIALIAS. */
enum { RESIZE_HEIGHT, RESIZE_WIDTH, RESIZE_PRESERVE_ASPECT_RATIO, RESIZE_ANTIALIAS };
/* Their names (CvOp.int_attrs): of the resize ops, of ScaleAndTranslate. */
extern const char *const cv_resize_int_attrs[];
extern const char *const cv_resize_antialias_int_attrs[];

/* The geometry of one resize call. */
typedef struct CvResizeGeom {
    int rank; /* 3 or 4 */
    int64_t batch, in_h, in_w, channels, out_h, out_w;
    size_t in_item; /* bytes per input value */
} CvResizeGeom;

/* Checks the image in[0] (rank, dtype, non-empty height/width, at least one
 * channel) and the size, and computes the output size, with
 * tf.image.resize's preserve_aspect_ratio rule (float32 scale, rounded half
 * to even). Error messages are TensorFlow's. The size is the attributes
 * height and width, or, when num_in is 2, the input in[1]: an int32 or
 * int64 tensor [new_height, new_width] read per call (a size computed from
 * each element's shape), the attributes then unused. */
CvStatus cv_resize_setup(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvResizeGeom *g);

/* Allocates the [batch,] out_h, out_w, channels output of `dtype` (or
 * takes ctx->dest: see cv_op_output). */
CvStatus cv_resize_alloc(const CvResizeGeom *g, CvDtype dtype, CvTensor *out,
                         const CvOpContext *ctx);

/* in_size / out_size in float32 (TensorFlow's CalculateResizeScale without
 * align_corners). */
static inline float cv_resize_scale(int64_t in_size, int64_t out_size)
{
    return (float)in_size / (float)out_size;
}

/* TensorFlow's ResizeBilinear into out (float32), applying ctx->epilogue:
 * with half_pixel_centers (tf.image.resize), or TF1's sampling with or
 * without align_corners (not both). One kernel for ResizeBilinear and
 * ResizeLegacy's bilinear method, as TensorFlow has one op for them
 * (ops/resize_bilinear.c). Reentrant. */
CvStatus cv_resize_bilinear(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                            const CvOpContext *ctx, bool align_corners, bool half_pixel_centers);

/* dst[i] = (float)src[i] for n values of a numeric dtype. */
void cv_resize_load_row(CvDtype dtype, const char *src, int64_t n, float *restrict dst);

/* acc[i] += w * (float)src[i] for n values of a numeric dtype. */
void cv_resize_add_scaled_row(CvDtype dtype, const char *src, int64_t n, float w,
                              float *restrict acc);

/* A two-slot cache of filtered rows, keyed by source row index: the
 * vertical pass of a separable resize asks for rows in (mostly) increasing
 * order, two at a time, so each row is filtered about once. `fill` computes
 * row `r` into `dst`. Not thread-safe: one per call. */
typedef struct CvRowCache {
    float *slot[2];
    int64_t row[2];
    int last; /* the slot used most recently */
} CvRowCache;

static inline void cv_row_cache_reset(CvRowCache *c)
{
    c->row[0] = c->row[1] = -1;
    c->last = 0;
}

/* The slot holding row r, or NULL (then *victim is the slot to fill). */
static inline float *cv_row_cache_find(CvRowCache *c, int64_t r, int *victim)
{
    *victim = 1 - c->last; /* always set: GCC cannot see it is read only after NULL */
    for (int k = 0; k < 2; k++) {
        if (c->row[k] == r) {
            c->last = k;
            return c->slot[k];
        }
    }
    return NULL;
}

static inline float *cv_row_cache_claim(CvRowCache *c, int k, int64_t r)
{
    c->row[k] = r;
    c->last = k;
    return c->slot[k];
}

/* Four float32 lanes (GCC/Clang vector extension: SSE on x86-64, NEON on
 * arm64, scalar code elsewhere). A 3- or 4-channel pixel is one vector;
 * each lane does exactly the scalar float32 operations. */
typedef float cv_v4f __attribute__((vector_size(16)));

static inline cv_v4f cv_v4f_load(const float *p)
{
    cv_v4f v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline void cv_v4f_store(float *p, cv_v4f v)
{
    memcpy(p, &v, sizeof(v));
}

static inline cv_v4f cv_v4f_splat(float x)
{
    return (cv_v4f){x, x, x, x};
}

/* Stores the first n (3 or 4) lanes. */
static inline void cv_v4f_store_n(float *p, cv_v4f v, int64_t n)
{
    memcpy(p, &v, (size_t)n * sizeof(float));
}

#endif
