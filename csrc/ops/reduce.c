/* Reduce: tf.reduce_sum / mean / max / min / prod / any / all.
 *
 * ints: [kind (sum 0, mean 1, max 2, min 3, prod 4, any 5, all 6), keepdims,
 * naxes (-1: every dim), axes...]; axes may be negative and are resolved
 * here (out of range or repeated: InvalidArgument, as TensorFlow). Output:
 * the input's dtype (any/all take and give bool), reduced dims dropped or
 * kept as 1. Empty reductions give the identities (0, 1, the dtype's
 * lowest/highest, false/true; the mean of nothing is NaN for floats, 0 for
 * integers).
 *
 * Arithmetic, as TensorFlow's: integer sums and products wrap; an integer
 * mean sums in 64 bits then truncates toward zero; float16 and float32
 * sums, products and means accumulate in double (float64 with compensated
 * summation) and round once, so they are at least as exact as TensorFlow's
 * tree sums (a float16 mean rounds its sum to half before dividing, so it
 * overflows to inf where TensorFlow's does); max/min propagate NaN. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "ops/values.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { REDUCE_KIND, REDUCE_KEEPDIMS, REDUCE_NUM_AXES, REDUCE_AXES, REDUCE_NUM_INTS };
static const char *const reduce_int_attrs[] = {"kind", "keepdims", "num_axes", "axes[]", NULL};
CV_ATTR_NAMES_MATCH(reduce_int_attrs, REDUCE_NUM_INTS);

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_ANY, R_ALL, R_KINDS };

typedef struct {
    double *f, *comp; /* float accumulators, compensation (float64 sums) */
    uint64_t *u;      /* integer / bool accumulators */
} Acc;

static inline double round_half(double v)
{
    return cv_half_to_float(cv_float_to_half((float)v));
}

static void accumulate(int kind, CvDtype d, const char *p, int64_t i, int64_t o, Acc *a)
{
    if (cv_dtype_is_float(d)) {
        double v = cv_value_f(p, d, i), *acc = &a->f[o];
        switch (kind) {
        case R_SUM:
        case R_MEAN:
            if (d == CV_FLOAT64) { /* Kahan-Babuska (Neumaier) summation */
                double t = *acc + v;
                if (isfinite(t))
                    a->comp[o] += fabs(*acc) >= fabs(v) ? (*acc - t) + v : (v - t) + *acc;
                *acc = t;
            } else {
                *acc += v;
            }
            break;
        case R_PROD: *acc *= v; break;
        case R_MAX:
            if (isnan(v) || v > *acc)
                *acc = isnan(*acc) ? *acc : v;
            break;
        default: /* R_MIN */
            if (isnan(v) || v < *acc)
                *acc = isnan(*acc) ? *acc : v;
            break;
        }
        return;
    }
    uint64_t v = cv_value_u(p, d, i), *acc = &a->u[o];
    switch (kind) {
    case R_SUM:
    case R_MEAN: *acc += v; break;
    case R_PROD: *acc *= v; break;
    case R_MAX:
        if (cv_value_u_less(d, *acc, v))
            *acc = v;
        break;
    case R_MIN:
        if (cv_value_u_less(d, v, *acc))
            *acc = v;
        break;
    case R_ANY: *acc |= v != 0; break;
    default: *acc &= v != 0; break; /* R_ALL */
    }
}

static void init_acc(int kind, CvDtype d, int64_t n, Acc *a)
{
    for (int64_t o = 0; o < n; o++) {
        if (cv_dtype_is_float(d)) {
            a->f[o] = kind == R_PROD ? 1.0 : kind == R_MAX ? -INFINITY : kind == R_MIN ? INFINITY : 0.0;
            a->comp[o] = 0.0;
        } else {
            a->u[o] = kind == R_PROD || kind == R_ALL ? 1
                      : kind == R_MAX                 ? cv_dtype_min_u(d)
                      : kind == R_MIN                 ? cv_dtype_max_u(d)
                                                      : 0;
        }
    }
}

static void finish(int kind, CvDtype d, int64_t n, int64_t count, const Acc *a, CvTensor *out)
{
    for (int64_t o = 0; o < n; o++) {
        if (cv_dtype_is_float(d)) {
            double v = a->f[o] + a->comp[o];
            if (kind == R_MEAN)
                v = d == CV_FLOAT16 ? round_half(v) / (double)count : v / (double)count;
            cv_value_set_f(out->data, d, o, v);
        } else if (kind == R_MEAN) {
            uint64_t v = a->u[o];
            if (count == 0)
                v = 0;
            else if (cv_dtype_is_signed(d))
                v = (uint64_t)((int64_t)v / count);
            else
                v /= (uint64_t)count;
            cv_value_set_u(out->data, d, o, v);
        } else {
            cv_value_set_u(out->data, d, o, a->u[o]);
        }
    }
}

static CvStatus reduce_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    const int64_t *at = attrs->ints;
    if (attrs->num_ints < REDUCE_AXES || at[REDUCE_KIND] < 0 || at[REDUCE_KIND] >= R_KINDS ||
        at[REDUCE_NUM_AXES] < -1 || at[REDUCE_NUM_AXES] > attrs->num_ints - REDUCE_AXES)
        return cv_error(CV_INVALID_ARGUMENT, "Reduce: malformed attributes");
    int kind = (int)attrs->ints[REDUCE_KIND];
    bool keepdims = attrs->ints[REDUCE_KEEPDIMS] != 0, logical = kind == R_ANY || kind == R_ALL;
    if (x->dtype == CV_STRING || (x->dtype == CV_BOOL) != logical)
        return cv_error(CV_INVALID_ARGUMENT, "Reduce: %s is not a valid input dtype here",
                        cv_dtype_name(x->dtype));
    bool mask[CV_MAX_RANK] = {false};
    int64_t naxes = attrs->ints[REDUCE_NUM_AXES];
    for (int64_t k = 0; k < naxes; k++) {
        int64_t ax = attrs->ints[REDUCE_AXES + k];
        if (ax < -x->rank || ax >= x->rank)
            return cv_error(CV_INVALID_ARGUMENT,
                            "Invalid reduction dimension (%lld for input with %d dimension(s)",
                            (long long)ax, x->rank);
        if (ax < 0)
            ax += x->rank;
        if (mask[ax])
            return cv_error(CV_INVALID_ARGUMENT,
                            "Invalid reduction arguments: Axes contains duplicate dimension: %lld",
                            (long long)ax);
        mask[ax] = true;
    }
    int64_t shape[CV_MAX_RANK], ostride[CV_MAX_RANK], n_out = 1, count = 1;
    int rank = 0;
    for (int d = 0; d < x->rank; d++) {
        if (naxes < 0)
            mask[d] = true;
        if (mask[d])
            count *= x->shape[d];
        else
            n_out *= x->shape[d];
        if (!mask[d] || keepdims)
            shape[rank++] = mask[d] ? 1 : x->shape[d];
    }
    /* Output strides of the input's dims (0 for the reduced ones). */
    int64_t step = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        ostride[d] = mask[d] ? 0 : step;
        if (!mask[d])
            step *= x->shape[d];
    }
    CvStatus s = cv_tensor_alloc(&out[0], x->dtype, rank, shape, 0, NULL);
    if (s)
        return s;
    Acc a = {NULL, NULL, NULL};
    size_t n = (size_t)n_out ? (size_t)n_out : 1;
    if (cv_dtype_is_float(x->dtype)) {
        a.f = malloc(n * sizeof(double));
        a.comp = malloc(n * sizeof(double));
    } else {
        a.u = malloc(n * sizeof(uint64_t));
    }
    if ((cv_dtype_is_float(x->dtype) && (!a.f || !a.comp)) ||
        (!cv_dtype_is_float(x->dtype) && !a.u)) {
        s = cv_error_nomem();
        cv_tensor_clear(&out[0]);
        goto cleanup;
    }
    init_acc(kind, x->dtype, n_out, &a);
    int64_t total = n_out * count, idx[CV_MAX_RANK] = {0}, o = 0;
    for (int64_t i = 0; i < total; i++) {
        accumulate(kind, x->dtype, x->data, i, o, &a);
        for (int d = x->rank - 1; d >= 0; d--) {
            o += ostride[d];
            if (++idx[d] < x->shape[d])
                break;
            o -= ostride[d] * x->shape[d];
            idx[d] = 0;
        }
    }
    finish(kind, x->dtype, n_out, count, &a, &out[0]);
cleanup:
    free(a.f);
    free(a.comp);
    free(a.u);
    return s;
}

const CvOp cv_op_reduce = {.name = "Reduce", .min_inputs = 1, .max_inputs = 1, .run = reduce_run,
    .int_attrs = reduce_int_attrs};
