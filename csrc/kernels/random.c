/* Dataset.random(seed, rerandomize_each_iteration): tf.data's RandomDataset,
 * bit for bit. An infinite dataset of scalar int64 values, each one uint32
 * sample of Philox4x32-10 keyed by the iterator's seeds.
 *
 * Seeds (as shuffle's): the dataset owns a seed generator (core/philox.h's
 * CvSeedGenerator) shared by its iterators. With rerandomize_each_iteration every new iterator draws two
 * uint32 seeds from a generator keyed by (seed, seed2); without it every
 * iterator uses (seed, seed2). seed == seed2 == 0: random seeds, drawn once
 * when the dataset is built.
 */
#include <stdlib.h>

#include "core/philox.h"
#include "kernels/kernels.h"

typedef struct {
    CvSeedGenerator seeds;
} RandomParams;

typedef struct {
    CvIterator base;
    CvPhilox rng;
} RandomIterator;

static void random_free(CvDataset *ds)
{
    RandomParams *p = ds->params;
    cv_seed_generator_destroy(&p->seeds);
    free(p);
}

static int64_t random_cardinality(const CvDataset *ds)
{
    (void)ds;
    return CV_INFINITE_CARDINALITY;
}

static CvStatus random_make_iterator(const CvDataset *ds, CvIterator **out)
{
    RandomParams *p = ds->params;
    RandomIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    cv_seed_generator_next(&p->seeds, &it->rng);
    *out = &it->base;
    return CV_STATUS_OK;
}

static CvStatus random_next(CvIterator *base, CvElement *out, bool *end)
{
    RandomIterator *it = (RandomIterator *)base;
    CvStatus s = cv_element_init(out, 1);
    if (!s)
        s = cv_tensor_alloc(&out->t[0], CV_INT64, 0, NULL, 0, NULL);
    if (s) {
        cv_element_clear(out);
        return s;
    }
    *(int64_t *)out->t[0].data = (int64_t)cv_philox_next(&it->rng);
    *end = false;
    return CV_STATUS_OK;
}

static void random_destroy(CvIterator *base)
{
    cv_iterator_free(base);
}

const CvKernel cv_kernel_random = {
    .name = "Random",
    .make_iterator = random_make_iterator,
    .cardinality = random_cardinality,
    .free_dataset = random_free,
    .next = random_next,
    .cancel = NULL,
    .destroy = random_destroy,
};

CvStatus cv_random_dataset(int64_t seed, int64_t seed2, bool rerandomize_each_iteration,
                           CvDataset **out)
{
    RandomParams *p = calloc(1, sizeof(*p));
    if (!p)
        return cv_error_nomem();
    cv_seed_generator_init(&p->seeds, seed, seed2, rerandomize_each_iteration);
    return cv_dataset_new(&cv_kernel_random, NULL, 0, p, false, out);
}
