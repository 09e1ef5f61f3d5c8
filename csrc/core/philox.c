#include "core/philox.h"

#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void cv_philox_init(CvPhilox *p, uint64_t seed_lo, uint64_t seed_hi)
{
    p->key[0] = (uint32_t)seed_lo;
    p->key[1] = (uint32_t)(seed_lo >> 32);
    p->counter[0] = 0;
    p->counter[1] = 0;
    p->counter[2] = (uint32_t)seed_hi;
    p->counter[3] = (uint32_t)(seed_hi >> 32);
    p->used = 4;
}

/* One call of the generator: 10 rounds over a copy of counter and key, then
 * the 128-bit counter is incremented (word 0 lowest). */
static void philox_block(CvPhilox *p)
{
    uint32_t c[4] = {p->counter[0], p->counter[1], p->counter[2], p->counter[3]};
    uint32_t k[2] = {p->key[0], p->key[1]};
    for (int round = 0; round < 10; round++) {
        uint64_t product0 = (uint64_t)PHILOX_M0 * c[0];
        uint64_t product1 = (uint64_t)PHILOX_M1 * c[2];
        uint32_t hi0 = (uint32_t)(product0 >> 32), lo0 = (uint32_t)product0;
        uint32_t hi1 = (uint32_t)(product1 >> 32), lo1 = (uint32_t)product1;
        uint32_t next[4] = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
        c[0] = next[0];
        c[1] = next[1];
        c[2] = next[2];
        c[3] = next[3];
        if (round < 9) {
            k[0] += PHILOX_W0;
            k[1] += PHILOX_W1;
        }
    }
    for (int i = 0; i < 4; i++)
        p->results[i] = c[i];
    for (int i = 0; i < 4 && ++p->counter[i] == 0; i++) {
    }
    p->used = 0;
}

uint32_t cv_philox_next(CvPhilox *p)
{
    if (p->used == 4)
        philox_block(p);
    return p->results[p->used++];
}

void cv_seed_generator_init(CvSeedGenerator *g, int64_t seed, int64_t seed2,
                            bool fresh_each_iterator)
{
    g->fresh_each_iterator = fresh_each_iterator;
    g->seed = (uint64_t)seed;
    g->seed2 = (uint64_t)seed2;
    if (seed == 0 && seed2 == 0) {
        g->seed = cv_random_seed();
        g->seed2 = cv_random_seed();
    }
    pthread_mutex_init(&g->mu, NULL);
    cv_philox_init(&g->generator, g->seed, g->seed2);
}

void cv_seed_generator_destroy(CvSeedGenerator *g)
{
    pthread_mutex_destroy(&g->mu);
}

void cv_seed_generator_next(CvSeedGenerator *g, CvPhilox *rng)
{
    uint64_t seed = g->seed, seed2 = g->seed2;
    if (g->fresh_each_iterator) {
        pthread_mutex_lock(&g->mu);
        seed = cv_philox_next(&g->generator);
        seed2 = cv_philox_next(&g->generator);
        pthread_mutex_unlock(&g->mu);
    }
    cv_philox_init(rng, seed, seed2);
}

uint64_t cv_random_seed(void)
{
    static atomic_ullong calls;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    uint64_t x = (uint64_t)t.tv_nsec ^ ((uint64_t)t.tv_sec << 32) ^ ((uint64_t)getpid() << 16) ^
                 (atomic_fetch_add(&calls, 1) * 0x9E3779B97F4A7C15ull);
    x ^= x >> 33; /* splitmix64 finalizer */
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}
