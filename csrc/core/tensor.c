#include "core/tensor.h"

#include "core/blocks.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CV_BUFFER_ALIGN 64

static const size_t dtype_sizes[CV_NUM_DTYPES] = {
    [CV_BOOL] = 1,    [CV_INT8] = 1,    [CV_INT16] = 2,   [CV_INT32] = 4,
    [CV_INT64] = 8,   [CV_UINT8] = 1,   [CV_UINT16] = 2,  [CV_UINT32] = 4,
    [CV_UINT64] = 8,  [CV_FLOAT16] = 2, [CV_FLOAT32] = 4, [CV_FLOAT64] = 8,
    [CV_STRING] = sizeof(CvStringRef), [CV_BFLOAT16] = 2,
};

static const char *const dtype_names[CV_NUM_DTYPES] = {
    [CV_BOOL] = "bool",       [CV_INT8] = "int8",       [CV_INT16] = "int16",
    [CV_INT32] = "int32",     [CV_INT64] = "int64",     [CV_UINT8] = "uint8",
    [CV_UINT16] = "uint16",   [CV_UINT32] = "uint32",   [CV_UINT64] = "uint64",
    [CV_FLOAT16] = "float16", [CV_FLOAT32] = "float32", [CV_FLOAT64] = "float64",
    [CV_STRING] = "string",   [CV_BFLOAT16] = "bfloat16",
};

size_t cv_dtype_size(CvDtype dtype)
{
    return (unsigned)dtype < CV_NUM_DTYPES ? dtype_sizes[dtype] : 0;
}

const char *cv_dtype_name(CvDtype dtype)
{
    return (unsigned)dtype < CV_NUM_DTYPES ? dtype_names[dtype] : "invalid";
}

#define CV_POOL_MIN_BYTES ((size_t)64 << 10)
#define CV_HUGE_PAGE ((size_t)2 << 20)
#define CV_HUGE_BYTES ((size_t)8 << 20)
#define CV_POOL_SLOTS 128
#define CV_POOL_MAX_BYTES ((size_t)256 << 20)

/* The pool of idle large buffers, oldest first. Guarded by pool_mu; taken
 * only for buffers of at least CV_POOL_MIN_BYTES, never on a per-element hot
 * path of small tensors. A released buffer evicts the oldest ones when the
 * pool is full: what was released last is what the running pipeline will
 * ask for next (a batch's rows, then the batch the consumer dropped), and a
 * full pool of rows must not turn every batch buffer away, which would map
 * and zero-fault a fresh one per batch. 128 slots hold the rows of a batch
 * of 64 or more released together (an unfused batch) beside its buffer. */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static CvBuffer *pool[CV_POOL_SLOTS];
static int pool_count;
static size_t pool_bytes;
static uint64_t pool_hits, pool_misses, pool_missed_bytes;

static size_t header_size(void)
{
    return (sizeof(CvBuffer) + CV_BUFFER_ALIGN - 1) / CV_BUFFER_ALIGN * CV_BUFFER_ALIGN;
}

/* Mid-sized buffers, of 4 KiB to 64 KiB in all (a record of a few KiB, a
 * row), are recycled too, in classes of 1 KiB, LIFO (the last released is
 * the warmest): made on a pool thread and freed on the consumer's, 16 KiB
 * records took fresh memory from malloc at every epoch, whose trimming of
 * a pool thread's arena handed it back to the kernel, and each record's
 * copy faulted its pages in again (a third of a remote epoch's faults).
 * Each class is a list through the idle buffers' first bytes, guarded by
 * its own lock; mid_bytes bounds what all classes hold. Built with
 * AddressSanitizer they are plain malloc, so it still sees every use after
 * free of a record. */
#if defined(__SANITIZE_ADDRESS__)
#define MID_RECYCLE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MID_RECYCLE 0
#endif
#endif
#ifndef MID_RECYCLE
#define MID_RECYCLE 1
#endif
#define MID_STEP ((size_t)1 << 10)
#define MID_MIN ((size_t)4 << 10)
#define MID_CLASSES ((int)((CV_POOL_MIN_BYTES - MID_MIN) / MID_STEP) + 1)
#define MID_MAX_BYTES ((size_t)32 << 20)

static struct {
    pthread_mutex_t mu;
    CvBuffer *idle; /* the next idle buffer is at *(CvBuffer **)idle->data */
    size_t count;
    uint64_t hits, misses, missed_bytes;
} mid[MID_CLASSES];
static atomic_size_t mid_bytes;
static pthread_once_t mid_once = PTHREAD_ONCE_INIT;

static void mid_init(void)
{
    for (int c = 0; c < MID_CLASSES; c++)
        pthread_mutex_init(&mid[c].mu, NULL);
}

/* The class of a buffer of `total` bytes (header and memory), or -1. */
static int mid_class(size_t total)
{
    if (!MID_RECYCLE || total < MID_MIN || total > CV_POOL_MIN_BYTES)
        return -1;
    return (int)((total + MID_STEP - 1) / MID_STEP - MID_MIN / MID_STEP);
}

static size_t mid_total(int c)
{
    return MID_MIN + (size_t)c * MID_STEP;
}

/* An idle buffer of class c, or NULL. Counted as a hit, or a miss of
 * `size` bytes; size 0: an eviction (mid_keep), not counted. */
static CvBuffer *mid_take(int c, size_t size)
{
    pthread_once(&mid_once, mid_init);
    pthread_mutex_lock(&mid[c].mu);
    CvBuffer *b = mid[c].idle;
    if (b) {
        mid[c].idle = *(CvBuffer **)b->data;
        mid[c].count--;
    }
    if (size) {
        mid[c].hits += b != NULL;
        mid[c].misses += b == NULL;
        mid[c].missed_bytes += b ? 0 : size;
    }
    pthread_mutex_unlock(&mid[c].mu);
    if (b)
        atomic_fetch_sub_explicit(&mid_bytes, mid_total(c), memory_order_relaxed);
    return b;
}

/* Whether `more` bytes would take the classes over MID_MAX_BYTES. */
static bool mid_full(size_t more)
{
    return atomic_load_explicit(&mid_bytes, memory_order_relaxed) + more > MID_MAX_BYTES;
}

/* Keep b (of exactly its class's size) for the next mid_take. Over
 * MID_MAX_BYTES, idle buffers of the other classes are freed first: what an
 * earlier workload left (records of another size) gives way to the current
 * one instead of holding the bound for good. False when the class's own
 * buffers fill it (the caller frees b). */
static bool mid_keep(CvBuffer *b, int c)
{
    size_t total = mid_total(c);
    for (int k = 0; k < MID_CLASSES && mid_full(total); k++)
        for (CvBuffer *v; k != c && mid_full(total) && (v = mid_take(k, 0));)
            free(v); /* mid-sized buffers are plain malloc, never blocks */
    if (atomic_fetch_add_explicit(&mid_bytes, total, memory_order_relaxed) + total > MID_MAX_BYTES) {
        atomic_fetch_sub_explicit(&mid_bytes, total, memory_order_relaxed);
        return false;
    }
    pthread_once(&mid_once, mid_init);
    pthread_mutex_lock(&mid[c].mu);
    *(CvBuffer **)b->data = mid[c].idle;
    mid[c].idle = b;
    mid[c].count++;
    pthread_mutex_unlock(&mid[c].mu);
    return true;
}

/* Small buffers (a scalar, a short row) are blocks (core/blocks.h): made on
 * a pool thread, freed on the consumer's, they would take malloc's arena
 * lock from each other once per element. */
static bool is_block(size_t capacity)
{
    return header_size() + capacity <= CV_BLOCK_MAX;
}

/* Header and memory in one allocation; the memory starts on a 64-byte
 * boundary so NumPy and SIMD code see aligned data. */
void cv_buffer_drop_links(CvBuffer *b)
{
    for (uint32_t i = 0; i < b->nparts; i++)
        cv_buffer_unref(b->parts[i]); /* leaves: a part never has parts of its own */
    free(b->parts);
    b->parts = NULL;
    b->nparts = 0;
    cv_origin_unref(b->origin);
    b->origin = NULL;
}

static void buffer_release(CvBuffer *b)
{
    cv_buffer_drop_links(b);
    CvBuffer *evicted[CV_POOL_SLOTS];
    int nevicted = 0;
    if (b->capacity >= CV_POOL_MIN_BYTES && b->capacity <= CV_POOL_MAX_BYTES) {
        pthread_mutex_lock(&pool_mu);
        while (pool_count == CV_POOL_SLOTS || pool_bytes + b->capacity > CV_POOL_MAX_BYTES) {
            evicted[nevicted++] = pool[0];
            pool_bytes -= pool[0]->capacity;
            memmove(pool, pool + 1, (size_t)--pool_count * sizeof(pool[0]));
        }
        pool[pool_count++] = b;
        pool_bytes += b->capacity;
        b = NULL;
        pthread_mutex_unlock(&pool_mu);
    }
    for (int i = 0; i < nevicted; i++)
        free(evicted[i]); /* outside the lock: unmapping can take a while */
    int c = b ? mid_class(header_size() + b->capacity) : -1;
    if (c >= 0 && header_size() + b->capacity == mid_total(c) && mid_keep(b, c))
        return;
    if (b && is_block(b->capacity))
        cv_block_free(b, header_size() + b->capacity);
    else
        free(b);
}

/* The pooled buffer that fits `size` best without wasting more than a
 * quarter of it, or NULL. */
static CvBuffer *pool_take(size_t size)
{
    CvBuffer *best = NULL;
    int best_index = -1;
    pthread_mutex_lock(&pool_mu);
    for (int i = 0; i < pool_count; i++) {
        size_t cap = pool[i]->capacity;
        if (cap >= size && cap - size <= size / 4 && (!best || cap < best->capacity)) {
            best = pool[i];
            best_index = i;
        }
    }
    if (best) {
        memmove(pool + best_index, pool + best_index + 1,
                (size_t)(--pool_count - best_index) * sizeof(pool[0])); /* keeps the age order */
        pool_bytes -= best->capacity;
        pool_hits++;
    } else {
        pool_misses++;
        pool_missed_bytes += size;
    }
    pthread_mutex_unlock(&pool_mu);
    return best;
}

CvBufferPoolStats cv_buffer_pool_stats(void)
{
    pthread_mutex_lock(&pool_mu);
    CvBufferPoolStats stats = {pool_hits, pool_misses, pool_missed_bytes, (size_t)pool_count, pool_bytes};
    pthread_mutex_unlock(&pool_mu);
    pthread_once(&mid_once, mid_init);
    for (int c = 0; c < MID_CLASSES; c++) {
        pthread_mutex_lock(&mid[c].mu);
        stats.hits += mid[c].hits;
        stats.misses += mid[c].misses;
        stats.missed_bytes += mid[c].missed_bytes;
        stats.pooled_buffers += mid[c].count;
        stats.pooled_bytes += mid[c].count * mid_total(c);
        pthread_mutex_unlock(&mid[c].mu);
    }
    return stats;
}

void cv_buffer_pool_after_fork(void)
{
    pthread_mutex_init(&pool_mu, NULL);
    pool_count = 0; /* the parent's buffers stay allocated in the child: a bounded leak */
    pool_bytes = 0;
    pthread_once(&mid_once, mid_init);
    for (int c = 0; c < MID_CLASSES; c++) {
        pthread_mutex_init(&mid[c].mu, NULL);
        mid[c].idle = NULL;
        mid[c].count = 0;
    }
    atomic_store(&mid_bytes, 0);
}

CvBuffer *cv_buffer_new(size_t size)
{
    size_t header = header_size();
    if (size > SIZE_MAX - header - 4096)
        return NULL;
    int c = size < CV_POOL_MIN_BYTES ? mid_class(header + size) : -1;
    CvBuffer *b = size >= CV_POOL_MIN_BYTES ? pool_take(size) : c >= 0 ? mid_take(c, size) : NULL;
    if (!b) {
        size_t round = size >= CV_POOL_MIN_BYTES ? 4096 : CV_BUFFER_ALIGN;
        size_t capacity = c >= 0 ? mid_total(c) - header : (size + round - 1) / round * round;
        if (size >= CV_HUGE_BYTES) {
            /* Huge pages for big buffers (a from_tensor_slices source): one
             * fault per 2 MiB instead of per 4 KiB on first touch. Only the
             * huge pages the buffer fills are advised: its last, partial one
             * stays in 4 KiB pages, or every 8 MiB element would take 10 MiB
             * of RAM (its header spills into a fifth huge page) and a
             * buffer charged 8 MiB to the RAM budget would hold 1.25x that. */
            size_t total = (header + capacity + CV_HUGE_PAGE - 1) / CV_HUGE_PAGE * CV_HUGE_PAGE;
            b = aligned_alloc(CV_HUGE_PAGE, total);
            size_t whole = (header + capacity) / CV_HUGE_PAGE * CV_HUGE_PAGE;
            if (b && whole)
                madvise(b, whole, MADV_HUGEPAGE); /* advice only: failure is harmless */
        } else if (is_block(capacity)) {
            b = cv_block_alloc(header + capacity);
        } else {
            b = aligned_alloc(CV_BUFFER_ALIGN, header + capacity);
        }
        if (!b)
            return NULL;
        b->data = (char *)b + header;
        b->capacity = capacity;
        b->release = buffer_release;
    }
    atomic_init(&b->refcount, 1);
    b->size = size;
    b->parts = NULL;
    b->nparts = 0;
    b->origin = NULL;
    b->origin_index = CV_ORIGIN_WHOLE_FILE;
    return b;
}

struct CvOrigin {
    atomic_long refcount;
    char path[];
};

CvOrigin *cv_origin_new(const char *path)
{
    size_t n = strlen(path);
    CvOrigin *o = malloc(sizeof(*o) + n + 1);
    if (!o)
        return NULL;
    atomic_init(&o->refcount, 1);
    memcpy(o->path, path, n + 1);
    return o;
}

CvOrigin *cv_origin_ref(CvOrigin *o)
{
    atomic_fetch_add_explicit(&o->refcount, 1, memory_order_relaxed);
    return o;
}

void cv_origin_unref(CvOrigin *o)
{
    if (o && atomic_fetch_sub_explicit(&o->refcount, 1, memory_order_acq_rel) == 1)
        free(o);
}

const char *cv_origin_path(const CvOrigin *o)
{
    return o->path;
}

void cv_buffer_set_origin(CvBuffer *b, CvOrigin *o, uint64_t index)
{
    if (!o)
        return;
    cv_origin_unref(b->origin);
    b->origin = cv_origin_ref(o);
    b->origin_index = index < CV_ORIGIN_WHOLE_FILE ? (uint32_t)index : CV_ORIGIN_WHOLE_FILE;
}

bool cv_tensor_origin_str(const CvTensor *t, char *buf, size_t size)
{
    const CvBuffer *b = t->buf;
    if (!b || !b->origin)
        return false;
    if (b->origin_index == CV_ORIGIN_WHOLE_FILE)
        snprintf(buf, size, "\"%s\"", b->origin->path);
    else
        snprintf(buf, size, "record %u of \"%s\"", (unsigned)b->origin_index, b->origin->path);
    return true;
}

void cv_buffer_set_parts(CvBuffer *b, CvBuffer **parts, uint32_t n)
{
    b->parts = parts;
    b->nparts = n;
}

void cv_buffer_unref(CvBuffer *b)
{
    if (b && atomic_fetch_sub_explicit(&b->refcount, 1, memory_order_acq_rel) == 1)
        b->release(b);
}

int64_t cv_tensor_num_elements(const CvTensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->shape[i];
    return n;
}

size_t cv_tensor_nbytes(const CvTensor *t)
{
    return (size_t)cv_tensor_num_elements(t) * cv_dtype_size(t->dtype);
}

static CvStatus tensor_alloc(CvTensor *out, CvDtype dtype, int rank, const int64_t *shape,
                             size_t string_bytes, char **blob, const CvBufferAllocator *a)
{
    if (rank < 0 || rank > CV_MAX_RANK)
        return cv_error(CV_INVALID_ARGUMENT, "tensor rank %d is outside conveyor's limit of 0..%d",
                        rank, CV_MAX_RANK);
    size_t count = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return cv_error(CV_INVALID_ARGUMENT, "negative dimension %lld in a tensor shape",
                            (long long)shape[i]);
        if (shape[i] && count > SIZE_MAX / (size_t)shape[i])
            return cv_error(CV_RESOURCE_EXHAUSTED, "tensor shape overflows the address space");
        count *= (size_t)shape[i];
    }
    size_t item = cv_dtype_size(dtype);
    if (item == 0)
        return cv_error(CV_INVALID_ARGUMENT, "invalid dtype code %d", (int)dtype);
    if (count > SIZE_MAX / item || count * item > SIZE_MAX - string_bytes)
        return cv_error(CV_RESOURCE_EXHAUSTED, "tensor size overflows the address space");
    size_t bytes = count * item + (dtype == CV_STRING ? string_bytes : 0);
    if (dtype == CV_STRING && bytes > CV_STRING_OFFSET_MASK)
        return cv_error(CV_RESOURCE_EXHAUSTED, "a string tensor of %zu bytes is larger than "
                        "conveyor's limit of 1 TiB", bytes);
    CvBuffer *b = a && dtype != CV_STRING ? a->alloc(a->ctx, bytes) : NULL;
    if (!b)
        b = cv_buffer_new(bytes);
    if (!b)
        return cv_error(CV_RESOURCE_EXHAUSTED, "out of memory allocating a %s tensor of %zu bytes",
                        cv_dtype_name(dtype), bytes);
    out->dtype = dtype;
    out->rank = rank;
    if (rank)
        memcpy(out->shape, shape, (size_t)rank * sizeof(int64_t));
    out->data = b->data;
    out->buf = b;
    if (blob)
        *blob = b->data + count * item;
    return CV_STATUS_OK;
}

CvStatus cv_tensor_alloc(CvTensor *out, CvDtype dtype, int rank, const int64_t *shape,
                         size_t string_bytes, char **blob)
{
    return tensor_alloc(out, dtype, rank, shape, string_bytes, blob, NULL);
}

CvStatus cv_tensor_alloc_from(CvTensor *out, CvDtype dtype, int rank, const int64_t *shape,
                              const CvBufferAllocator *a)
{
    return tensor_alloc(out, dtype, rank, shape, 0, NULL, a);
}

CvStatus cv_tensor_alloc_scalar_string(CvTensor *out, size_t n, char **bytes)
{
    char *blob = NULL;
    CvStatus s = cv_tensor_alloc(out, CV_STRING, 0, NULL, n, &blob);
    if (s)
        return s;
    CvStringRef *ref = (CvStringRef *)out->data;
    ref->offset = (uint64_t)(blob - out->buf->data);
    ref->length = n;
    *bytes = blob;
    return CV_STATUS_OK;
}

CvStatus cv_tensor_strings(CvTensor *out, int rank, const int64_t *shape, const char *const *data,
                           const size_t *len)
{
    int64_t n = 1;
    size_t total = 0;
    for (int k = 0; k < rank; k++)
        n *= shape[k];
    for (int64_t i = 0; i < n; i++)
        total += len[i];
    char *blob;
    CvStatus s = cv_tensor_alloc(out, CV_STRING, rank, shape, total, &blob);
    CvStringRef *refs = s ? NULL : (CvStringRef *)out->data;
    for (int64_t i = 0; refs && i < n; i++) {
        if (len[i])
            memcpy(blob, data[i], len[i]);
        refs[i].offset = (uint64_t)(blob - out->buf->data);
        refs[i].length = (uint64_t)len[i];
        blob += len[i];
    }
    return s;
}

void cv_tensor_copy_ref(CvTensor *dst, const CvTensor *src)
{
    *dst = *src;
    cv_buffer_ref(dst->buf);
}

void cv_tensor_slice(CvTensor *dst, const CvTensor *src, int64_t index)
{
    dst->dtype = src->dtype;
    dst->rank = src->rank - 1;
    for (int i = 1; i < src->rank; i++)
        dst->shape[i - 1] = src->shape[i];
    size_t row = (size_t)cv_tensor_num_elements(dst) * cv_dtype_size(src->dtype);
    dst->data = src->data + (size_t)index * row;
    dst->buf = cv_buffer_ref(src->buf);
}

void cv_tensor_clear(CvTensor *t)
{
    if (t->buf) {
        cv_buffer_unref(t->buf);
        t->buf = NULL;
    }
    t->data = NULL;
}

bool cv_tensor_same_shape(const CvTensor *a, const CvTensor *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i])
            return false;
    return true;
}

const char *cv_shape_str(const int64_t *shape, int rank, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld", (long long)shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* Arrays of a few tensors (most elements) are blocks: like small buffers
 * they are made on a pool thread and freed on the consumer's. */
CvStatus cv_element_init(CvElement *e, uint32_t n)
{
    *e = (CvElement){0};
    if (n == 0)
        return CV_STATUS_OK;
    size_t bytes = (size_t)n * sizeof(CvTensor);
    if (bytes <= CV_BLOCK_MAX) {
        e->t = cv_block_alloc(bytes);
        if (e->t) {
            memset(e->t, 0, bytes);
            e->t_block = (uint32_t)bytes;
        }
    } else {
        e->t = calloc(n, sizeof(CvTensor));
    }
    if (!e->t)
        return cv_error_nomem();
    e->n = n;
    return CV_STATUS_OK;
}

void cv_element_free_array(CvElement *e)
{
    if (e->t_block)
        cv_block_free(e->t, e->t_block);
    else
        free(e->t);
    *e = (CvElement){0};
}

void cv_element_clear(CvElement *e)
{
    for (uint32_t i = 0; i < e->n; i++)
        cv_tensor_clear(&e->t[i]);
    cv_element_free_array(e);
}
