/* The shared state of Dataset.cache() (kernels/cache.c): one store per
 * Python Dataset.cache() call, shared by every engine dataset built for it
 * (one per set of options) and every iterator of those.
 *
 * Hooks let the kernel report to the layer above without knowing it: they
 * may be called from any thread (the consumer's or a worker's), with no
 * engine lock held, and must not call back into the cache.
 */
#ifndef CV_CACHE_H
#define CV_CACHE_H

#include "core/dataset.h"
#include "io/cache_file.h"

/* Progress states. */
enum { CV_CACHE_FILLING = 0, CV_CACHE_DONE = 1, CV_CACHE_DISCARDED = 2 };

typedef struct CvCacheHooks {
    /* A message for the user (a discarded partial pass, a cache file that
     * could not be written). Called at most once per store. */
    void (*warn)(void *ctx, const char *message);
    /* The first pass of iterator `token` has produced `elements` elements of
     * `bytes` bytes so far, of `total` (-1: unknown); `state` is one of the
     * states above. First called after progress_delay_ns of filling, then
     * at most every CV_CACHE_PROGRESS_PERIOD_NS (checked every 256
     * elements), and once with DONE or DISCARDED at the end of a pass that
     * reported. */
    void (*progress)(void *ctx, uint64_t token, int64_t elements, uint64_t bytes, int64_t total,
                     int state);
    /* The element structure to store in a cache file (opaque to the engine;
     * *blob malloc'ed, or NULL with *len 0 when unknown). */
    void (*describe)(void *ctx, char **blob, size_t *len);
    void (*release)(void *ctx);
    void *ctx;
    int64_t progress_delay_ns; /* < 0: CV_CACHE_PROGRESS_DELAY_NS */
    /* Optional: visit the foreign references ctx holds (see CvVisit); the
     * kernel calls it only while a single dataset holds the store. */
    int (*traverse)(void *ctx, CvVisit visit, void *arg);
} CvCacheHooks;

#define CV_CACHE_PROGRESS_DELAY_NS 1000000000LL
#define CV_CACHE_PROGRESS_PERIOD_NS 200000000LL

typedef struct CvCacheStore CvCacheStore;

/* A store caching in memory (filename NULL or "") or in the file
 * "<filename>.cvcache". Hooks are owned by the store from the call on, even
 * on failure (any of their functions may be NULL). */
CvStatus cv_cache_store_new(const char *filename, CvCacheHooks hooks, CvCacheStore **out);
CvCacheStore *cv_cache_store_ref(CvCacheStore *store);
void cv_cache_store_unref(CvCacheStore *store); /* NULL-safe */
/* The cache file's path ("<filename>.cvcache"), or NULL for a memory store. */
const char *cv_cache_store_path(const CvCacheStore *store);
/* The element structure the committed cache file records (*blob malloc'd,
 * or NULL with *len 0: a memory store, no committed file, none recorded).
 * DATA_LOSS & co. for a damaged file. Reads the file's trailer. */
CvStatus cv_cache_store_file_structure(const CvCacheStore *store, char **blob, size_t *len);
/* File store, before it is shared: what a torn cache file (one cut short
 * after it was written: io/cache_file.h, cv_cache_file_torn) does, a
 * CvTruncation (io/record_reader.h). WARN (the default): a DataLossWarning
 * naming the file and the offset of the tear, once per store, and the pass
 * computes the elements again and replaces the file; IGNORE: the same
 * without a word; ERROR: DATA_LOSS naming the file and the offset. */
void cv_cache_store_set_truncation(CvCacheStore *store, int on_truncation);

#endif
