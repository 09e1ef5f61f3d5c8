/* Philox4x32-10, exactly as TensorFlow uses it (philox_random.h with
 * random_distributions.h's SingleSampleAdapter), so that seeded shuffles
 * reproduce tf.data's order bit for bit. */
#ifndef CV_PHILOX_H
#define CV_PHILOX_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct CvPhilox {
    uint32_t counter[4];
    uint32_t key[2];
    uint32_t results[4]; /* the current block of samples */
    int used;            /* samples of `results` handed out (4: none left) */
} CvPhilox;

/* PhiloxRandom(seed_lo, seed_hi): key from seed_lo, counter high words from
 * seed_hi. */
void cv_philox_init(CvPhilox *p, uint64_t seed_lo, uint64_t seed_hi);
/* SingleSampleAdapter: the next uint32 sample. */
uint32_t cv_philox_next(CvPhilox *p);

/* A fresh 64-bit seed for unseeded random transformations (tf.data's
 * random::New64): different in every call and process. Thread-safe. */
uint64_t cv_random_seed(void);

/* The seeds of a random dataset's iterators (shuffle, Dataset.random), as
 * tf.data derives them. The dataset owns one generator shared by all its
 * iterators. (seed, seed2) == (0, 0) means "unseeded": two random seeds are
 * drawn once, at init. With `fresh_each_iterator` (reshuffle_each_iteration,
 * rerandomize_each_iteration) every new iterator draws two uint32 seeds from
 * a Philox generator keyed by (seed, seed2); without it every iterator uses
 * (seed, seed2). Thread-safe. */
typedef struct CvSeedGenerator {
    bool fresh_each_iterator;
    uint64_t seed, seed2;
    pthread_mutex_t mu; /* guards generator */
    CvPhilox generator;
} CvSeedGenerator;

void cv_seed_generator_init(CvSeedGenerator *g, int64_t seed, int64_t seed2,
                            bool fresh_each_iterator);
void cv_seed_generator_destroy(CvSeedGenerator *g);
/* Key a new iterator's Philox generator `rng`. */
void cv_seed_generator_next(CvSeedGenerator *g, CvPhilox *rng);

#endif
