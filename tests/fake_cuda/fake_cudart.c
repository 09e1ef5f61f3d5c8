/* A fake CUDA runtime: a test double for libcudart's C ABI, on host memory.
 *
 * It implements the functions csrc/device/cuda.c resolves with dlsym (the
 * `symbols` table there; prototypes as CvCudaApi in cuda.h, which are the
 * toolkit's), so tests can run conveyor's CUDA code path (copy stream,
 * events, the block cache, DLPack / __cuda_array_interface__ on kDLCUDA)
 * on a machine without a GPU: point CONVEYOR_CUDART at the built .so.
 * It checks how the runtime is used, not what a GPU does: it is no
 * substitute for a real device. The real GPU check is
 * benchmarks/gpu_check.py.
 *
 * What it models:
 *   - devices: FAKE_CUDA_DEVICES (default 1, or FAKE_DEFAULT_DEVICES at
 *     build time; 0: cudaGetDeviceCount fails with
 *     cudaErrorNoDevice, as the runtime does; -1: it succeeds with a count of
 *     0). cudaSetDevice checks the range; the current device is per thread
 *     (default 0), as in the runtime (cudaGetDevice).
 *   - memory: cudaMalloc and cudaHostAlloc are malloc (registered, so a free
 *     of anything else is an error); FAKE_CUDA_MALLOC_LIMIT caps the device
 *     bytes of each device (cudaErrorMemoryAllocation beyond it). cudaFree and
 *     cudaFreeHost wait for every stream first (as the runtime's implicit
 *     synchronization does).
 *   - streams: each created stream has a worker thread that runs its work in
 *     order (copies, event records, waits on other streams' events), so work
 *     really is asynchronous: a caller that reads or reuses memory without
 *     waiting on the right event sees stale data. FAKE_CUDA_DELAY_US: each
 *     copy takes that long on its stream. FAKE_CUDA_SYNC=1: every call runs
 *     its work at once on the caller's thread. Handles 0/1 (legacy default)
 *     and 2 (per-thread default) are streams of the current device.
 *   - events: recorded on a stream, complete when the stream reaches them;
 *     cudaEventQuery returns cudaErrorNotReady (600) until then;
 *     cudaEventElapsedTime from the host clock at which the stream reached
 *     them.
 *
 * What it checks, as counters (fake_cuda_counts / fake_cuda_count_names):
 * a free of memory it did not allocate or freed already, a copy outside a
 * device allocation, a host-to-device copy from memory that is not
 * page-locked (conveyor promises a pinned staging ring), a stale or unknown
 * stream or event handle, an event recorded on another device's stream, an
 * out-of-range cudaSetDevice; plus what is live (device blocks and bytes,
 * pinned blocks, events, streams). fake_cuda_log returns the stream handles
 * of the latest cudaStreamWaitEvent / cudaEventRecord calls, as passed.
 * Read them with ctypes.CDLL on the same path: the loader returns the
 * object conveyor loaded.
 *
 * Host copies into pinned memory: with the fake also in LD_PRELOAD (so its
 * memcpy is the process's) and FAKE_CUDA_COUNT_MEMCPY=<bytes>, every
 * memcpy of at least that many bytes from host memory into pinned memory
 * (a copy within pinned memory, as a fill by doubling, is not) is counted (host_memcpys_pinned, host_memcpy_pinned_bytes): a
 * batch packed into a staging slot is one such memcpy per component, a
 * batch built in place has only row-sized ones. A sanitizer's runtime,
 * preloaded first, keeps its own memcpy: nothing is counted then.
 *
 * Built by tests/_fake_cuda.py (gcc -shared -fPIC -pthread).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#ifndef FAKE_DEFAULT_DEVICES /* a build for a machine without a device: -DFAKE_DEFAULT_DEVICES=0 */
#define FAKE_DEFAULT_DEVICES 1
#endif

typedef int cudaError_t;
enum {
    SUCCESS = 0,
    INVALID_VALUE = 1,
    MEMORY_ALLOCATION = 2,
    INVALID_DEVICE = 101,
    NO_DEVICE = 100,
    INVALID_RESOURCE_HANDLE = 400,
    NOT_READY = 600,
};
enum { HOST_TO_DEVICE = 1, DEVICE_TO_HOST = 2 };
#define EVENT_DISABLE_TIMING 2u
#define MAX_DEVICES 16
#define STREAM_MAGIC 0x5354524dU
#define EVENT_MAGIC 0x4556454eU

/* ------------------------------------------------------------ counters */

#define COUNTERS(X)                                                                            \
    X(device_allocs) X(device_bytes) X(host_allocs) X(host_bytes) X(events) X(streams)         \
    X(mallocs) X(host_alloc_calls) X(copies_h2d) X(copies_d2h) X(bytes_h2d) X(bytes_d2h)      \
    X(stream_waits) X(event_records) X(event_queries_not_ready) X(event_syncs)                 \
    X(stream_syncs) X(set_device_calls) X(oom) X(bad_frees) X(bad_copies)                      \
    X(pageable_copies) X(bad_handles) X(cross_device) X(bad_set_device)                       \
    X(host_memcpys_pinned) X(host_memcpy_pinned_bytes)
#define ENUM(name) C_##name,
enum { COUNTERS(ENUM) NCOUNTERS };
#define NAME(name) #name ","
static const char count_names[] = COUNTERS(NAME);
static atomic_llong counts[NCOUNTERS];

static void count(int which, long long n)
{
    atomic_fetch_add(&counts[which], n);
}

EXPORT const char *fake_cuda_count_names(void)
{
    return count_names;
}

/* Copies up to n counters into out; returns how many there are. */
EXPORT int fake_cuda_counts(long long *out, int n)
{
    for (int i = 0; i < n && i < NCOUNTERS; i++)
        out[i] = atomic_load(&counts[i]);
    return NCOUNTERS;
}

#define LOG_SIZE 4096
typedef struct {
    pthread_mutex_t mu;
    uintptr_t handles[LOG_SIZE];
    long long total;
} Log;
static Log logs[2] = {{PTHREAD_MUTEX_INITIALIZER, {0}, 0}, {PTHREAD_MUTEX_INITIALIZER, {0}, 0}};

static void log_handle(int which, uintptr_t h)
{
    pthread_mutex_lock(&logs[which].mu);
    logs[which].handles[logs[which].total % LOG_SIZE] = h;
    logs[which].total++;
    pthread_mutex_unlock(&logs[which].mu);
}

/* which 0: cudaStreamWaitEvent, 1: cudaEventRecord. The stream handles of
 * the latest calls (up to n, oldest first) into out; returns how many. */
EXPORT int fake_cuda_log(int which, unsigned long long *out, int n)
{
    if (which < 0 || which > 1)
        return -1;
    Log *l = &logs[which];
    pthread_mutex_lock(&l->mu);
    long long have = l->total < LOG_SIZE ? l->total : LOG_SIZE;
    if (n > have)
        n = (int)have;
    for (int i = 0; i < n; i++)
        out[i] = l->handles[(l->total - n + i) % LOG_SIZE];
    pthread_mutex_unlock(&l->mu);
    return n;
}

EXPORT void fake_cuda_clear_logs(void)
{
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&logs[i].mu);
        logs[i].total = 0;
        pthread_mutex_unlock(&logs[i].mu);
    }
}

/* ------------------------------------------------------------ settings */

static pthread_once_t settings_once = PTHREAD_ONCE_INIT;
static int ndevices = 1;
static long delay_us;
static bool synchronous;
static long long malloc_limit = -1;

static long long env_ll(const char *name, long long fallback)
{
    const char *v = getenv(name);
    return v && *v ? strtoll(v, NULL, 10) : fallback;
}

static void read_settings(void)
{
    ndevices = (int)env_ll("FAKE_CUDA_DEVICES", FAKE_DEFAULT_DEVICES);
    if (ndevices > MAX_DEVICES)
        ndevices = MAX_DEVICES;
    delay_us = (long)env_ll("FAKE_CUDA_DELAY_US", 0);
    synchronous = env_ll("FAKE_CUDA_SYNC", 0) != 0;
    malloc_limit = env_ll("FAKE_CUDA_MALLOC_LIMIT", -1);
}

static void settings(void)
{
    pthread_once(&settings_once, read_settings);
}

static _Thread_local int current_device;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------ allocations */

typedef struct Alloc {
    char *ptr;
    size_t size;
    int device; /* -1: pinned host memory */
    struct Alloc *next;
} Alloc;

static pthread_mutex_t alloc_mu = PTHREAD_MUTEX_INITIALIZER;
static Alloc *allocs;
static long long device_used[MAX_DEVICES];

/* alloc_mu held: the allocation of kind (device >= 0, or -1 pinned) holding [p, p+n). */
static Alloc *find_range(const void *p, size_t n, bool device)
{
    for (Alloc *a = allocs; a; a = a->next)
        if ((a->device >= 0) == device && (const char *)p >= a->ptr &&
            (const char *)p + n <= a->ptr + a->size)
            return a;
    return NULL;
}

static long long memcpy_min = -1; /* FAKE_CUDA_COUNT_MEMCPY; -1: not counted */

__attribute__((constructor)) static void read_memcpy_min(void)
{
    const char *v = getenv("FAKE_CUDA_COUNT_MEMCPY");
    memcpy_min = v && *v ? atoll(v) : -1;
}

/* The process's memcpy when the fake is preloaded; the fake never calls
 * memcpy with alloc_mu held. */
EXPORT void *memcpy(void *dst, const void *src, size_t n)
{
    if (memcpy_min >= 0 && (long long)n >= memcpy_min) {
        pthread_mutex_lock(&alloc_mu);
        bool pinned = find_range(dst, n, false) != NULL && !find_range(src, n, false);
        pthread_mutex_unlock(&alloc_mu);
        if (pinned) {
            count(C_host_memcpys_pinned, 1);
            count(C_host_memcpy_pinned_bytes, (long long)n);
        }
    }
    return memmove(dst, src, n);
}

static cudaError_t do_alloc(void **out, size_t size, int device)
{
    settings();
    if (!out)
        return INVALID_VALUE;
    pthread_mutex_lock(&alloc_mu);
    if (device >= 0 && malloc_limit >= 0 && device_used[device] + (long long)size > malloc_limit) {
        pthread_mutex_unlock(&alloc_mu);
        count(C_oom, 1);
        *out = NULL;
        return MEMORY_ALLOCATION;
    }
    Alloc *a = malloc(sizeof(*a));
    char *p = malloc(size ? size : 1);
    if (!a || !p) {
        pthread_mutex_unlock(&alloc_mu);
        free(a);
        free(p);
        return MEMORY_ALLOCATION;
    }
    /* Device memory is not zeroed: garbage shows a read before the copy. */
    memset(p, device >= 0 ? 0xA5 : 0x5A, size);
    *a = (Alloc){p, size, device, allocs};
    allocs = a;
    if (device >= 0)
        device_used[device] += (long long)size;
    pthread_mutex_unlock(&alloc_mu);
    count(device >= 0 ? C_device_allocs : C_host_allocs, 1);
    count(device >= 0 ? C_device_bytes : C_host_bytes, (long long)size);
    *out = p;
    return SUCCESS;
}

static void synchronize_all(void);

static cudaError_t do_free(void *p, bool device)
{
    if (!p)
        return SUCCESS;
    synchronize_all(); /* as cudaFree / cudaFreeHost do */
    pthread_mutex_lock(&alloc_mu);
    for (Alloc **link = &allocs; *link; link = &(*link)->next) {
        Alloc *a = *link;
        if (a->ptr == p && (a->device >= 0) == device) {
            *link = a->next;
            if (device)
                device_used[a->device] -= (long long)a->size;
            pthread_mutex_unlock(&alloc_mu);
            count(device ? C_device_allocs : C_host_allocs, -1);
            count(device ? C_device_bytes : C_host_bytes, -(long long)a->size);
            memset(a->ptr, 0xDD, a->size); /* a use after free reads garbage */
            free(a->ptr);
            free(a);
            return SUCCESS;
        }
    }
    pthread_mutex_unlock(&alloc_mu);
    count(C_bad_frees, 1);
    return INVALID_VALUE;
}

/* ------------------------------------------------------------ streams and events */

typedef struct Stream Stream;

typedef struct Event {
    unsigned magic;
    bool destroyed;
    bool timing;
    int device;
    Stream *stream; /* of the last record, NULL if never recorded */
    uint64_t target;
    _Atomic int64_t at_ns; /* when its stream reached the record */
} Event;

typedef enum { OP_COPY, OP_RECORD, OP_WAIT } OpKind;

typedef struct Op {
    OpKind kind;
    void *dst;
    const void *src;
    size_t n;
    Event *event;   /* OP_RECORD */
    Stream *other;  /* OP_WAIT: until other->completed >= target */
    uint64_t target;
    struct Op *next;
} Op;

struct Stream {
    unsigned magic;
    int device;
    bool builtin, destroyed, stopping;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* work queued, or work completed */
    Op *head, *tail;
    uint64_t enqueued, completed;
    Stream *next_stream; /* the registry */
};

/* Every stream ever made (never freed: a stale handle stays readable). */
static pthread_mutex_t streams_mu = PTHREAD_MUTEX_INITIALIZER;
static Stream *all_streams;
static Stream *legacy[MAX_DEVICES], *per_thread[MAX_DEVICES];

static void run_op(Op *op)
{
    switch (op->kind) {
    case OP_COPY:
        if (delay_us > 0)
            usleep((useconds_t)delay_us);
        memcpy(op->dst, op->src, op->n);
        break;
    case OP_RECORD:
        atomic_store(&op->event->at_ns, now_ns());
        break;
    case OP_WAIT:
        pthread_mutex_lock(&op->other->mu);
        while (op->other->completed < op->target)
            pthread_cond_wait(&op->other->cond, &op->other->mu);
        pthread_mutex_unlock(&op->other->mu);
        break;
    }
}

static void *stream_worker(void *arg)
{
    Stream *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stopping)
            pthread_cond_wait(&s->cond, &s->mu);
        if (!s->head)
            break; /* stopping, and drained */
        Op *op = s->head;
        pthread_mutex_unlock(&s->mu);
        run_op(op);
        pthread_mutex_lock(&s->mu);
        s->head = op->next;
        if (!s->head)
            s->tail = NULL;
        s->completed++;
        pthread_cond_broadcast(&s->cond);
        free(op);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static Stream *stream_new(int device, bool builtin)
{
    Stream *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->magic = STREAM_MAGIC;
    s->device = device;
    s->builtin = builtin;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (!synchronous) {
        pthread_t thread;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* Signals stay with the process's other threads. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&thread, &attr, stream_worker, s);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            free(s);
            return NULL;
        }
    }
    pthread_mutex_lock(&streams_mu);
    s->next_stream = all_streams;
    all_streams = s;
    pthread_mutex_unlock(&streams_mu);
    return s;
}

/* The stream a handle names (0/1 and 2: the current device's default
 * streams), or NULL (counted) for a handle that is not a live stream. */
static Stream *resolve(void *handle)
{
    settings();
    uintptr_t h = (uintptr_t)handle;
    if (h <= 2) {
        int dev = current_device;
        Stream **slot = h == 2 ? &per_thread[dev] : &legacy[dev];
        pthread_mutex_lock(&streams_mu);
        Stream *s = *slot;
        pthread_mutex_unlock(&streams_mu);
        if (!s) {
            Stream *made = stream_new(dev, true);
            pthread_mutex_lock(&streams_mu);
            if (!*slot)
                *slot = made;
            else
                made = NULL; /* lost a race: a stray builtin stream, harmless */
            s = *slot;
            pthread_mutex_unlock(&streams_mu);
        }
        return s;
    }
    pthread_mutex_lock(&streams_mu);
    Stream *found = NULL;
    for (Stream *s = all_streams; s; s = s->next_stream)
        if ((void *)s == handle && !s->destroyed)
            found = s;
    pthread_mutex_unlock(&streams_mu);
    if (!found)
        count(C_bad_handles, 1);
    return found;
}

static Event *event_of(void *handle)
{
    Event *e = handle;
    if (!e || e->magic != EVENT_MAGIC || e->destroyed) {
        count(C_bad_handles, 1);
        return NULL;
    }
    return e;
}

/* Queue op on s (or run it now); returns its sequence number. */
static uint64_t enqueue(Stream *s, Op *op)
{
    pthread_mutex_lock(&s->mu);
    uint64_t seq = ++s->enqueued;
    if (op->kind == OP_RECORD) { /* complete when the stream gets here */
        op->event->stream = s;
        op->event->target = seq;
        atomic_store(&op->event->at_ns, 0);
    }
    if (synchronous) {
        pthread_mutex_unlock(&s->mu);
        run_op(op);
        free(op);
        pthread_mutex_lock(&s->mu);
        s->completed++;
        pthread_cond_broadcast(&s->cond);
    } else {
        op->next = NULL;
        if (s->tail)
            s->tail->next = op;
        else
            s->head = op;
        s->tail = op;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->mu);
    return seq;
}

static void stream_wait_idle(Stream *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t target = s->enqueued;
    while (s->completed < target)
        pthread_cond_wait(&s->cond, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

static void synchronize_all(void)
{
    pthread_mutex_lock(&streams_mu);
    Stream *first = all_streams;
    pthread_mutex_unlock(&streams_mu);
    for (Stream *s = first; s; s = s->next_stream) /* the list only grows at its head */
        stream_wait_idle(s);
}

static bool event_complete(Event *e)
{
    if (!e->stream)
        return true;
    pthread_mutex_lock(&e->stream->mu);
    bool done = e->stream->completed >= e->target;
    pthread_mutex_unlock(&e->stream->mu);
    return done;
}

/* ------------------------------------------------------------ the API */

EXPORT cudaError_t cudaGetDeviceCount(int *n)
{
    settings();
    if (!n)
        return INVALID_VALUE;
    *n = 0;
    if (ndevices < 0)
        return SUCCESS;
    if (ndevices == 0)
        return NO_DEVICE;
    *n = ndevices;
    return SUCCESS;
}

EXPORT cudaError_t cudaSetDevice(int device)
{
    settings();
    count(C_set_device_calls, 1);
    if (device < 0 || device >= ndevices) {
        count(C_bad_set_device, 1);
        return INVALID_DEVICE;
    }
    current_device = device;
    return SUCCESS;
}

EXPORT cudaError_t cudaGetDevice(int *device)
{
    settings();
    if (!device)
        return INVALID_VALUE;
    *device = current_device;
    return SUCCESS;
}

/* For benchmarks/gpu_env.py's CudaRuntime (gpu_check on the fake): the
 * current device's bytes in use, of FAKE_CUDA_MALLOC_LIMIT or 80 GiB. */
EXPORT cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    settings();
    if (!free_bytes || !total_bytes)
        return INVALID_VALUE;
    long long total = malloc_limit >= 0 ? malloc_limit : 80LL << 30;
    pthread_mutex_lock(&alloc_mu);
    long long used = device_used[current_device];
    pthread_mutex_unlock(&alloc_mu);
    *total_bytes = (size_t)total;
    *free_bytes = (size_t)(total > used ? total - used : 0);
    return SUCCESS;
}

EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    synchronize_all(); /* every stream: the fake does not tell devices apart here */
    return SUCCESS;
}

EXPORT cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
    (void)flags;
    count(C_host_alloc_calls, 1);
    return do_alloc(p, size, -1);
}

EXPORT cudaError_t cudaFreeHost(void *p)
{
    return do_free(p, false);
}

EXPORT cudaError_t cudaMalloc(void **p, size_t size)
{
    count(C_mallocs, 1);
    return do_alloc(p, size, current_device);
}

EXPORT cudaError_t cudaFree(void *p)
{
    return do_free(p, true);
}

EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream)
{
    Stream *s = resolve(stream);
    if (!s)
        return INVALID_RESOURCE_HANDLE;
    if (n == 0)
        return SUCCESS;
    pthread_mutex_lock(&alloc_mu);
    Alloc *dev = NULL;
    bool ok = false, pinned = true;
    if (kind == HOST_TO_DEVICE) {
        dev = find_range(dst, n, true);
        pinned = find_range(src, n, false) != NULL;
        ok = dev != NULL;
    } else if (kind == DEVICE_TO_HOST) {
        dev = find_range(src, n, true);
        ok = dev != NULL;
    }
    int dev_index = dev ? dev->device : -1;
    pthread_mutex_unlock(&alloc_mu);
    if (!ok) {
        count(C_bad_copies, 1);
        return INVALID_VALUE;
    }
    if (!pinned)
        count(C_pageable_copies, 1);
    if (dev_index != s->device)
        count(C_cross_device, 1);
    count(kind == HOST_TO_DEVICE ? C_copies_h2d : C_copies_d2h, 1);
    count(kind == HOST_TO_DEVICE ? C_bytes_h2d : C_bytes_d2h, (long long)n);
    Op *op = calloc(1, sizeof(*op));
    if (!op)
        return MEMORY_ALLOCATION;
    op->kind = OP_COPY;
    op->dst = dst;
    op->src = src;
    op->n = n;
    enqueue(s, op);
    return SUCCESS;
}

EXPORT cudaError_t cudaStreamCreateWithFlags(void **out, unsigned int flags)
{
    (void)flags;
    settings();
    if (!out)
        return INVALID_VALUE;
    Stream *s = stream_new(current_device, false);
    if (!s)
        return MEMORY_ALLOCATION;
    count(C_streams, 1);
    *out = s;
    return SUCCESS;
}

EXPORT cudaError_t cudaStreamDestroy(void *stream)
{
    if ((uintptr_t)stream <= 2) {
        count(C_bad_handles, 1);
        return INVALID_RESOURCE_HANDLE;
    }
    Stream *s = resolve(stream);
    if (!s)
        return INVALID_RESOURCE_HANDLE;
    count(C_streams, -1);
    pthread_mutex_lock(&s->mu);
    s->destroyed = true; /* its work still completes, then its worker ends */
    s->stopping = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    return SUCCESS;
}

EXPORT cudaError_t cudaStreamSynchronize(void *stream)
{
    Stream *s = resolve(stream);
    if (!s)
        return INVALID_RESOURCE_HANDLE;
    count(C_stream_syncs, 1);
    stream_wait_idle(s);
    return SUCCESS;
}

EXPORT cudaError_t cudaStreamWaitEvent(void *stream, void *event, unsigned int flags)
{
    (void)flags;
    Stream *s = resolve(stream);
    Event *e = event_of(event);
    if (!s || !e)
        return INVALID_RESOURCE_HANDLE;
    count(C_stream_waits, 1);
    log_handle(0, (uintptr_t)stream);
    if (!e->stream)
        return SUCCESS; /* never recorded: nothing to wait for */
    Op *op = calloc(1, sizeof(*op));
    if (!op)
        return MEMORY_ALLOCATION;
    op->kind = OP_WAIT;
    op->other = e->stream;
    op->target = e->target;
    enqueue(s, op);
    return SUCCESS;
}

EXPORT cudaError_t cudaEventCreateWithFlags(void **out, unsigned int flags)
{
    settings();
    if (!out)
        return INVALID_VALUE;
    Event *e = calloc(1, sizeof(*e)); /* never freed: a stale handle stays readable */
    if (!e)
        return MEMORY_ALLOCATION;
    e->magic = EVENT_MAGIC;
    e->timing = !(flags & EVENT_DISABLE_TIMING);
    e->device = current_device;
    count(C_events, 1);
    *out = e;
    return SUCCESS;
}

EXPORT cudaError_t cudaEventDestroy(void *event)
{
    Event *e = event_of(event);
    if (!e)
        return INVALID_RESOURCE_HANDLE;
    e->destroyed = true;
    count(C_events, -1);
    return SUCCESS;
}

EXPORT cudaError_t cudaEventRecord(void *event, void *stream)
{
    Stream *s = resolve(stream);
    Event *e = event_of(event);
    if (!s || !e)
        return INVALID_RESOURCE_HANDLE;
    if (e->device != s->device) { /* the runtime refuses this */
        count(C_cross_device, 1);
        return INVALID_RESOURCE_HANDLE;
    }
    count(C_event_records, 1);
    log_handle(1, (uintptr_t)stream);
    Op *op = calloc(1, sizeof(*op));
    if (!op)
        return MEMORY_ALLOCATION;
    op->kind = OP_RECORD;
    op->event = e;
    enqueue(s, op);
    return SUCCESS;
}

EXPORT cudaError_t cudaEventQuery(void *event)
{
    Event *e = event_of(event);
    if (!e)
        return INVALID_RESOURCE_HANDLE;
    if (event_complete(e))
        return SUCCESS;
    count(C_event_queries_not_ready, 1);
    return NOT_READY;
}

EXPORT cudaError_t cudaEventSynchronize(void *event)
{
    Event *e = event_of(event);
    if (!e)
        return INVALID_RESOURCE_HANDLE;
    count(C_event_syncs, 1);
    if (!e->stream)
        return SUCCESS;
    pthread_mutex_lock(&e->stream->mu);
    while (e->stream->completed < e->target)
        pthread_cond_wait(&e->stream->cond, &e->stream->mu);
    pthread_mutex_unlock(&e->stream->mu);
    return SUCCESS;
}

EXPORT cudaError_t cudaEventElapsedTime(float *ms, void *start, void *end)
{
    Event *a = event_of(start), *b = event_of(end);
    if (!ms || !a || !b)
        return INVALID_RESOURCE_HANDLE;
    if (!a->timing || !b->timing || !a->stream || !b->stream)
        return INVALID_RESOURCE_HANDLE;
    if (!event_complete(a) || !event_complete(b))
        return NOT_READY;
    *ms = (float)((double)(atomic_load(&b->at_ns) - atomic_load(&a->at_ns)) / 1e6);
    return SUCCESS;
}

EXPORT const char *cudaGetErrorName(cudaError_t err)
{
    switch (err) {
    case SUCCESS: return "cudaSuccess";
    case INVALID_VALUE: return "cudaErrorInvalidValue";
    case MEMORY_ALLOCATION: return "cudaErrorMemoryAllocation";
    case NO_DEVICE: return "cudaErrorNoDevice";
    case INVALID_DEVICE: return "cudaErrorInvalidDevice";
    case INVALID_RESOURCE_HANDLE: return "cudaErrorInvalidResourceHandle";
    case NOT_READY: return "cudaErrorNotReady";
    default: return "cudaErrorUnknown";
    }
}

EXPORT const char *cudaGetErrorString(cudaError_t err)
{
    switch (err) {
    case SUCCESS: return "no error";
    case INVALID_VALUE: return "invalid argument";
    case MEMORY_ALLOCATION: return "out of memory";
    case NO_DEVICE: return "no CUDA-capable device is detected";
    case INVALID_DEVICE: return "invalid device ordinal";
    case INVALID_RESOURCE_HANDLE: return "invalid resource handle";
    case NOT_READY: return "device not ready";
    default: return "unknown error";
    }
}

EXPORT cudaError_t cudaRuntimeGetVersion(int *v)
{
    if (!v)
        return INVALID_VALUE;
    *v = 12040;
    return SUCCESS;
}

EXPORT cudaError_t cudaDriverGetVersion(int *v)
{
    if (!v)
        return INVALID_VALUE;
    *v = 12050;
    return SUCCESS;
}
