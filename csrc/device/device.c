/* Devices, device buffers and the block cache (see device.h). */
#include "device/device.h"

#include <stdlib.h>
#include <string.h>

#include "core/iterator_state.h"
#include "core/report.h"
#include "core/thread.h"
#include "device/cuda.h"

/* ------------------------------------------------------------ the host */

static char host_event; /* every host event: complete at once */

static CvStatus host_open(CvDevice *d)
{
    return d->index == 0 ? CV_STATUS_OK
                         : cv_error(CV_INVALID_ARGUMENT, "device cpu:%d does not exist: the host is cpu:0",
                                    d->index);
}

static void host_close(CvDevice *d)
{
    (void)d;
}

static CvStatus host_alloc(CvDevice *d, size_t n, void **p)
{
    (void)d;
    *p = aligned_alloc(256, (n + 255) & ~(size_t)255);
    return *p ? CV_STATUS_OK : cv_error_nomem();
}

static void host_free(CvDevice *d, void *p)
{
    (void)d;
    free(p);
}

static CvStatus host_copy(CvDevice *d, void *dst, const void *src, size_t n)
{
    (void)d;
    if (n)
        memcpy(dst, src, n);
    return CV_STATUS_OK;
}

static CvStatus host_event_new(CvDevice *d, bool timing, void **ev)
{
    (void)d;
    (void)timing;
    *ev = &host_event;
    return CV_STATUS_OK;
}

static void host_event_free(CvDevice *d, void *ev)
{
    (void)d;
    (void)ev;
}

static CvStatus host_record(CvDevice *d, void *ev, void *stream)
{
    (void)d;
    (void)ev;
    (void)stream;
    return CV_STATUS_OK;
}

static CvStatus host_sync(CvDevice *d, void *ev)
{
    (void)d;
    (void)ev;
    return CV_STATUS_OK;
}

static bool host_done(CvDevice *d, void *ev)
{
    (void)d;
    (void)ev;
    return true;
}

static double host_elapsed(CvDevice *d, void *start, void *end)
{
    (void)d;
    (void)start;
    (void)end;
    return 0.0;
}

static int host_enter(CvDevice *d)
{
    (void)d;
    return -1;
}

static void host_leave(CvDevice *d, int previous)
{
    (void)d;
    (void)previous;
}

static const CvDeviceMethods host_methods = {
    .name = "cpu", .dlpack_type = CV_DLPACK_CPU, .open = host_open, .close = host_close,
    .host_alloc = host_alloc, .host_free = host_free, .alloc = host_alloc, .free = host_free,
    .copy_in = host_copy, .copy_out = host_copy, .event_new = host_event_new,
    .event_free = host_event_free, .record = host_record, .sync = host_sync, .done = host_done,
    .stream_wait = host_record, .elapsed_ms = host_elapsed, .enter = host_enter,
    .leave = host_leave,
};

/* ------------------------------------------------------------ CUDA */

#define CUDA_CALL(d, what, call)                                                               \
    do {                                                                                       \
        cvCudaError err_ = (call);                                                             \
        if (err_ != CV_CUDA_SUCCESS)                                                           \
            return cv_cuda_error(err_, what, (d)->index);                                      \
    } while (0)

static int cuda_enter(CvDevice *d)
{
    int previous = -1;
    if (cv_cuda()->GetDevice(&previous) != CV_CUDA_SUCCESS)
        previous = -1;
    if (previous != d->index)
        cv_cuda()->SetDevice(d->index);
    return previous;
}

static void cuda_leave(CvDevice *d, int previous)
{
    if (previous >= 0 && previous != d->index)
        cv_cuda()->SetDevice(previous);
}

static CvStatus cuda_open(CvDevice *d)
{
    CvStatus s = cv_cuda_check_device(d->index);
    if (s)
        return s;
    int previous = cuda_enter(d);
    cvCudaStream stream = NULL;
    cvCudaError err = cv_cuda()->StreamCreateWithFlags(&stream, CV_CUDA_STREAM_NON_BLOCKING);
    cuda_leave(d, previous);
    if (err != CV_CUDA_SUCCESS)
        return cv_cuda_error(err, "cudaStreamCreateWithFlags", d->index);
    d->stream = stream;
    return CV_STATUS_OK;
}

static void cuda_close(CvDevice *d)
{
    if (!d->stream)
        return;
    int previous = cuda_enter(d);
    cv_cuda()->StreamSynchronize(d->stream);
    cv_cuda()->StreamDestroy(d->stream);
    cuda_leave(d, previous);
}

static CvStatus cuda_host_alloc(CvDevice *d, size_t n, void **p)
{
    CUDA_CALL(d, "cudaHostAlloc (pinned staging memory)", cv_cuda()->HostAlloc(p, n, 0));
    return CV_STATUS_OK;
}

static void cuda_host_free(CvDevice *d, void *p)
{
    (void)d;
    cv_cuda()->FreeHost(p);
}

static CvStatus cuda_alloc(CvDevice *d, size_t n, void **p)
{
    CUDA_CALL(d, "cudaMalloc", cv_cuda()->Malloc(p, n));
    return CV_STATUS_OK;
}

static void cuda_free(CvDevice *d, void *p)
{
    (void)d;
    cv_cuda()->Free(p);
}

static CvStatus cuda_copy_in(CvDevice *d, void *dst, const void *src, size_t n)
{
    CUDA_CALL(d, "cudaMemcpyAsync (host to device)",
              cv_cuda()->MemcpyAsync(dst, src, n, CV_CUDA_MEMCPY_HOST_TO_DEVICE, d->stream));
    return CV_STATUS_OK;
}

/* On the legacy default stream, which the caller made wait for the data. */
static CvStatus cuda_copy_out(CvDevice *d, void *dst, const void *src, size_t n)
{
    CUDA_CALL(d, "cudaMemcpyAsync (device to host)",
              cv_cuda()->MemcpyAsync(dst, src, n, CV_CUDA_MEMCPY_DEVICE_TO_HOST, CV_CUDA_STREAM_LEGACY));
    CUDA_CALL(d, "cudaStreamSynchronize", cv_cuda()->StreamSynchronize(CV_CUDA_STREAM_LEGACY));
    return CV_STATUS_OK;
}

static CvStatus cuda_event_new(CvDevice *d, bool timing, void **ev)
{
    cvCudaEvent e = NULL;
    CUDA_CALL(d, "cudaEventCreateWithFlags",
              cv_cuda()->EventCreateWithFlags(&e, timing ? 0 : CV_CUDA_EVENT_DISABLE_TIMING));
    *ev = e;
    return CV_STATUS_OK;
}

static void cuda_event_free(CvDevice *d, void *ev)
{
    (void)d;
    if (ev)
        cv_cuda()->EventDestroy(ev);
}

static CvStatus cuda_record(CvDevice *d, void *ev, void *stream)
{
    CUDA_CALL(d, "cudaEventRecord", cv_cuda()->EventRecord(ev, stream ? stream : d->stream));
    return CV_STATUS_OK;
}

static CvStatus cuda_sync(CvDevice *d, void *ev)
{
    CUDA_CALL(d, "cudaEventSynchronize", cv_cuda()->EventSynchronize(ev));
    return CV_STATUS_OK;
}

static bool cuda_done(CvDevice *d, void *ev)
{
    (void)d;
    return cv_cuda()->EventQuery(ev) != CV_CUDA_ERROR_NOT_READY;
}

static CvStatus cuda_stream_wait(CvDevice *d, void *stream, void *ev)
{
    CUDA_CALL(d, "cudaStreamWaitEvent", cv_cuda()->StreamWaitEvent(stream ? stream : d->stream, ev, 0));
    return CV_STATUS_OK;
}

static double cuda_elapsed(CvDevice *d, void *start, void *end)
{
    (void)d;
    float ms = 0.0f;
    return cv_cuda()->EventElapsedTime(&ms, start, end) == CV_CUDA_SUCCESS ? (double)ms : 0.0;
}

static const CvDeviceMethods cuda_methods = {
    .name = "cuda", .dlpack_type = CV_DLPACK_CUDA, .open = cuda_open, .close = cuda_close,
    .host_alloc = cuda_host_alloc, .host_free = cuda_host_free, .alloc = cuda_alloc,
    .free = cuda_free, .copy_in = cuda_copy_in, .copy_out = cuda_copy_out,
    .event_new = cuda_event_new, .event_free = cuda_event_free, .record = cuda_record,
    .sync = cuda_sync, .done = cuda_done, .stream_wait = cuda_stream_wait,
    .elapsed_ms = cuda_elapsed, .enter = cuda_enter,
    .leave = cuda_leave,
};

/* ------------------------------------------------------------ devices */

int cv_device_enter(CvDevice *d)
{
    return d->methods->enter(d);
}

void cv_device_leave(CvDevice *d, int previous)
{
    d->methods->leave(d, previous);
}

/* core/iterator_state.h's hook: a save that holds device elements reads them back. */
static bool read_foreign(const CvBuffer *b, const char *src, void *dst, size_t n, CvStatus *status)
{
    CvDeviceBuffer *db = cv_device_buffer_of(b);
    if (!db)
        return false;
    if (n)
        *status = cv_device_buffer_read(db, src, dst, n);
    return true;
}

CvStatus cv_device_open(CvDeviceKind kind, int index, CvDevice **out)
{
    cv_state_set_foreign_reader(read_foreign);
    *out = NULL;
    CvDevice *d = calloc(1, sizeof(*d));
    if (!d)
        return cv_error_nomem();
    atomic_init(&d->refcount, 1);
    atomic_init(&d->device_bytes, 0);
    d->kind = kind;
    d->index = index;
    d->methods = kind == CV_DEVICE_CUDA ? &cuda_methods : &host_methods;
    pthread_mutex_init(&d->mu, NULL);
    CvStatus s = d->methods->open(d);
    if (s) {
        pthread_mutex_destroy(&d->mu);
        free(d);
        return s;
    }
    *out = d;
    return CV_STATUS_OK;
}

CvDevice *cv_device_ref(CvDevice *d)
{
    atomic_fetch_add_explicit(&d->refcount, 1, memory_order_relaxed);
    return d;
}

static void block_free(CvDevice *d, CvDeviceBlock *b)
{
    d->methods->event_free(d, b->freed);
    d->methods->free(d, b->ptr);
    atomic_fetch_sub_explicit(&d->device_bytes, (long long)b->size, memory_order_relaxed);
    free(b);
}

/* Free every cached block (the caller owns the list). */
static void free_list(CvDevice *d, CvDeviceBlock *b)
{
    while (b) {
        CvDeviceBlock *next = b->next;
        block_free(d, b);
        b = next;
    }
}

static CvDeviceBlock *take_cache(CvDevice *d)
{
    pthread_mutex_lock(&d->mu);
    CvDeviceBlock *all = d->cache;
    d->cache = NULL;
    d->cached_bytes = 0;
    pthread_mutex_unlock(&d->mu);
    return all;
}

void cv_device_retire(CvDevice *d)
{
    pthread_mutex_lock(&d->mu);
    d->retired = true;
    pthread_mutex_unlock(&d->mu);
    int previous = cv_device_enter(d);
    free_list(d, take_cache(d));
    cv_device_leave(d, previous);
}

void cv_device_unref(CvDevice *d)
{
    if (!d || atomic_fetch_sub_explicit(&d->refcount, 1, memory_order_acq_rel) != 1)
        return;
    int previous = cv_device_enter(d);
    free_list(d, take_cache(d));
    cv_device_leave(d, previous);
    d->methods->close(d);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

/* Blocks are sized in steps, so that batches of slightly different sizes
 * (a last, partial batch; strings) reuse them. */
static size_t block_size(size_t n)
{
    size_t step = n >= ((size_t)1 << 20) ? (size_t)1 << 20 : 4096;
    return n ? (n + step - 1) / step * step : step;
}

CvStatus cv_device_block_alloc(CvDevice *d, size_t n, CvDeviceBlock **out)
{
    size_t size = block_size(n);
    CvDeviceBlock *found = NULL, **link = NULL;
    pthread_mutex_lock(&d->mu);
    for (CvDeviceBlock **p = &d->cache; *p; p = &(*p)->next)
        if ((*p)->size >= size && (*p)->size <= 2 * size && (!found || (*p)->size < found->size)) {
            found = *p;
            link = p;
        }
    if (found) {
        *link = found->next;
        d->cached_bytes -= found->size;
    }
    pthread_mutex_unlock(&d->mu);
    CvStatus s = CV_STATUS_OK;
    if (found) {
        found->next = NULL;
        if (found->freed) { /* the copy stream waits for the block's last user */
            s = d->methods->stream_wait(d, NULL, found->freed);
            d->methods->event_free(d, found->freed);
            found->freed = NULL;
            if (s) {
                block_free(d, found);
                return s;
            }
        }
        *out = found;
        return CV_STATUS_OK;
    }
    CvDeviceBlock *b = calloc(1, sizeof(*b));
    if (!b)
        return cv_error_nomem();
    s = d->methods->alloc(d, size, &b->ptr);
    if (s && s->code == CV_RESOURCE_EXHAUSTED) { /* give the cache back, then retry */
        cv_status_free(s);
        free_list(d, take_cache(d));
        s = d->methods->alloc(d, size, &b->ptr);
    }
    if (s) {
        free(b);
        return s;
    }
    b->size = size;
    atomic_fetch_add_explicit(&d->device_bytes, (long long)size, memory_order_relaxed);
    *out = b;
    return CV_STATUS_OK;
}

/* The last reference dropped, on any thread: the block goes back to the
 * cache behind an event on the consumer's stream. */
static void device_buffer_release(CvBuffer *base)
{
    CvDeviceBuffer *b = (CvDeviceBuffer *)base;
    CvDevice *d = b->device;
    CvDeviceBlock *block = b->block;
    int previous = cv_device_enter(d);
    d->methods->event_free(d, b->ready);
    uintptr_t stream = atomic_load_explicit(&b->consumer_stream, memory_order_acquire);
    CvStatus s = CV_STATUS_OK;
    if (d->kind == CV_DEVICE_CUDA) {
        s = d->methods->event_new(d, false, &block->freed);
        if (!s)
            s = d->methods->record(d, block->freed, stream ? (void *)stream : (void *)CV_CUDA_STREAM_LEGACY);
    }
    bool keep = false;
    if (!s) {
        pthread_mutex_lock(&d->mu);
        if (!d->retired && d->cached_bytes + block->size <= CV_DEVICE_CACHE_BYTES) {
            block->next = d->cache;
            d->cache = block;
            d->cached_bytes += block->size;
            keep = true;
        }
        pthread_mutex_unlock(&d->mu);
    }
    cv_status_free(s); /* at exit the runtime may be gone: then just free */
    if (!keep)
        block_free(d, block);
    cv_device_leave(d, previous);
    cv_device_unref(d);
    free(b);
}

CvStatus cv_device_buffer_new(CvDevice *d, CvDeviceBlock *block, size_t size, CvDeviceBuffer **out)
{
    CvDeviceBuffer *b = calloc(1, sizeof(*b));
    if (!b)
        return cv_error_nomem();
    CvStatus s = d->methods->event_new(d, false, &b->ready);
    if (s) {
        free(b);
        return s;
    }
    atomic_init(&b->base.refcount, 1);
    b->base.data = block->ptr;
    b->base.size = size;
    b->base.capacity = block->size;
    b->base.release = device_buffer_release;
    b->device = cv_device_ref(d);
    b->block = block;
    atomic_init(&b->consumer_stream, 0);
    *out = b;
    return CV_STATUS_OK;
}

CvDeviceBuffer *cv_device_buffer_of(const CvBuffer *b)
{
    return b && b->release == device_buffer_release ? (CvDeviceBuffer *)b : NULL;
}

CvStatus cv_device_buffer_wait(CvDeviceBuffer *b, uintptr_t stream)
{
    CvDevice *d = b->device;
    if (d->kind != CV_DEVICE_CUDA)
        return CV_STATUS_OK;
    int previous = cv_device_enter(d);
    CvStatus s = d->methods->stream_wait(d, stream ? (void *)stream : (void *)CV_CUDA_STREAM_LEGACY,
                                         b->ready);
    cv_device_leave(d, previous);
    return s;
}

CvStatus cv_device_buffer_use_on(CvDeviceBuffer *b, uintptr_t stream)
{
    /* The free waits behind that stream; another thread's per-thread
     * stream is not this one, but it syncs with the legacy stream. */
    atomic_store_explicit(&b->consumer_stream, stream == 2 ? 1 : stream, memory_order_release);
    return cv_device_buffer_wait(b, stream);
}

CvStatus cv_device_buffer_read(CvDeviceBuffer *b, const char *src, void *dst, size_t n)
{
    CvDevice *d = b->device;
    int previous = cv_device_enter(d);
    CvStatus s = cv_device_buffer_wait(b, 0);
    if (!s)
        s = d->methods->copy_out(d, dst, src, n);
    cv_device_leave(d, previous);
    return s;
}

/* ------------------------------------------------------------ staging cache */

typedef struct StagingBlock {
    const CvDeviceMethods *methods; /* of the kind that allocated it: frees it */
    CvDeviceKind kind;
    int index;
    void *ptr;
    size_t size;
    struct StagingBlock *next;
} StagingBlock;

static pthread_mutex_t staging_mu = PTHREAD_MUTEX_INITIALIZER; /* guards all below */
static StagingBlock *staging_cache;
static size_t staging_bytes;
static uint64_t staging_hits, staging_misses;
static pthread_once_t staging_once = PTHREAD_ONCE_INIT;

static void staging_after_fork(void)
{
    pthread_mutex_init(&staging_mu, NULL);
    staging_cache = NULL; /* the parent's pinned blocks: not ours to free or reuse */
    staging_bytes = 0;
}

static void staging_install(void)
{
    pthread_atfork(NULL, NULL, staging_after_fork);
}

/* Free a list taken out of the cache (outside staging_mu: cudaFreeHost waits
 * for the device). */
static void free_staging(StagingBlock *b)
{
    while (b) {
        StagingBlock *next = b->next;
        b->methods->host_free(NULL, b->ptr);
        free(b);
        b = next;
    }
}

CvStatus cv_device_staging_take(CvDevice *d, size_t n, void **p)
{
    pthread_once(&staging_once, staging_install);
    pthread_mutex_lock(&staging_mu);
    StagingBlock **link = &staging_cache;
    while (*link && !((*link)->kind == d->kind && (*link)->index == d->index && (*link)->size == n))
        link = &(*link)->next;
    StagingBlock *found = *link;
    if (found) {
        *link = found->next;
        staging_bytes -= n;
        staging_hits++;
    } else {
        staging_misses++;
    }
    pthread_mutex_unlock(&staging_mu);
    if (!found)
        return d->methods->host_alloc(d, n, p);
    *p = found->ptr;
    free(found);
    return CV_STATUS_OK;
}

void cv_device_staging_give(CvDevice *d, void *p, size_t capacity)
{
    if (!p)
        return;
    pthread_once(&staging_once, staging_install);
    StagingBlock *b = malloc(sizeof(*b)), *evicted = NULL;
    if (!b || capacity > CV_STAGING_CACHE_BYTES) {
        free(b);
        d->methods->host_free(d, p);
        return;
    }
    *b = (StagingBlock){d->methods, d->kind, d->index, p, capacity, NULL};
    pthread_mutex_lock(&staging_mu);
    b->next = staging_cache; /* newest first */
    staging_cache = b;
    staging_bytes += capacity;
    if (staging_bytes > CV_STAGING_CACHE_BYTES) { /* the oldest go: cut the list where it fits */
        size_t kept = 0;
        StagingBlock **link = &staging_cache;
        while (kept + (*link)->size <= CV_STAGING_CACHE_BYTES) {
            kept += (*link)->size;
            link = &(*link)->next;
        }
        evicted = *link;
        *link = NULL;
        staging_bytes = kept;
    }
    pthread_mutex_unlock(&staging_mu);
    free_staging(evicted);
}

size_t cv_device_staging_trim(void)
{
    pthread_once(&staging_once, staging_install);
    pthread_mutex_lock(&staging_mu);
    StagingBlock *all = staging_cache;
    size_t bytes = staging_bytes;
    staging_cache = NULL;
    staging_bytes = 0;
    pthread_mutex_unlock(&staging_mu);
    free_staging(all);
    return bytes;
}

CvStagingStats cv_device_staging_stats(void)
{
    pthread_once(&staging_once, staging_install);
    pthread_mutex_lock(&staging_mu);
    CvStagingStats st = {staging_hits, staging_misses, staging_bytes, 0};
    for (StagingBlock *b = staging_cache; b; b = b->next)
        st.cached_blocks++;
    pthread_mutex_unlock(&staging_mu);
    return st;
}

#define STAGING_FIELD(name, kind) {#name, kind, offsetof(CvStagingStats, name)}
static const CvField staging_fields[] = {
    STAGING_FIELD(hits, CV_FIELD_U64),           STAGING_FIELD(misses, CV_FIELD_U64),
    STAGING_FIELD(cached_bytes, CV_FIELD_SIZE),  STAGING_FIELD(cached_blocks, CV_FIELD_SIZE),
    {NULL, CV_FIELD_INT, 0},
};

CvStatus cv_device_staging_report(CvReport *r)
{
    CvStagingStats stats = cv_device_staging_stats();
    cv_report_fields(r, &stats, staging_fields);
    return r->failed ? cv_error_nomem() : CV_STATUS_OK;
}

/* ------------------------------------------------------------ bandwidth */

CvStatus cv_device_copy_rate(CvDevice *d, size_t n, int repeats, double *rate)
{
    void *host = NULL, *start = NULL, *end = NULL;
    CvDeviceBlock *block = NULL;
    *rate = 0.0;
    int previous = cv_device_enter(d);
    CvStatus s = d->methods->host_alloc(d, n, &host);
    if (!s)
        s = cv_device_block_alloc(d, n, &block);
    if (!s)
        s = d->methods->event_new(d, true, &start);
    if (!s)
        s = d->methods->event_new(d, true, &end);
    if (!s) {
        memset(host, 1, n); /* touch the pages once */
        s = d->methods->copy_in(d, block->ptr, host, n);
    }
    if (!s)
        s = d->methods->record(d, start, NULL);
    int64_t t0 = cv_now_ns();
    for (int i = 0; i < repeats && !s; i++)
        s = d->methods->copy_in(d, block->ptr, host, n);
    if (!s)
        s = d->methods->record(d, end, NULL);
    if (!s)
        s = d->methods->sync(d, end);
    if (!s) {
        double seconds = d->kind == CV_DEVICE_CUDA ? d->methods->elapsed_ms(d, start, end) / 1e3
                                                   : (double)(cv_now_ns() - t0) / 1e9;
        *rate = seconds > 0 ? (double)n * repeats / seconds : 0.0;
    }
    d->methods->event_free(d, start);
    d->methods->event_free(d, end);
    if (block)
        block_free(d, block);
    if (host)
        d->methods->host_free(d, host);
    cv_device_leave(d, previous);
    return s;
}

CvStatus cv_device_measure_copy_rate(CvDeviceKind kind, int index, size_t n, int repeats,
                                     double *rate)
{
    CvDevice *d = NULL;
    *rate = 0.0;
    CvStatus s = cv_device_open(kind, index, &d);
    if (!s)
        s = cv_device_copy_rate(d, n, repeats, rate);
    cv_device_unref(d);
    return s;
}
