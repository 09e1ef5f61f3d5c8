/* RandomGamma(alpha): tf.random.gamma's Gamma(alpha, 1) samples, shape
 * [dims..., alpha's shape...] (every alpha gets `dims` samples), drawn from
 * the per-element stream (see CvOpContext), so a traced map gives an element
 * the same values whatever the thread count (not TensorFlow's stateful
 * stream). Marsaglia and Tsang's method, computed in double: for alpha < 1
 * a Gamma(alpha + 1) sample times u^(1/alpha); alpha <= 0 or NaN gives NaN.
 * alpha float16/32/64; the output has its dtype. ints: [rank, dims...]. */
#include <math.h>

#include "ops/numeric.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs). */
enum { GAMMA_RANK, GAMMA_SHAPE, GAMMA_NUM_INTS };
static const char *const gamma_int_attrs[] = {"rank", "shape[]", NULL};
CV_ATTR_NAMES_MATCH(gamma_int_attrs, GAMMA_NUM_INTS);

/* Uniform in (0, 1) with 53 bits (never 0: its log is taken). */
static double uniform_open(CvOpContext *ctx)
{
    uint64_t bits = ((uint64_t)cv_op_random_u32(ctx) << 21) ^ (cv_op_random_u32(ctx) >> 11);
    return ((double)(bits & ((1ull << 53) - 1)) + 0.5) * (1.0 / 9007199254740992.0);
}

static double standard_normal(CvOpContext *ctx)
{
    double u1 = uniform_open(ctx), u2 = uniform_open(ctx);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static double gamma_sample(double alpha, CvOpContext *ctx)
{
    if (!(alpha > 0))
        return NAN;
    double boost = 1.0;
    if (alpha < 1.0) {
        boost = pow(uniform_open(ctx), 1.0 / alpha);
        alpha += 1.0;
    }
    double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = standard_normal(ctx), v = 1.0 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = uniform_open(ctx);
        if (u < 1.0 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
            return d * v * boost;
    }
}

static double value_at(const CvTensor *t, int64_t i)
{
    switch (t->dtype) {
    case CV_FLOAT16: return (double)cv_half_to_float(((const cv_half *)t->data)[i]);
    case CV_FLOAT32: return (double)((const float *)t->data)[i];
    default: return ((const double *)t->data)[i];
    }
}

static CvStatus gamma_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    const CvTensor *alpha = &in[0];
    const int64_t *a = attrs->ints;
    if (attrs->num_ints < GAMMA_SHAPE || a[GAMMA_RANK] < 0 ||
        attrs->num_ints != GAMMA_SHAPE + a[GAMMA_RANK] || a[GAMMA_RANK] + alpha->rank > CV_MAX_RANK)
        return cv_error(CV_INVALID_ARGUMENT, "RandomGamma: malformed attributes or rank too high");
    if (alpha->dtype != CV_FLOAT16 && alpha->dtype != CV_FLOAT32 && alpha->dtype != CV_FLOAT64)
        return cv_error(CV_INVALID_ARGUMENT, "RandomGamma: alpha must be float16, float32 or "
                        "float64, got %s", cv_dtype_name(alpha->dtype));
    int rank = (int)a[GAMMA_RANK];
    int64_t shape[CV_MAX_RANK];
    for (int d = 0; d < rank; d++)
        shape[d] = a[GAMMA_SHAPE + d];
    for (int d = 0; d < alpha->rank; d++)
        shape[rank + d] = alpha->shape[d];
    CvStatus s = cv_tensor_alloc(&out[0], alpha->dtype, rank + alpha->rank, shape, 0, NULL);
    if (s)
        return s;
    int64_t per = cv_tensor_num_elements(alpha);
    int64_t n = cv_tensor_num_elements(&out[0]);
    for (int64_t i = 0; i < n; i++) {
        double g = gamma_sample(value_at(alpha, i % per), ctx);
        if (alpha->dtype == CV_FLOAT16)
            ((cv_half *)out[0].data)[i] = cv_float_to_half((float)g);
        else if (alpha->dtype == CV_FLOAT32)
            ((float *)out[0].data)[i] = (float)g;
        else
            ((double *)out[0].data)[i] = g;
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_random_gamma = {.name = "RandomGamma", .min_inputs = 1, .max_inputs = 1,
                                 .run = gamma_run, .int_attrs = gamma_int_attrs};
