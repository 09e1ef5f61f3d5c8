/* StatelessTruncatedNormal(seed): tf.random.stateless_truncated_normal's
 * standard values (the wrapper scales by stddev and adds the mean): normal
 * values with magnitude below 2, the same as TensorFlow's for the same seed.
 *
 * TensorFlow fills the output in groups (4 values for float16/float32, 2
 * for float64); group g draws from the seed's generator (ops/stateless.h)
 * skipped ahead by g * 256 Philox blocks (g * 128 for float64), taking
 * Box-Muller pairs (as StatelessRandom's normals) and keeping the values
 * whose magnitude is below 2, until the group is full. The last group may
 * be partial. ints: [dtype, rank, dims...]. No state beyond locals. */
#include <math.h>

#include "ops/numeric.h"
#include "ops/op.h"
#include "ops/stateless.h"

/* Attribute slots, named in this order (CvOp.int_attrs). */
enum { TRUNCATED_DTYPE, TRUNCATED_RANK, TRUNCATED_SHAPE, TRUNCATED_NUM_INTS };
static const char *const truncated_int_attrs[] = {"dtype", "rank", "shape[]", NULL};
CV_ATTR_NAMES_MATCH(truncated_int_attrs, TRUNCATED_NUM_INTS);

/* PhiloxRandom::Skip: advance the 128-bit block counter by `count`. */
static void philox_skip(CvPhilox *p, uint64_t count)
{
    uint32_t lo = (uint32_t)count, hi = (uint32_t)(count >> 32);
    p->counter[0] += lo;
    if (p->counter[0] < lo)
        hi++;
    p->counter[1] += hi;
    if (p->counter[1] < hi && ++p->counter[2] == 0)
        p->counter[3]++;
}

/* One group of `size` standard values below 2 in magnitude, into v. */
static void truncated_group(CvPhilox *rng, bool wide, int size, double *v)
{
    int got = 0;
    while (got < size) {
        double pair[2];
        if (wide) {
            double u1 = cv_stateless_double(rng), u2 = cv_stateless_double(rng), s, c;
            if (u1 < 1.0e-7)
                u1 = 1.0e-7;
            double r = sqrt(-2.0 * log(u1));
            sincos(2 * M_PI * u2, &s, &c);
            pair[0] = s * r;
            pair[1] = c * r;
        } else {
            float u1 = cv_stateless_float(rng), u2 = cv_stateless_float(rng), s, c;
            if (u1 < 1.0e-7f)
                u1 = 1.0e-7f;
            float angle = (float)(2.0f * M_PI * u2);
            float r = sqrtf(-2.0f * logf(u1));
            sincosf(angle, &s, &c);
            pair[0] = (float)(s * r);
            pair[1] = (float)(c * r);
        }
        for (int k = 0; k < 2 && got < size; k++)
            if (fabs(pair[k]) < 2.0)
                v[got++] = pair[k];
    }
}

static CvStatus truncated_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                              CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const int64_t *a = attrs->ints;
    if (attrs->num_ints < TRUNCATED_SHAPE || a[TRUNCATED_RANK] < 0 ||
        a[TRUNCATED_RANK] > CV_MAX_RANK || attrs->num_ints != TRUNCATED_SHAPE + a[TRUNCATED_RANK])
        return cv_error(CV_INVALID_ARGUMENT, "StatelessTruncatedNormal: malformed attributes");
    CvDtype dtype = (CvDtype)a[TRUNCATED_DTYPE];
    if (dtype != CV_FLOAT16 && dtype != CV_FLOAT32 && dtype != CV_FLOAT64)
        return cv_error(CV_INVALID_ARGUMENT, "StatelessTruncatedNormal: unsupported dtype %s",
                        cv_dtype_name(dtype));
    CvPhilox base;
    CvStatus s = cv_stateless_init(&in[0], &base);
    if (s)
        return s;
    s = cv_tensor_alloc(&out[0], dtype, (int)a[TRUNCATED_RANK], &a[TRUNCATED_SHAPE], 0, NULL);
    if (s)
        return s;
    bool wide = dtype == CV_FLOAT64;
    int size = wide ? 2 : 4;
    uint64_t skip = wide ? 128 : 256;
    int64_t n = cv_tensor_num_elements(&out[0]);
    for (int64_t g = 0; g * size < n; g++) {
        CvPhilox rng = base;
        philox_skip(&rng, (uint64_t)g * skip);
        rng.used = 4;
        double v[4];
        truncated_group(&rng, wide, size, v);
        for (int k = 0; k < size && g * size + k < n; k++) {
            int64_t i = g * size + k;
            if (dtype == CV_FLOAT16)
                ((cv_half *)out[0].data)[i] = cv_float_to_half((float)v[k]);
            else if (dtype == CV_FLOAT32)
                ((float *)out[0].data)[i] = (float)v[k];
            else
                ((double *)out[0].data)[i] = v[k];
        }
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_stateless_truncated_normal = {
    .name = "StatelessTruncatedNormal", .min_inputs = 1, .max_inputs = 1, .run = truncated_run,
    .int_attrs = truncated_int_attrs};
