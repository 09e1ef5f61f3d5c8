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

static void put_philox(CvStateWriter *w, const CvPhilox *p)
{
    for (int i = 0; i < 4; i++)
        cv_state_put_u64(w, p->counter[i]);
    cv_state_put_u64(w, p->key[0]);
    cv_state_put_u64(w, p->key[1]);
    for (int i = 0; i < 4; i++)
        cv_state_put_u64(w, p->results[i]);
    cv_state_put_i64(w, p->used);
}

static CvStatus get_u32(CvStateReader *r, uint32_t *v)
{
    int64_t x = 0;
    CvStatus s = cv_state_get_range(r, "a Philox word", 0, UINT32_MAX, &x);
    if (!s)
        *v = (uint32_t)x;
    return s;
}

static CvStatus get_philox(CvStateReader *r, CvPhilox *p)
{
    CvStatus s = CV_STATUS_OK;
    int64_t used = 0;
    for (int i = 0; i < 4 && !s; i++)
        s = get_u32(r, &p->counter[i]);
    for (int i = 0; i < 2 && !s; i++)
        s = get_u32(r, &p->key[i]);
    for (int i = 0; i < 4 && !s; i++)
        s = get_u32(r, &p->results[i]);
    if (!s)
        s = cv_state_get_range(r, "Philox samples used", 0, 4, &used);
    if (!s)
        p->used = (int)used;
    return s;
}

/* The iterator's generator, then the dataset's seed generator: its seeds
 * (drawn at random when unseeded, so a fresh process has others) and, for
 * rerandomize_each_iteration, how far it has drawn. The later iterators of
 * the dataset (the next repeat() epochs) are keyed from it. 24 words. */
static CvStatus random_save(CvIterator *base, CvStateWriter *w)
{
    RandomParams *p = base->dataset->params;
    put_philox(w, &((RandomIterator *)base)->rng);
    pthread_mutex_lock(&p->seeds.mu);
    CvPhilox generator = p->seeds.generator;
    pthread_mutex_unlock(&p->seeds.mu);
    cv_state_put_u64(w, p->seeds.seed);
    cv_state_put_u64(w, p->seeds.seed2);
    put_philox(w, &generator);
    return CV_STATUS_OK;
}

/* Resets the dataset's seed generator, as tf.data does: the restored
 * pipeline then draws its later iterators' seeds as the saved one would. */
static CvStatus random_restore(CvIterator *base, CvStateReader *r)
{
    RandomParams *p = base->dataset->params;
    CvPhilox rng, generator;
    uint64_t seed = 0, seed2 = 0;
    CvStatus s = get_philox(r, &rng);
    if (!s)
        s = cv_state_get_u64(r, &seed);
    if (!s)
        s = cv_state_get_u64(r, &seed2);
    if (!s)
        s = get_philox(r, &generator);
    if (s)
        return s;
    ((RandomIterator *)base)->rng = rng;
    pthread_mutex_lock(&p->seeds.mu);
    p->seeds.seed = seed;
    p->seeds.seed2 = seed2;
    p->seeds.generator = generator;
    pthread_mutex_unlock(&p->seeds.mu);
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
    .save = random_save,
    .restore = random_restore,
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
