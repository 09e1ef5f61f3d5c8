/* RandomUniform: a tensor of uniform random values (tf.random.uniform),
 * drawn from the per-element stream (see CvOpContext), so a traced map gives
 * the same values for an element whatever the thread count.
 *
 * ints: [dtype, int minval, int maxval, rank, dims...]; floats: [minval,
 * maxval]. Floats are in [minval, maxval) (24 random bits for float32, 53
 * for float64); integers in [minval, maxval), unbiased. No inputs. */
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { UNIFORM_DTYPE, UNIFORM_INT_MINVAL, UNIFORM_INT_MAXVAL, UNIFORM_RANK, UNIFORM_SHAPE,
    UNIFORM_NUM_INTS };
static const char *const uniform_int_attrs[] = {"dtype", "int_minval", "int_maxval", "rank",
    "shape[]", NULL};
CV_ATTR_NAMES_MATCH(uniform_int_attrs, UNIFORM_NUM_INTS);
enum { UNIFORM_MINVAL, UNIFORM_MAXVAL, UNIFORM_NUM_FLOATS };
static const char *const uniform_float_attrs[] = {"minval", "maxval", NULL};
CV_ATTR_NAMES_MATCH(uniform_float_attrs, UNIFORM_NUM_FLOATS);

static CvStatus uniform_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                            int num_out, CvOpContext *ctx)
{
    (void)in;
    (void)num_in;
    (void)num_out;
    if (attrs->num_ints < UNIFORM_SHAPE || attrs->ints[UNIFORM_RANK] < 0 ||
        attrs->ints[UNIFORM_RANK] > CV_MAX_RANK ||
        attrs->num_ints != UNIFORM_SHAPE + attrs->ints[UNIFORM_RANK] ||
        attrs->num_floats != UNIFORM_NUM_FLOATS)
        return cv_error(CV_INVALID_ARGUMENT, "RandomUniform: malformed attributes");
    CvDtype dtype = (CvDtype)attrs->ints[UNIFORM_DTYPE];
    int rank = (int)attrs->ints[UNIFORM_RANK];
    CvStatus s = cv_tensor_alloc(&out[0], dtype, rank, &attrs->ints[UNIFORM_SHAPE], 0, NULL);
    if (s)
        return s;
    int64_t n = cv_tensor_num_elements(&out[0]);
    double lo = attrs->floats[UNIFORM_MINVAL], hi = attrs->floats[UNIFORM_MAXVAL];
    int64_t ilo = attrs->ints[UNIFORM_INT_MINVAL], ihi = attrs->ints[UNIFORM_INT_MAXVAL];
    uint64_t span = (uint64_t)ihi - (uint64_t)ilo;
    switch (dtype) {
    case CV_FLOAT32: {
        float *p = (float *)out[0].data, flo = (float)lo, fspan = (float)(hi - lo);
        for (int64_t i = 0; i < n; i++)
            p[i] = flo + fspan * cv_op_random_uniform(ctx);
        break;
    }
    case CV_FLOAT64: {
        double *p = (double *)out[0].data;
        for (int64_t i = 0; i < n; i++) {
            uint64_t bits = ((uint64_t)cv_op_random_u32(ctx) << 21) ^ (cv_op_random_u32(ctx) >> 11);
            p[i] = lo + (hi - lo) * ((double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0));
        }
        break;
    }
    case CV_INT32:
    case CV_INT64:
        if (ihi <= ilo) {
            cv_tensor_clear(&out[0]);
            return cv_error(CV_INVALID_ARGUMENT, "Need minval < maxval: %lld >= %lld",
                            (long long)ilo, (long long)ihi);
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t v = (int64_t)((uint64_t)ilo + cv_op_random_below(ctx, span));
            if (dtype == CV_INT32)
                ((int32_t *)out[0].data)[i] = (int32_t)v;
            else
                ((int64_t *)out[0].data)[i] = v;
        }
        break;
    default:
        cv_tensor_clear(&out[0]);
        return cv_error(CV_INVALID_ARGUMENT, "RandomUniform: unsupported dtype %s",
                        cv_dtype_name(dtype));
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_uniform = {
    .name = "RandomUniform", .min_inputs = 0, .max_inputs = 0, .run = uniform_run,
    .int_attrs = uniform_int_attrs, .float_attrs = uniform_float_attrs};
