/* StatelessRandom(seed): tf.random.stateless_uniform and
 * tf.random.experimental.stateless_split: values drawn in order from the
 * stateless stream of `seed` (a [2] int32 or int64 tensor, see
 * ops/stateless.h), the same values as TensorFlow's for the same seed.
 *
 * ints: [dtype, kind, int minval, int maxval, rank, dims...]; floats:
 * [minval, maxval]. Kinds:
 *   0 = uniform float16 / float32 / float64: u * (maxval - minval) + minval,
 *       each step rounded to the dtype (u in [0, 1): one sample for float16
 *       (10 bits) and float32 (23 bits), two for float64);
 *   1 = uniform int32 / int64 in [minval, maxval): minval + bits % range
 *       (one sample, or two for int64: low word first);
 *   2 = int32 / int64 over the whole range (the same bits, no modulo);
 *   3 = normal float16 / float32 / float64 (tf.random.stateless_normal;
 *       float16 rounds the float32 values): Box-Muller
 *       on pairs of uniforms (u1 raised to at least 1e-7, the angle
 *       2 pi u2 in double), libm's log, sqrt and sincos as TensorFlow
 *       calls them; the first value of a pair from the sine; then times
 *       floats[1] (stddev) plus floats[0] (mean), each rounded.
 * No ownership beyond the output; no state (the stream is a local). */
#include <math.h>

#include "ops/numeric.h"
#include "ops/op.h"
#include "ops/stateless.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { STATELESS_RANDOM_DTYPE, STATELESS_RANDOM_KIND, STATELESS_RANDOM_INT_MINVAL,
    STATELESS_RANDOM_INT_MAXVAL, STATELESS_RANDOM_RANK, STATELESS_RANDOM_SHAPE,
    STATELESS_RANDOM_NUM_INTS };
static const char *const stateless_random_int_attrs[] = {"dtype", "kind", "int_minval",
    "int_maxval", "rank", "shape[]", NULL};
CV_ATTR_NAMES_MATCH(stateless_random_int_attrs, STATELESS_RANDOM_NUM_INTS);
enum { STATELESS_RANDOM_MINVAL, STATELESS_RANDOM_MAXVAL, STATELESS_RANDOM_NUM_FLOATS };
static const char *const stateless_random_float_attrs[] = {"minval", "maxval", NULL};
CV_ATTR_NAMES_MATCH(stateless_random_float_attrs, STATELESS_RANDOM_NUM_FLOATS);

/* Box-Muller pairs, n values into t (float32 or float64). */
/* float -> float16 -> float: one float16 rounding. */
static inline float to_half(float x) { return cv_half_to_float(cv_float_to_half(x)); }

static void normal_fill(CvTensor *t, int64_t n, double mean, double stddev, CvPhilox *rng)
{
    for (int64_t i = 0; i < n; i += 2) {
        double pair[2];
        if (t->dtype == CV_FLOAT16) {
            float u1 = cv_stateless_float(rng), u2 = cv_stateless_float(rng), s, c;
            if (u1 < 1.0e-7f)
                u1 = 1.0e-7f;
            float angle = (float)(2.0f * M_PI * u2);
            float r = sqrtf(-2.0f * logf(u1));
            sincosf(angle, &s, &c);
            float m = to_half((float)mean), d = to_half((float)stddev);
            float v[2] = {to_half(to_half(to_half(s * r) * d) + m),
                          to_half(to_half(to_half(c * r) * d) + m)};
            for (int k = 0; k < 2 && i + k < n; k++)
                ((cv_half *)t->data)[i + k] = cv_float_to_half(v[k]);
        } else if (t->dtype == CV_FLOAT32) {
            float u1 = cv_stateless_float(rng), u2 = cv_stateless_float(rng), s, c;
            if (u1 < 1.0e-7f)
                u1 = 1.0e-7f;
            float angle = (float)(2.0f * M_PI * u2);
            float r = sqrtf(-2.0f * logf(u1));
            sincosf(angle, &s, &c);
            float m = (float)mean, d = (float)stddev;
            pair[0] = (float)(s * r) * d + m;
            pair[1] = (float)(c * r) * d + m;
            for (int k = 0; k < 2 && i + k < n; k++)
                ((float *)t->data)[i + k] = (float)pair[k];
        } else {
            double u1 = cv_stateless_double(rng), u2 = cv_stateless_double(rng), s, c;
            if (u1 < 1.0e-7)
                u1 = 1.0e-7;
            double r = sqrt(-2.0 * log(u1));
            sincos(2 * M_PI * u2, &s, &c);
            pair[0] = (s * r) * stddev + mean;
            pair[1] = (c * r) * stddev + mean;
            for (int k = 0; k < 2 && i + k < n; k++)
                ((double *)t->data)[i + k] = pair[k];
        }
    }
}

static CvStatus stateless_random_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                     CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const int64_t *a = attrs->ints;
    if (attrs->num_ints < STATELESS_RANDOM_SHAPE || a[STATELESS_RANDOM_RANK] < 0 ||
        a[STATELESS_RANDOM_RANK] > CV_MAX_RANK ||
        attrs->num_ints != STATELESS_RANDOM_SHAPE + a[STATELESS_RANDOM_RANK] ||
        attrs->num_floats != STATELESS_RANDOM_NUM_FLOATS)
        return cv_error(CV_INVALID_ARGUMENT, "StatelessRandom: malformed attributes");
    CvDtype dtype = (CvDtype)a[STATELESS_RANDOM_DTYPE];
    int kind = (int)a[STATELESS_RANDOM_KIND];
    int64_t ilo = a[STATELESS_RANDOM_INT_MINVAL], ihi = a[STATELESS_RANDOM_INT_MAXVAL];
    CvPhilox rng;
    CvStatus s = cv_stateless_init(&in[0], &rng);
    if (s)
        return s;
    bool ok = ((kind == 0 || kind == 3) &&
               (dtype == CV_FLOAT16 || dtype == CV_FLOAT32 || dtype == CV_FLOAT64)) ||
              ((kind == 1 || kind == 2) && (dtype == CV_INT32 || dtype == CV_INT64));
    if (!ok)
        return cv_error(CV_INVALID_ARGUMENT, "StatelessRandom: unsupported dtype %s",
                        cv_dtype_name(dtype));
    if (kind == 1 && ihi <= ilo)
        return cv_error(CV_INVALID_ARGUMENT, "Need minval < maxval: %lld >= %lld",
                        (long long)ilo, (long long)ihi);
    if (kind == 1 && dtype == CV_INT32 && (ilo < INT32_MIN || ihi > INT32_MAX))
        return cv_error(CV_INVALID_ARGUMENT, "minval and maxval must fit in int32");
    s = cv_tensor_alloc(&out[0], dtype, (int)a[STATELESS_RANDOM_RANK], &a[STATELESS_RANDOM_SHAPE],
                        0, NULL);
    if (s)
        return s;
    int64_t n = cv_tensor_num_elements(&out[0]);
    uint64_t range = (uint64_t)ihi - (uint64_t)ilo;
    const double minval = attrs->floats[STATELESS_RANDOM_MINVAL];
    const double maxval = attrs->floats[STATELESS_RANDOM_MAXVAL];
    if (kind == 3) {
        normal_fill(&out[0], n, minval, maxval, &rng);
        return CV_STATUS_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        if (dtype == CV_FLOAT16) {
            uint32_t bits = (cv_philox_next(&rng) & 0x3ffu) | (15u << 10);
            float lo = to_half((float)minval);
            float span = to_half(to_half((float)maxval) - lo);
            float u = cv_half_to_float((cv_half)bits) - 1.0f;
            ((cv_half *)out[0].data)[i] = cv_float_to_half(to_half(u * span) + lo);
        } else if (dtype == CV_FLOAT32) {
            float lo = (float)minval, span = (float)maxval - lo;
            float u = cv_stateless_float(&rng) * span;
            ((float *)out[0].data)[i] = u + lo;
        } else if (dtype == CV_FLOAT64) {
            double lo = minval, span = maxval - lo;
            double u = cv_stateless_double(&rng) * span;
            ((double *)out[0].data)[i] = u + lo;
        } else if (dtype == CV_INT32) {
            uint32_t bits = cv_philox_next(&rng);
            ((int32_t *)out[0].data)[i] =
                (int32_t)(kind == 2 ? bits : (uint32_t)ilo + bits % (uint32_t)range);
        } else {
            uint64_t a = cv_philox_next(&rng), b = cv_philox_next(&rng);
            uint64_t bits = a | b << 32;
            ((int64_t *)out[0].data)[i] = (int64_t)(kind == 2 ? bits : (uint64_t)ilo + bits % range);
        }
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_stateless_random = {
    .name = "StatelessRandom", .min_inputs = 1, .max_inputs = 1, .run = stateless_random_run,
    .int_attrs = stateless_random_int_attrs, .float_attrs = stateless_random_float_attrs};
