/* AdjustHsv(images[, value]): the HSV colour ops of tf.image on the last
 * dim (3: R, G, B) of float images, with TensorFlow's CPU arithmetic.
 *
 * ints[0] is the mode:
 *   0 = adjust_saturation (float32): to HSV (hue as a fraction of 1), S
 *       times the factor clamped to [0, 1], back to RGB;
 *   1 = adjust_hue (float32): hue kept as a position in [0, 6) with the
 *       channel min and max; delta * 6 is added and wrapped into [0, 6);
 *   2 = rgb_to_hsv, 3 = hsv_to_rgb (float32).
 * floats[0]: the factor or delta, unless input 1 (a float scalar) gives it
 * at run time. Output: a new tensor of the input's shape and dtype.
 * Subnormal values are flushed to zero, as in TensorFlow's kernels.
 */
#include <float.h>
#include <math.h>

#include "ops/flush_denormals.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { HSV_MODE, HSV_NUM_INTS };
static const char *const hsv_int_attrs[] = {"mode", NULL};
CV_ATTR_NAMES_MATCH(hsv_int_attrs, HSV_NUM_INTS);
enum { HSV_VALUE, HSV_NUM_FLOATS };
static const char *const hsv_float_attrs[] = {"value", NULL};
CV_ATTR_NAMES_MATCH(hsv_float_attrs, HSV_NUM_FLOATS);

enum { SATURATION, HUE, TO_HSV, TO_RGB };

static inline float fmaxf_(float a, float b) { return a < b ? b : a; }
static inline float fminf_(float a, float b) { return b < a ? b : a; }

static void saturation(const float *in, float *out, float scale)
{
    float r = in[0], g = in[1], b = in[2];
    float v = fmaxf_(r, fmaxf_(g, b));
    float range = v - fminf_(r, fminf_(g, b));
    float s = v > 0 ? range / v : 0.0f;
    float norm = 1.0f / (6.0f * range), h;
    if (r == v)
        h = norm * (g - b);
    else if (g == v)
        h = (float)((double)(norm * (b - r)) + 2.0 / 6.0);
    else
        h = (float)((double)(norm * (r - g)) + 4.0 / 6.0);
    if (range <= 0.0f)
        h = 0.0f;
    if (h < 0.0f)
        h = h + 1.0f;
    s = fminf_(1.0f, fmaxf_(0.0f, s * scale));
    /* back to RGB */
    float c = s * v, m = v - c, dh = h * 6.0f, f = dh;
    int cat = dh >= 0.0f && dh < 7.0f ? (int)dh : -1;
    /* h is in [0, 1] or NaN here, so these loops are short */
    while (f <= 0.0f && isfinite(f))
        f += 2.0f;
    while (f >= 2.0f && isfinite(f))
        f -= 2.0f;
    float x = c * (1.0f - fabsf(f - 1.0f)), rr = 0, gg = 0, bb = 0;
    switch (cat) {
    case 0: rr = c, gg = x; break;
    case 1: rr = x, gg = c; break;
    case 2: gg = c, bb = x; break;
    case 3: gg = x, bb = c; break;
    case 4: rr = x, bb = c; break;
    case 5: rr = c, bb = x; break;
    default: break;
    }
    out[0] = rr + m;
    out[1] = gg + m;
    out[2] = bb + m;
}

static void hue(const float *in, float *out, float delta)
{
    float r = in[0], g = in[1], b = in[2], lo, hi, mid, h;
    int cat;
    if (r < g) {
        if (b < r)
            hi = g, mid = r, lo = b, cat = 1;
        else if (b > g)
            hi = b, mid = g, lo = r, cat = 3;
        else
            hi = g, mid = b, lo = r, cat = 2;
    } else {
        if (b < g)
            hi = r, mid = g, lo = b, cat = 0;
        else if (b > r)
            hi = b, mid = r, lo = g, cat = 4;
        else
            hi = r, mid = b, lo = g, cat = 5;
    }
    if (hi == lo) {
        h = 0.0f;
    } else {
        float ratio = (mid - lo) / (hi - lo);
        h = (float)cat + ((cat & 1) == 0 ? ratio : 1.0f - ratio);
    }
    h += delta * 6.0f;
    if (isinf(h)) /* TensorFlow's loops never end here; conveyor gives NaN */
        h = NAN;
    if (!(h > -6.0f && h < 12.0f) && isfinite(h)) /* far out: one step, not a long loop */
        h = fmodf(h, 6.0f);
    while (h < 0.0f)
        h += 6.0f;
    while (h >= 6.0f)
        h -= 6.0f;
    cat = h >= 0.0f && h < 6.0f ? (int)h : -1; /* NaN: TensorFlow's default case */
    float ratio = h - (float)cat;
    if (cat & 1)
        ratio = 1.0f - ratio;
    mid = lo + ratio * (hi - lo);
    switch (cat) {
    case 0: out[0] = hi, out[1] = mid, out[2] = lo; break;
    case 1: out[0] = mid, out[1] = hi, out[2] = lo; break;
    case 2: out[0] = lo, out[1] = hi, out[2] = mid; break;
    case 3: out[0] = lo, out[1] = mid, out[2] = hi; break;
    case 4: out[0] = mid, out[1] = lo, out[2] = hi; break;
    default: out[0] = hi, out[1] = lo, out[2] = mid; break;
    }
}

/* rgb_to_hsv and hsv_to_rgb: TensorFlow's vectorized float32 formulas. */
static void to_hsv(const float *in, float *out)
{
    float r = in[0], g = in[1], b = in[2];
    float v = r > g ? r : g;
    v = v > b ? v : b;
    float mn = r < g ? r : g;
    mn = mn < b ? mn : b;
    float range = v - mn, norm = (1.0f / range) * (1.0f / 6.0f), h;
    if (r == v)
        h = norm * (g - b);
    else if (g == v)
        h = norm * (b - r) + 2.0f / 6.0f;
    else
        h = norm * (r - g) + 4.0f / 6.0f;
    if (!(range > 0.0f))
        h = 0.0f;
    if (h < 0.0f)
        h = h + 1.0f;
    out[0] = h;
    out[1] = v > 0.0f ? range / v : 0.0f;
    out[2] = v;
}

/* min(max(x, 0), 1) with std::max / std::min's NaN rule: NaN stays. */
static float clamp01(float x)
{
    x = x < 0.0f ? 0.0f : x;
    return 1.0f < x ? 1.0f : x;
}

static void to_rgb(const float *in, float *out)
{
    float h = in[0], s = in[1], v = in[2], dh = h * 6.0f, one_s = -s + 1.0f;
    float d[3] = {clamp01(fabsf(dh - 3.0f) - 1.0f), clamp01(-fabsf(dh - 2.0f) + 2.0f),
                  clamp01(-fabsf(dh - 4.0f) + 2.0f)};
    for (int c = 0; c < 3; c++)
        out[c] = (one_s + s * d[c]) * v;
}

static CvStatus hsv_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                        int num_out, CvOpContext *ctx)
{
    (void)num_out;
    (void)ctx;
    const CvTensor *v = &in[0];
    int mode = attrs->num_ints > HSV_MODE ? (int)attrs->ints[HSV_MODE] : -1;
    double value = attrs->num_floats > HSV_VALUE ? attrs->floats[HSV_VALUE] : 0.0;
    char text[CV_MAX_RANK * 24];
    if (mode < SATURATION || mode > TO_RGB)
        return cv_error(CV_INVALID_ARGUMENT, "AdjustHsv: unknown mode %d", mode);
    if (num_in > 1) {
        const CvTensor *t = &in[1];
        if (cv_tensor_num_elements(t) != 1 || (t->dtype != CV_FLOAT32 && t->dtype != CV_FLOAT64))
            return cv_error(CV_INVALID_ARGUMENT, "the factor must be a float scalar");
        value = t->dtype == CV_FLOAT32 ? *(const float *)t->data : *(const double *)t->data;
    }
    if (v->dtype != CV_FLOAT32)
        return cv_error(CV_INVALID_ARGUMENT, "AdjustHsv: unsupported dtype %s",
                        cv_dtype_name(v->dtype));
    if (v->rank < (mode >= TO_HSV ? 1 : 3))
        return cv_error(CV_INVALID_ARGUMENT, "input must be at least 3-D, got shape%s",
                        cv_shape_str(v->shape, v->rank, text, sizeof(text)));
    if (v->shape[v->rank - 1] != 3) /* TensorFlow's code and wording differ by op */
        return cv_error(mode >= TO_HSV ? CV_FAILED_PRECONDITION : CV_INVALID_ARGUMENT,
                        mode >= TO_HSV ? "input must have 3 channels but input only has %lld "
                                         "channels."
                                       : "input must have 3 channels but instead has %lld "
                                         "channels.",
                        (long long)v->shape[v->rank - 1]);
    CvStatus s = cv_tensor_alloc(&out[0], v->dtype, v->rank, v->shape, 0, NULL);
    if (s)
        return s;
    int64_t pixels = cv_tensor_num_elements(v) / 3;
    float f = (float)value;
    unsigned mode_saved = cv_flush_denormals_begin(); /* as TensorFlow's kernels */
    for (int64_t i = 0; i < pixels; i++) {
        /* Read as zero when subnormal: a value the op only copies (a max, a
         * channel passed through) is not flushed by the mode, only
         * arithmetic is, and what is arithmetic depends on the compiler. */
        const float *in_px = (const float *)v->data + 3 * i;
        float src[3];
        for (int c = 0; c < 3; c++)
            src[c] = fabsf(in_px[c]) < FLT_MIN ? copysignf(0.0f, in_px[c]) : in_px[c];
        float *dst = (float *)out[0].data + 3 * i;
        switch (mode) {
        case SATURATION: saturation(src, dst, f); break;
        case HUE: hue(src, dst, f); break;
        case TO_HSV: to_hsv(src, dst); break;
        default: to_rgb(src, dst); break;
        }
    }
    cv_flush_denormals_end(mode_saved);
    return CV_STATUS_OK;
}

const CvOp cv_op_adjust_hsv = {
    .name = "AdjustHsv", .min_inputs = 1, .max_inputs = 2, .run = hsv_run,
    .int_attrs = hsv_int_attrs, .float_attrs = hsv_float_attrs};
