/* Philox4x32-10, exactly as TensorFlow uses it (philox_random.h with
 * random_distributions.h's SingleSampleAdapter), so that seeded shuffles
 * reproduce tf.data's order bit for bit. */
#ifndef CV_PHILOX_H
#define CV_PHILOX_H

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

#endif
