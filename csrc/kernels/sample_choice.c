/* The choices of sample_from_datasets: scalar int64 indices drawn from a
 * categorical distribution, as tf.data draws them (bit for bit):
 *
 *   Dataset.random(seed).batch(2)  -> a pair of seeds per choice
 *   stateless_multinomial(logits, 1, seed=pair)
 *
 * Input 0 is the Dataset.random; two of its values make one choice. The
 * logits are log(weights), computed in the weights' precision: constant
 * (given here), or one float32/float64 vector per element of input 1 (a
 * weights dataset; the choices end when it ends). The sampler is TensorFlow's
 * CPU multinomial: the seed pair is scrambled into a Philox key and counter
 * (GenerateKey), one double u in [0, 1) is made from two uint32 samples, and
 * the choice is the first class whose cumulative unnormalized probability
 * exp(logit - max) exceeds u * total. Classes with a non-finite logit (zero
 * or negative weights) are never chosen; when no class is finite the choice
 * is the number of classes, which choose_from_datasets reports as out of
 * range, as in tf.data.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "kernels/kernels.h"

typedef struct {
    int64_t n;   /* classes of the constant weights; 0 with a weights dataset */
    double *cdf; /* [n] */
    double total;
} SampleParams;

typedef struct {
    CvUnaryIterator base; /* input: the Dataset.random */
    CvIterator *weights;  /* the weights dataset's, or NULL */
} SampleIterator;

static void sample_free(CvDataset *ds)
{
    SampleParams *p = ds->params;
    free(p->cdf);
    free(p);
}

static int64_t sample_cardinality(const CvDataset *ds)
{
    /* Input 0 is infinite; with weights, the weights dataset decides. */
    return cv_dataset_cardinality(ds->inputs[ds->num_inputs - 1]);
}

static CvStatus sample_make_iterator(const CvDataset *ds, CvIterator **out)
{
    CvStatus s = cv_unary_iterator_new(ds, sizeof(SampleIterator), out);
    if (s || ds->num_inputs < 2)
        return s;
    SampleIterator *it = (SampleIterator *)*out;
    if ((s = cv_iterator_make(ds->inputs[1], &it->weights))) {
        cv_unary_iterator_destroy(*out);
        *out = NULL;
    }
    return s;
}

/* The cumulative unnormalized probabilities of n logits (given as doubles,
 * computed in their own precision); returns the total. */
static double cumulate(const double *logits, int64_t n, double *cdf)
{
    double max = -DBL_MAX;
    for (int64_t j = 0; j < n; j++)
        if (isfinite(logits[j]) && logits[j] > max)
            max = logits[j];
    double total = 0;
    for (int64_t j = 0; j < n; j++) {
        if (isfinite(logits[j]))
            total += exp(logits[j] - max);
        cdf[j] = total;
    }
    return total;
}

/* log(weights) in the weights' precision, as doubles. */
static void log_weights(const CvTensor *w, double *logits)
{
    int64_t n = w->shape[0];
    for (int64_t j = 0; j < n; j++)
        logits[j] = w->dtype == CV_FLOAT32 ? (double)logf(((const float *)w->data)[j])
                                           : log(((const double *)w->data)[j]);
}

static int64_t draw(const double *cdf, int64_t n, double total, uint64_t seed0, uint64_t seed1)
{
    /* GenerateKey: one Philox block of the seeds under a fixed key. */
    CvPhilox g = {.counter = {(uint32_t)seed0, (uint32_t)(seed0 >> 32), (uint32_t)seed1,
                              (uint32_t)(seed1 >> 32)},
                  .key = {0x3ec8f720u, 0x02461e29u},
                  .used = 4};
    uint32_t mix[4];
    for (int i = 0; i < 4; i++)
        mix[i] = cv_philox_next(&g);
    g = (CvPhilox){.counter = {0, 0, mix[2], mix[3]}, .key = {mix[0], mix[1]}, .used = 4};
    /* RandDouble: 52 mantissa bits from two samples, in [1, 2), minus 1. */
    uint32_t hi = cv_philox_next(&g), lo = cv_philox_next(&g);
    uint64_t bits = ((uint64_t)1023 << 52) | ((uint64_t)(hi & 0xfffffu) << 32) | lo;
    double u;
    memcpy(&u, &bits, sizeof(u));
    double to_find = (u - 1.0) * total;
    int64_t a = 0, b = n; /* upper_bound: the first cdf[j] > to_find */
    while (a < b) {
        int64_t mid = a + (b - a) / 2;
        if (cdf[mid] > to_find)
            b = mid;
        else
            a = mid + 1;
    }
    return a;
}

static CvStatus pull_seed(CvIterator *random, uint64_t *seed)
{
    CvElement e = {0};
    bool end = false;
    CvStatus s = cv_iterator_next(random, &e, &end);
    if (!s && (end || e.n != 1 || e.t[0].dtype != CV_INT64 || e.t[0].rank != 0))
        s = cv_error(CV_INTERNAL, "SampleFromDatasets: the random input must be infinite scalar "
                     "int64");
    if (!s)
        *seed = (uint64_t)*(const int64_t *)e.t[0].data;
    cv_element_clear(&e);
    return s;
}

static CvStatus sample_next(CvIterator *base, CvElement *out, bool *end)
{
    SampleIterator *it = (SampleIterator *)base;
    CvIterator *weights = it->weights;
    const SampleParams *p = base->dataset->params;
    CvStatus s = CV_STATUS_OK;
    CvElement w = {0};
    double *owned = NULL;
    const double *cdf = p->cdf;
    double total = p->total;
    int64_t n = p->n;
    if (weights) {
        bool weights_end = false;
        if ((s = cv_iterator_next(weights, &w, &weights_end)))
            return s;
        if (weights_end) {
            *end = true;
            return CV_STATUS_OK;
        }
        const CvTensor *t = &w.t[0];
        if (w.n != 1 || (t->dtype != CV_FLOAT32 && t->dtype != CV_FLOAT64)) {
            s = cv_error(CV_INVALID_ARGUMENT, "sample_from_datasets: each element of `weights` "
                         "must be one float32 or float64 vector");
            goto done;
        }
        if (t->rank != 1) {
            s = cv_error(CV_INVALID_ARGUMENT, "sample_from_datasets: logits should be a matrix, "
                         "got an element of `weights` of rank %d", t->rank);
            goto done;
        }
        n = t->shape[0];
        if (n <= 0) {
            s = cv_error(CV_INVALID_ARGUMENT, "num_classes should be positive, got %lld",
                         (long long)n);
            goto done;
        }
        owned = malloc((size_t)n * sizeof(double));
        if (!owned) {
            s = cv_error_nomem();
            goto done;
        }
        log_weights(t, owned);
        total = cumulate(owned, n, owned);
        cdf = owned;
    }
    uint64_t seed0 = 0, seed1 = 0;
    if ((s = pull_seed(it->base.input, &seed0)) || (s = pull_seed(it->base.input, &seed1)))
        goto done;
    if ((s = cv_element_init(out, 1)) || (s = cv_tensor_alloc(&out->t[0], CV_INT64, 0, NULL, 0, NULL))) {
        cv_element_clear(out);
        goto done;
    }
    *(int64_t *)out->t[0].data = draw(cdf, n, total, seed0, seed1);
    *end = false;
done:
    free(owned);
    cv_element_clear(&w);
    return s;
}

static void sample_cancel(CvIterator *base)
{
    cv_unary_iterator_cancel(base);
    cv_iterator_cancel(((SampleIterator *)base)->weights);
}

static void sample_destroy(CvIterator *base)
{
    cv_iterator_destroy(((SampleIterator *)base)->weights);
    cv_unary_iterator_destroy(base);
}

/* A choice is a function of the next two random values and the next
 * weights: the positions of the inputs are all (the Dataset.random keeps
 * its Philox state and seeds; which data inputs are exhausted is
 * choose_from_datasets' part). */
static CvStatus sample_save(CvIterator *base, CvStateWriter *w)
{
    SampleIterator *it = (SampleIterator *)base;
    CvStatus s = cv_iterator_save(it->base.input, w);
    if (!s && it->weights)
        s = cv_iterator_save(it->weights, w);
    return s;
}

static CvStatus sample_restore(CvIterator *base, CvStateReader *r)
{
    SampleIterator *it = (SampleIterator *)base;
    CvStatus s = cv_iterator_restore(it->base.input, r);
    if (!s && it->weights)
        s = cv_iterator_restore(it->weights, r);
    return s;
}

const CvKernel cv_kernel_sample_choice = {
    .name = "SampleFromDatasets",
    .make_iterator = sample_make_iterator,
    .cardinality = sample_cardinality,
    .free_dataset = sample_free,
    .next = sample_next,
    .cancel = sample_cancel,
    .destroy = sample_destroy,
    .save = sample_save,
    .restore = sample_restore,
};

CvStatus cv_sample_choice_dataset(CvDataset *random, CvDataset *weights_dataset,
                                  const CvTensor *weights, CvDataset **out)
{
    SampleParams *p = calloc(1, sizeof(*p));
    if (!p)
        return cv_error_nomem();
    if (!weights_dataset) {
        if (!weights || weights->rank != 1 || weights->shape[0] <= 0 ||
            (weights->dtype != CV_FLOAT32 && weights->dtype != CV_FLOAT64)) {
            free(p);
            return cv_error(CV_INVALID_ARGUMENT, "sample_from_datasets: `weights` must be a "
                            "non-empty float32 or float64 vector");
        }
        p->n = weights->shape[0];
        p->cdf = malloc((size_t)p->n * sizeof(double));
        if (!p->cdf) {
            free(p);
            return cv_error_nomem();
        }
        log_weights(weights, p->cdf);
        p->total = cumulate(p->cdf, p->n, p->cdf);
    }
    CvDataset *inputs[2] = {random, weights_dataset};
    return cv_dataset_new(&cv_kernel_sample_choice, inputs, weights_dataset ? 2 : 1, p, false, out);
}
