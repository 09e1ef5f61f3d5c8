#include "core/blocks.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_ALIGN 64
#define CLASSES (CV_BLOCK_MAX / BLOCK_ALIGN)

#if defined(__SANITIZE_ADDRESS__)
#define RECYCLE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RECYCLE 0
#endif
#endif
#ifndef RECYCLE
#define RECYCLE 1
#endif

static size_t class_of(size_t size)
{
    return size ? (size - 1) / BLOCK_ALIGN : 0;
}

#if RECYCLE

typedef struct {
    void *blocks[CV_BLOCK_MAGAZINE];
    int count;
} Magazine;

/* One thread's magazines: that thread's alone, no lock. */
typedef struct {
    Magazine magazines[CLASSES];
} ThreadCache;

/* Full magazines, per class; each guarded by its mu. */
static struct {
    pthread_mutex_t mu;
    int full;
    void *blocks[CV_BLOCK_DEPOT][CV_BLOCK_MAGAZINE];
} depot[CLASSES];

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t cache_key;
static bool have_key;
static _Thread_local ThreadCache *thread_cache;
static _Thread_local bool thread_exiting; /* its cache went to the depot: malloc from now on */

/* Hand m's blocks to the depot, or back to malloc when the depot is full. */
static void spill(Magazine *m, size_t c)
{
    pthread_mutex_lock(&depot[c].mu);
    bool kept = depot[c].full < CV_BLOCK_DEPOT;
    if (kept)
        memcpy(depot[c].blocks[depot[c].full++], m->blocks, (size_t)m->count * sizeof(void *));
    pthread_mutex_unlock(&depot[c].mu);
    if (!kept)
        for (int i = 0; i < m->count; i++)
            free(m->blocks[i]);
    m->count = 0;
}

/* Fill the empty m from the depot when it has a magazine. */
static void refill(Magazine *m, size_t c)
{
    pthread_mutex_lock(&depot[c].mu);
    if (depot[c].full > 0) {
        memcpy(m->blocks, depot[c].blocks[--depot[c].full], sizeof(m->blocks));
        m->count = CV_BLOCK_MAGAZINE;
    }
    pthread_mutex_unlock(&depot[c].mu);
}

/* pthread key destructor: the exiting thread's full magazines go to the
 * depot (which holds only full ones), its other blocks back to malloc. */
static void release_thread_cache(void *arg)
{
    ThreadCache *tc = arg;
    for (size_t c = 0; c < CLASSES; c++) {
        Magazine *m = &tc->magazines[c];
        if (m->count == CV_BLOCK_MAGAZINE)
            spill(m, c);
        for (int i = 0; i < m->count; i++)
            free(m->blocks[i]);
    }
    free(tc);
    thread_cache = NULL;
    thread_exiting = true;
}

static void init_once(void)
{
    for (size_t c = 0; c < CLASSES; c++)
        pthread_mutex_init(&depot[c].mu, NULL);
    have_key = pthread_key_create(&cache_key, release_thread_cache) == 0;
}

/* This thread's cache, made on first use; NULL while exiting or out of
 * memory (the caller falls back to malloc). */
static ThreadCache *cache(void)
{
    if (thread_cache || thread_exiting)
        return thread_cache;
    pthread_once(&once, init_once);
    if (!have_key)
        return NULL;
    ThreadCache *tc = calloc(1, sizeof(*tc));
    if (tc && pthread_setspecific(cache_key, tc) != 0) {
        free(tc);
        tc = NULL;
    }
    return thread_cache = tc;
}

void *cv_block_alloc(size_t size)
{
    size_t c = class_of(size);
    ThreadCache *tc = cache();
    if (tc) {
        Magazine *m = &tc->magazines[c];
        if (m->count == 0)
            refill(m, c);
        if (m->count > 0)
            return m->blocks[--m->count];
    }
    return aligned_alloc(BLOCK_ALIGN, (c + 1) * BLOCK_ALIGN);
}

void cv_block_free(void *block, size_t size)
{
    if (!block)
        return;
    size_t c = class_of(size);
    ThreadCache *tc = cache();
    if (!tc) {
        free(block);
        return;
    }
    Magazine *m = &tc->magazines[c];
    if (m->count == CV_BLOCK_MAGAZINE)
        spill(m, c);
    m->blocks[m->count++] = block;
}

void cv_blocks_before_fork(void)
{
    pthread_once(&once, init_once);
    for (size_t c = 0; c < CLASSES; c++)
        pthread_mutex_lock(&depot[c].mu);
}

void cv_blocks_after_fork_parent(void)
{
    for (size_t c = 0; c < CLASSES; c++)
        pthread_mutex_unlock(&depot[c].mu);
}

void cv_blocks_after_fork(void)
{
    /* Only this thread runs in the child; its own cache is intact. */
    if (!have_key)
        return;
    for (size_t c = 0; c < CLASSES; c++) {
        pthread_mutex_init(&depot[c].mu, NULL);
        depot[c].full = 0;
    }
}

#else /* AddressSanitizer: plain malloc */

void *cv_block_alloc(size_t size)
{
    return aligned_alloc(BLOCK_ALIGN, (class_of(size) + 1) * BLOCK_ALIGN);
}

void cv_block_free(void *block, size_t size)
{
    (void)size;
    free(block);
}

void cv_blocks_before_fork(void)
{
}

void cv_blocks_after_fork_parent(void)
{
}

void cv_blocks_after_fork(void)
{
}

#endif
