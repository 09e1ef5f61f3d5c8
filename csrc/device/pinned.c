/* Page-locked batch buffers (see pinned.h). */
#include "device/pinned.h"

#include <stdlib.h>

struct CvPinnedPool {
    atomic_long refcount; /* the owner's, plus one per buffer out */
    CvDevice *device;     /* one reference */
    CvMemory *memory;     /* one reference */
    CvBufferAllocator alloc;
    atomic_llong bytes_out, buffers_out;
    _Atomic uint64_t allocs, refused;
};

/* A buffer whose memory is a staging-cache block. */
typedef struct PinnedBuffer {
    CvBuffer base;
    CvPinnedPool *pool; /* one reference */
    size_t slack;       /* capacity - the bytes asked for: what the pool keeps charged */
} PinnedBuffer;

/* Blocks come in steps, so batches of one size (an epoch's, the next
 * epoch's) take each other's blocks from the cache, which matches sizes
 * exactly. */
static size_t pinned_capacity(size_t n)
{
    size_t step = n >= ((size_t)1 << 20) ? (size_t)1 << 20 : 4096;
    return n ? (n + step - 1) / step * step : step;
}

static void pool_unref(CvPinnedPool *p)
{
    if (!p || atomic_fetch_sub_explicit(&p->refcount, 1, memory_order_acq_rel) != 1)
        return;
    cv_device_unref(p->device);
    cv_memory_unref(p->memory);
    free(p);
}

/* The last reference dropped (any thread): the block goes back to the
 * staging cache, its slack's charge to the budget. */
static void pinned_release(CvBuffer *base)
{
    PinnedBuffer *b = (PinnedBuffer *)base;
    CvPinnedPool *p = b->pool;
    cv_buffer_drop_links(base);
    cv_device_staging_give(p->device, base->data, base->capacity);
    cv_memory_release(p->memory, b->slack);
    atomic_fetch_sub_explicit(&p->bytes_out, (long long)base->capacity, memory_order_relaxed);
    atomic_fetch_sub_explicit(&p->buffers_out, 1, memory_order_relaxed);
    free(b);
    pool_unref(p);
}

/* CvBufferAllocator.alloc: NULL (the caller allocates as usual) when the
 * budget or the runtime says no. The whole block must fit in the budget
 * now; then the n bytes the batch element will carry are given back at
 * once (each stage that keeps the batch charges them, pinned.h "Budget"),
 * and the slack stays charged until the block goes back. */
static CvBuffer *pinned_alloc(void *ctx, size_t n)
{
    CvPinnedPool *p = ctx;
    size_t capacity = pinned_capacity(n);
    PinnedBuffer *b = malloc(sizeof(*b));
    void *host = NULL;
    if (!b || !cv_memory_try_charge(p->memory, capacity))
        goto refused;
    int previous = cv_device_enter(p->device);
    CvStatus s = cv_device_staging_take(p->device, capacity, &host);
    cv_device_leave(p->device, previous);
    if (s) {
        cv_status_free(s);
        cv_memory_release(p->memory, capacity);
        goto refused;
    }
    cv_memory_release(p->memory, n); /* the element's: charged by the stages that keep it */
    *b = (PinnedBuffer){.pool = p, .slack = capacity - n};
    atomic_init(&b->base.refcount, 1);
    b->base.data = host;
    b->base.size = n;
    b->base.capacity = capacity;
    b->base.origin_index = CV_ORIGIN_WHOLE_FILE;
    b->base.release = pinned_release;
    atomic_fetch_add_explicit(&p->refcount, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->bytes_out, (long long)capacity, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->buffers_out, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->allocs, 1, memory_order_relaxed);
    return &b->base;
refused:
    free(b);
    atomic_fetch_add_explicit(&p->refused, 1, memory_order_relaxed);
    return NULL;
}

CvStatus cv_pinned_pool_new(CvDevice *d, CvMemory *memory, CvPinnedPool **out)
{
    CvPinnedPool *p = calloc(1, sizeof(*p));
    *out = NULL;
    if (!p)
        return cv_error_nomem();
    atomic_init(&p->refcount, 1);
    p->device = cv_device_ref(d);
    p->memory = memory ? cv_memory_ref(memory) : NULL;
    p->alloc = (CvBufferAllocator){pinned_alloc, p};
    *out = p;
    return CV_STATUS_OK;
}

void cv_pinned_pool_unref(CvPinnedPool *p)
{
    pool_unref(p);
}

const CvBufferAllocator *cv_pinned_pool_allocator(CvPinnedPool *p)
{
    return &p->alloc;
}

bool cv_pinned_buffer_in(const CvBuffer *b, const CvPinnedPool *p)
{
    return p && b && b->release == pinned_release && ((const PinnedBuffer *)b)->pool == p;
}

CvPinnedStats cv_pinned_pool_stats(const CvPinnedPool *p)
{
    CvPinnedStats st = {0};
    if (!p)
        return st;
    st.bytes_out = atomic_load_explicit(&p->bytes_out, memory_order_relaxed);
    st.buffers_out = atomic_load_explicit(&p->buffers_out, memory_order_relaxed);
    st.allocs = atomic_load_explicit(&p->allocs, memory_order_relaxed);
    st.refused = atomic_load_explicit(&p->refused, memory_order_relaxed);
    return st;
}
