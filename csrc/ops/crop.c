/* CropOrPad(value[, params]): a window of a tensor, zero padded where the
 * window reaches past the input: tf.image.crop_to_bounding_box,
 * pad_to_bounding_box, resize_with_crop_or_pad, central_crop and
 * tf.image.random_crop. The window is computed here from the runtime shape,
 * so traced images of unknown size crop as TensorFlow's Python computes it.
 *
 * Attributes (named below): `mode`, then `params` by mode. The image modes
 * (all but RANDOM) work on the height and width dims of a rank 3 ([h, w, c])
 * or rank 4 ([n, h, w, c]) value:
 *   BOX (0), PAD (1): params[0..3] = offset_h, offset_w, target_h, target_w;
 *   CROP_OR_PAD (2):  params[2..3] = target_h, target_w (offsets from the shape);
 *     for these three, params[4] is a mask: bit k set means parameter k
 *     (offset_h, offset_w, target_h, target_w) is the next input, a scalar
 *     integer, instead of params[k];
 *   CENTRAL (3): floats height_fraction, width_fraction = central_fraction
 *     for the height and the width (TensorFlow rounds it to float32 for a dim
 *     it only knows at run time), or input 1 (a scalar float) for both;
 *   RANDOM (4): any rank; params = the size of every dim, or input 1 (an
 *     integer vector); offsets uniform in [0, dim - size] from the op's
 *     random stream.
 *   STATELESS (5): as RANDOM with params the sizes and input 1 the seed
 *     of tf.image.stateless_random_crop (ops/stateless.h): offset d is
 *     (a uniform int32 in [0, 2**31 - 1)) % (dim - size + 1).
 *
 * The copy moves whole spans of the innermost dims that are not cut with
 * one memcpy; a window that is one contiguous run of the input (a crop of
 * rows, or no crop at all) shares the input's memory.
 */
#include <string.h>

#include "ops/image.h"
#include "ops/op.h"
#include "ops/stateless.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { CROP_MODE, CROP_PARAMS, CROP_NUM_INTS };
static const char *const crop_int_attrs[] = {"mode", "params[]", NULL};
CV_ATTR_NAMES_MATCH(crop_int_attrs, CROP_NUM_INTS);
/* The params of BOX, PAD and CROP_OR_PAD: offset_h, offset_w, target_h,
 * target_w, then the mask of those given as inputs. */
enum { CROP_BOX_PARAMS = 4, CROP_BOX_MASK = CROP_PARAMS + CROP_BOX_PARAMS };
enum { CROP_HEIGHT_FRACTION, CROP_WIDTH_FRACTION, CROP_NUM_FLOATS };
static const char *const crop_float_attrs[] = {"height_fraction?", "width_fraction?", NULL};
CV_ATTR_NAMES_MATCH(crop_float_attrs, CROP_NUM_FLOATS);

enum { BOX, PAD, CROP_OR_PAD, CENTRAL, RANDOM, STATELESS };

/* Per dim: copy input [src, src + len) to output [dst, dst + len). */
typedef struct {
    int64_t src, dst, len, out;
} Span;

static CvStatus scalar_int(const CvTensor *t, int64_t *v)
{
    if (cv_tensor_num_elements(t) != 1)
        return cv_error(CV_INVALID_ARGUMENT, "crop parameters must be scalars, got %d values",
                        (int)cv_tensor_num_elements(t));
    switch (t->dtype) {
    case CV_INT8: *v = *(const int8_t *)t->data; break;
    case CV_INT16: *v = *(const int16_t *)t->data; break;
    case CV_INT32: *v = *(const int32_t *)t->data; break;
    case CV_INT64: *v = *(const int64_t *)t->data; break;
    case CV_UINT8: *v = *(const uint8_t *)t->data; break;
    case CV_UINT16: *v = *(const uint16_t *)t->data; break;
    case CV_UINT32: *v = *(const uint32_t *)t->data; break;
    default:
        return cv_error(CV_INVALID_ARGUMENT, "crop parameters must be integers, got %s",
                        cv_dtype_name(t->dtype));
    }
    return CV_STATUS_OK;
}

static CvStatus fail(const char *message)
{
    return cv_error(CV_INVALID_ARGUMENT, "%s", message);
}

/* The [offset_h, offset_w, target_h, target_w] window of the image modes and
 * its checks, in TensorFlow's words. */
static CvStatus box_spans(int mode, const int64_t p[4], int64_t h, int64_t w, Span *sh, Span *sw)
{
    int64_t oh = p[0], ow = p[1], th = p[2], tw = p[3];
    if (mode == BOX) {
        if (ow < 0)
            return fail("offset_width must be >= 0.");
        if (oh < 0)
            return fail("offset_height must be >= 0.");
        if (tw <= 0)
            return fail("target_width must be > 0.");
        if (th <= 0)
            return fail("target_height must be > 0.");
        if (w - ow < tw)
            return fail("width must be >= target + offset.");
        if (h - oh < th)
            return fail("height must be >= target + offset.");
        *sh = (Span){oh, 0, th, th};
        *sw = (Span){ow, 0, tw, tw};
    } else if (mode == PAD) {
        if (oh < 0)
            return fail("offset_height must be >= 0");
        if (ow < 0)
            return fail("offset_width must be >= 0");
        int64_t room;
        /* after_padding = target - offset - size must be >= 0 */
        if (__builtin_sub_overflow(tw, w, &room) || room < ow)
            return fail("width must be <= target - offset");
        if (__builtin_sub_overflow(th, h, &room) || room < oh)
            return fail("height must be <= target - offset");
        *sh = (Span){0, oh, h, th};
        *sw = (Span){0, ow, w, tw};
    } else {
        if (tw <= 0)
            return fail("target_width must be > 0.");
        if (th <= 0)
            return fail("target_height must be > 0.");
        /* Centered: crop by floor((size - target) / 2), pad by floor((target - size) / 2). */
        const int64_t size[2] = {h, w}, target[2] = {th, tw};
        Span *s[2] = {sh, sw};
        for (int i = 0; i < 2; i++) {
            int64_t diff = target[i] - size[i];
            s[i]->src = diff < 0 ? (-diff) / 2 : 0;
            s[i]->dst = diff > 0 ? diff / 2 : 0;
            s[i]->len = diff < 0 ? target[i] : size[i];
            s[i]->out = target[i];
        }
    }
    return CV_STATUS_OK;
}

/* central_crop's offsets: (d - d * fraction) / 2 in double, truncated. */
static Span central_span(int64_t d, double fraction)
{
    double dd = (double)d;
    int64_t start = (int64_t)((dd - dd * fraction) / 2); /* in [0, d / 2] */
    return (Span){start, 0, d - 2 * start, d - 2 * start};
}

static CvStatus random_spans(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                             CvOpContext *ctx, Span *span, bool stateless)
{
    CvPhilox rng;
    if (stateless) {
        CvStatus s = num_in > 1 ? cv_stateless_init(&in[1], &rng)
                                : cv_error(CV_INVALID_ARGUMENT, "a stateless crop needs a seed");
        if (s)
            return s;
        num_in = 1; /* the sizes are attributes */
    }
    int64_t size[CV_MAX_RANK];
    int n = attrs->num_ints - CROP_PARAMS;
    const CvTensor *v = &in[0];
    if (num_in > 1) {
        const CvTensor *t = &in[1];
        if (t->rank != 1 || (t->dtype != CV_INT32 && t->dtype != CV_INT64))
            return cv_error(CV_INVALID_ARGUMENT, "size must be a 1-D int32 or int64 tensor");
        n = (int)(t->shape[0] < CV_MAX_RANK + 1 ? t->shape[0] : CV_MAX_RANK + 1);
    }
    if (n != v->rank)
        return cv_error(CV_INVALID_ARGUMENT, "Incompatible shapes: [%d] vs. [%d]", v->rank, n);
    bool fits = true;
    for (int d = 0; d < n; d++) {
        if (num_in > 1)
            size[d] = in[1].dtype == CV_INT32 ? ((const int32_t *)in[1].data)[d]
                                              : ((const int64_t *)in[1].data)[d];
        else
            size[d] = attrs->ints[CROP_PARAMS + d];
        if (size[d] < 0) {
            char text[CV_MAX_RANK * 24];
            return cv_error(CV_INVALID_ARGUMENT, "size must be >= 0, got %s",
                            cv_shape_str(size, d + 1, text, sizeof(text)));
        }
        fits = fits && v->shape[d] >= size[d];
    }
    if (!fits) {
        char have[CV_MAX_RANK * 24], want[CV_MAX_RANK * 24];
        return cv_error(CV_INVALID_ARGUMENT, "Need value.shape >= size, got %s %s",
                        cv_shape_str(v->shape, n, have, sizeof(have)),
                        cv_shape_str(size, n, want, sizeof(want)));
    }
    for (int d = 0; d < n; d++) {
        int64_t offset;
        if (stateless) /* TensorFlow's int32 arithmetic: the limit fits */
            offset = (int64_t)((cv_philox_next(&rng) % 0x7fffffffu) %
                               (uint64_t)(v->shape[d] - size[d] + 1));
        else
            offset = (int64_t)cv_op_random_below(ctx, (uint64_t)(v->shape[d] - size[d]) + 1);
        span[d] = (Span){offset, 0, size[d], size[d]};
    }
    return CV_STATUS_OK;
}

/* Copies the window; `out` is allocated with the spans' output shape. */
static void copy_window(const CvTensor *in, CvTensor *out, const Span *span, size_t esize)
{
    int rank = in->rank, last = -1;
    bool pad = false;
    int64_t in_stride[CV_MAX_RANK], out_stride[CV_MAX_RANK], idx[CV_MAX_RANK] = {0};
    bool empty = false;
    for (int d = rank - 1; d >= 0; d--) {
        in_stride[d] = d == rank - 1 ? (int64_t)esize : in_stride[d + 1] * in->shape[d + 1];
        out_stride[d] = d == rank - 1 ? (int64_t)esize : out_stride[d + 1] * span[d + 1].out;
        empty = empty || span[d].len == 0;
        pad = pad || span[d].len < span[d].out;
        if (last < 0 && (span[d].len != in->shape[d] || span[d].len != span[d].out))
            last = d;
    }
    if (pad)
        memset(out->data, 0, cv_tensor_nbytes(out));
    if (empty || rank == 0)
        return;
    if (last < 0)
        last = 0;
    /* Dims after `last` are whole: each (index over dims < last) is one span. */
    size_t run = (size_t)(span[last].len * in_stride[last]);
    for (;;) {
        int64_t src = span[last].src * in_stride[last], dst = span[last].dst * out_stride[last];
        for (int d = 0; d < last; d++) {
            src += (span[d].src + idx[d]) * in_stride[d];
            dst += (span[d].dst + idx[d]) * out_stride[d];
        }
        memcpy(out->data + dst, in->data + src, run);
        int d = last - 1;
        while (d >= 0 && ++idx[d] == span[d].len)
            idx[d--] = 0;
        if (d < 0)
            return;
    }
}

static CvStatus crop_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                         int num_out, CvOpContext *ctx)
{
    (void)num_out;
    const CvTensor *v = &in[0];
    int mode = attrs->num_ints > CROP_MODE ? (int)attrs->ints[CROP_MODE] : -1;
    Span span[CV_MAX_RANK];
    CvStatus s;
    if (v->dtype == CV_STRING)
        return cv_error(CV_UNIMPLEMENTED, "cropping string tensors is not supported");
    for (int d = 0; d < v->rank; d++)
        span[d] = (Span){0, 0, v->shape[d], v->shape[d]};
    if (mode == RANDOM || mode == STATELESS) {
        if ((s = random_spans(attrs, in, num_in, ctx, span, mode == STATELESS)))
            return s;
    } else if (mode >= BOX && mode <= CENTRAL) {
        if ((s = cv_image_check_rank(v, "image")))
            return s;
        int hd = v->rank - 3, wd = v->rank - 2;
        int64_t h = v->shape[hd], w = v->shape[wd];
        if (mode == CENTRAL) {
            const double *f = attrs->floats;
            double fh = attrs->num_floats > CROP_HEIGHT_FRACTION ? f[CROP_HEIGHT_FRACTION] : 1.0;
            double fw = attrs->num_floats > CROP_WIDTH_FRACTION ? f[CROP_WIDTH_FRACTION] : fh;
            if (num_in > 1) {
                if (cv_tensor_num_elements(&in[1]) != 1 ||
                    (in[1].dtype != CV_FLOAT32 && in[1].dtype != CV_FLOAT64))
                    return fail("central_fraction must be a float scalar");
                fh = fw = in[1].dtype == CV_FLOAT32 ? *(const float *)in[1].data
                                                    : *(const double *)in[1].data;
            }
            if (!(fh > 0.0 && fh <= 1.0 && fw > 0.0 && fw <= 1.0))
                return fail("central_fraction must be within (0, 1]");
            span[hd] = central_span(h, fh);
            span[wd] = central_span(w, fw);
        } else {
            int64_t p[4];
            int64_t mask = attrs->num_ints > CROP_BOX_MASK ? attrs->ints[CROP_BOX_MASK] : 0;
            int next = 1;
            for (int k = 0; k < CROP_BOX_PARAMS; k++) {
                if (!(mask & (1 << k))) {
                    p[k] = attrs->num_ints > CROP_PARAMS + k ? attrs->ints[CROP_PARAMS + k] : 0;
                } else if (next >= num_in) {
                    return fail("missing crop parameter input");
                } else if ((s = scalar_int(&in[next++], &p[k]))) {
                    return s;
                }
            }
            for (int d = v->rank - 3; d < v->rank; d++)
                if (v->shape[d] == 0)
                    return fail("inner 3 dims of 'image.shape' must be > 0.");
            if ((s = box_spans(mode, p, h, w, &span[hd], &span[wd])))
                return s;
        }
    } else {
        return cv_error(CV_INVALID_ARGUMENT, "CropOrPad: unknown mode %d", mode);
    }

    int64_t shape[CV_MAX_RANK];
    bool whole = true;
    int64_t outer = 1; /* index combinations before the first cut dim */
    int first = -1;
    for (int d = 0; d < v->rank; d++) {
        shape[d] = span[d].out;
        bool full = span[d].len == v->shape[d] && span[d].len == span[d].out;
        if (!full && first < 0)
            first = d;
        if (first >= 0 && d > first && !full)
            whole = false; /* two cut dims: not one run */
        if (first < 0)
            outer *= v->shape[d];
        if (span[d].len != span[d].out)
            whole = false; /* padding */
    }
    if (whole && (first < 0 || outer == 1 || span[first].len == 0)) {
        /* One contiguous run of the input: a view. */
        size_t esize = cv_dtype_size(v->dtype);
        int64_t offset = 0, stride = (int64_t)esize;
        for (int d = v->rank - 1; d >= 0; d--) {
            offset += span[d].src * stride;
            stride *= v->shape[d];
        }
        cv_tensor_copy_ref(&out[0], v);
        out[0].data += offset;
        memcpy(out[0].shape, shape, (size_t)v->rank * sizeof(int64_t));
        return CV_STATUS_OK;
    }
    if ((s = cv_tensor_alloc(&out[0], v->dtype, v->rank, shape, 0, NULL)))
        return s;
    copy_window(v, &out[0], span, cv_dtype_size(v->dtype));
    return CV_STATUS_OK;
}

const CvOp cv_op_crop = {.name = "CropOrPad", .min_inputs = 1, .max_inputs = 5, .run = crop_run,
    .int_attrs = crop_int_attrs, .float_attrs = crop_float_attrs};
