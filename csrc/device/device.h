/* Devices: where prefetch_to_device puts elements.
 *
 * DESIGN
 * A CvDevice is one target (cuda:N, or the host itself) with what copying
 * to it needs: its methods (CvDeviceMethods, one const table per kind, as
 * SQLite's VFS), a copy stream, and a small caching allocator of device
 * blocks. It is reference counted: the prefetch_to_device iterator holds
 * one, and so does every device buffer it handed out, so buffers a training
 * loop keeps after the iterator is gone still free into a live allocator.
 *
 * A device buffer (CvDeviceBuffer) is a CvBuffer whose memory is on the
 * device: one per element, holding all its numeric components (each tensor
 * views it at an offset), with the event its copy recorded. Tell one from a
 * host buffer with cv_device_buffer_of(). Host code must never read its
 * memory: only the binding (DLPack, __cuda_array_interface__, numpy())
 * touches it, through the methods below.
 *
 * Lifetimes and streams: the copy that fills a buffer runs on the device's
 * copy stream and records `ready`; a consumer's stream waits on `ready`
 * (cv_device_buffer_wait), never the whole device. When the last reference
 * drops (any thread), the block goes back to the cache with an event
 * recorded on the stream the consumer said it uses (the DLPack stream;
 * the legacy default stream when it did not say), and the copy stream waits
 * on that event before it writes the block again: work the consumer queued
 * on the buffer finishes first, without a host-side sync.
 *
 * The host kind ("cpu") runs the same code with malloc and memcpy: events
 * are complete at once. It makes the device path testable without a GPU,
 * and yields elements on kDLCPU.
 *
 * Threads: the methods run with the device current on the calling thread
 * (cv_device_enter / cv_device_leave around them, which put the thread's
 * previous device back). All functions may be called from any thread; the cache is
 * guarded by the device's mutex, counters are atomics.
 */
#ifndef CV_DEVICE_DEVICE_H
#define CV_DEVICE_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "core/tensor.h"

typedef enum CvDeviceKind { CV_DEVICE_CPU = 0, CV_DEVICE_CUDA = 1 } CvDeviceKind;

/* DLPack's device types (dlpack.h's DLDeviceType). */
enum { CV_DLPACK_CPU = 1, CV_DLPACK_CUDA = 2 };

typedef struct CvDevice CvDevice;

typedef struct CvDeviceMethods {
    const char *name; /* "cpu", "cuda" */
    int dlpack_type;
    CvStatus (*open)(CvDevice *d);  /* check the index, make the copy stream */
    void (*close)(CvDevice *d);
    CvStatus (*host_alloc)(CvDevice *d, size_t n, void **p); /* page-locked (pinned) */
    void (*host_free)(CvDevice *d, void *p); /* d may be NULL: no device is needed */
    CvStatus (*alloc)(CvDevice *d, size_t n, void **p);
    void (*free)(CvDevice *d, void *p);
    /* n bytes host -> device, asynchronous on the copy stream. */
    CvStatus (*copy_in)(CvDevice *d, void *dst, const void *src, size_t n);
    /* n bytes device -> host, on the copy stream, complete on return. */
    CvStatus (*copy_out)(CvDevice *d, void *dst, const void *src, size_t n);
    CvStatus (*event_new)(CvDevice *d, bool timing, void **ev);
    void (*event_free)(CvDevice *d, void *ev);
    /* Record ev on `stream` (NULL: the copy stream). */
    CvStatus (*record)(CvDevice *d, void *ev, void *stream);
    CvStatus (*sync)(CvDevice *d, void *ev); /* the host waits for ev */
    bool (*done)(CvDevice *d, void *ev);     /* ev has completed (never waits) */
    CvStatus (*stream_wait)(CvDevice *d, void *stream, void *ev);
    double (*elapsed_ms)(CvDevice *d, void *start, void *end); /* both completed, timing events */
    /* Make the device current on the calling thread, returning the one
     * that was (-1: none known); leave makes that one current again. */
    int (*enter)(CvDevice *d);
    void (*leave)(CvDevice *d, int previous);
} CvDeviceMethods;

/* A free block in the cache: reusable once `freed` (an event, NULL when
 * none was needed) has completed on the device, in stream order. */
typedef struct CvDeviceBlock {
    void *ptr;
    size_t size;
    void *freed;
    struct CvDeviceBlock *next;
} CvDeviceBlock;

struct CvDevice {
    atomic_long refcount;
    const CvDeviceMethods *methods;
    CvDeviceKind kind;
    int index;
    void *stream; /* the copy stream (CUDA: non-blocking); NULL on the host */

    pthread_mutex_t mu; /* guards the cache and `retired` */
    CvDeviceBlock *cache;
    size_t cached_bytes;
    bool retired; /* its iterator is gone: blocks freed from now on go back to the runtime */

    /* Measured: bytes on the device now (handed out or cached). */
    atomic_llong device_bytes;
};

/* Most bytes of free blocks kept for reuse; more are freed at once. */
#define CV_DEVICE_CACHE_BYTES ((size_t)1 << 30)

/* Every call of a device's methods is bracketed by these (they nest): the
 * runtime's current device is per thread, and the calling thread may be
 * the user's, whose framework has its own current device to keep. */
int cv_device_enter(CvDevice *d);
void cv_device_leave(CvDevice *d, int previous);

/* A device with one reference (kind, index: cuda:index). For CUDA the
 * runtime must load and the index exist (cv_cuda_check_device's errors). */
CvStatus cv_device_open(CvDeviceKind kind, int index, CvDevice **out);
CvDevice *cv_device_ref(CvDevice *d);
void cv_device_unref(CvDevice *d); /* NULL-safe; the last frees the cache */
/* Its owner (the iterator) is gone: free the cached blocks now, and free
 * blocks released later instead of caching them, so that an array a
 * training loop keeps does not pin a whole cache nobody will reuse (each
 * iterator has a device, with a cache, of its own). */
void cv_device_retire(CvDevice *d);

/* A device block of at least n bytes, from the cache when one fits (the
 * copy stream then waits for its last user), else freshly allocated (on
 * out of memory the cache is emptied and the allocation tried again). */
CvStatus cv_device_block_alloc(CvDevice *d, size_t n, CvDeviceBlock **out);

typedef struct CvDeviceBuffer {
    CvBuffer base;  /* base.data: device memory; base.release frees into the cache */
    CvDevice *device; /* one reference */
    CvDeviceBlock *block;
    void *ready;    /* event recorded after the copy that filled it (owned) */
    /* The stream the consumer uses the memory on (a DLPack stream
     * argument), for the event recorded when the buffer is freed; 0: the
     * legacy default stream. Any thread may set it. */
    atomic_uintptr_t consumer_stream;
} CvDeviceBuffer;

/* A device buffer over `block` (taken) with a new `ready` event, one reference. */
CvStatus cv_device_buffer_new(CvDevice *d, CvDeviceBlock *block, size_t size, CvDeviceBuffer **out);
/* b's device buffer, or NULL for host memory. */
CvDeviceBuffer *cv_device_buffer_of(const CvBuffer *b);
/* Make `stream` (a CUDA stream handle, 1/2 for the legacy / per-thread
 * default streams) wait until the buffer's copy has completed; on the host
 * a no-op. */
CvStatus cv_device_buffer_wait(CvDeviceBuffer *b, uintptr_t stream);
/* A consumer takes the buffer on `stream` (a DLPack stream argument > 0):
 * remember it, so that the free waits behind it, and make it wait for the
 * copy. Any thread. */
CvStatus cv_device_buffer_use_on(CvDeviceBuffer *b, uintptr_t stream);
/* Copy n bytes at device address src (inside b) to host memory dst, after
 * the copy that filled b. */
CvStatus cv_device_buffer_read(CvDeviceBuffer *b, const char *src, void *dst, size_t n);

/* Page-locked staging memory, kept between iterators: on an H200 machine a
 * cudaHostAlloc of one 38.5 MB batch slot took 19 ms and its cudaFreeHost
 * 6 ms (and that waits for the device), so each epoch's new iterator paid
 * about 75 ms for its ring. Given back, a block waits in a cache of its
 * device (kind and index), newest first, at most CV_STAGING_CACHE_BYTES
 * in all (past that the oldest are freed); taking n bytes reuses a cached
 * block of exactly n (slots grow in 1 MiB steps, so an epoch's ring takes
 * the blocks of the last epoch's, and the RAM budget's charge is the same).
 * Any thread. A fork child starts with an empty cache (the parent's blocks
 * stay allocated there: a bounded leak). */
#define CV_STAGING_CACHE_BYTES ((size_t)512 << 20)
/* n page-locked bytes, cached or newly allocated. */
CvStatus cv_device_staging_take(CvDevice *d, size_t n, void **p);
void cv_device_staging_give(CvDevice *d, void *p, size_t capacity); /* NULL-safe */
/* Free every cached block; returns the bytes freed. */
size_t cv_device_staging_trim(void);
typedef struct CvStagingStats {
    uint64_t hits, misses; /* takes served from the cache / allocated */
    size_t cached_bytes, cached_blocks;
} CvStagingStats;
CvStagingStats cv_device_staging_stats(void);
/* The same as a report (core/report.h): {hits, misses, cached_bytes, cached_blocks}. */
struct CvReport;
CvStatus cv_device_staging_report(struct CvReport *r);

/* Host-to-device bandwidth from page-locked memory, as the device's own
 * copies would see it: `repeats` copies of n bytes on the copy stream, timed
 * by events (after one untimed copy); bytes per second into *rate. */
CvStatus cv_device_copy_rate(CvDevice *d, size_t n, int repeats, double *rate);
/* The same on a device of its own, opened for the measure and let go. */
CvStatus cv_device_measure_copy_rate(CvDeviceKind kind, int index, size_t n, int repeats,
                                     double *rate);

#endif
