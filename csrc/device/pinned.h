/* Page-locked batches: the pool a device stage hands its input's batch
 * kernel, so batches are built where the copy engine reads them.
 *
 * DESIGN
 * Before its first next(), a device stage (prefetch_to_device.c) offers
 * its input iterator an allocator (core/dataset.h's build_outputs_in). A
 * batch kernel (batch, map+batch, shuffle+batch, padded_batch; prefetch
 * forwards it) then allocates the numeric components of its batches
 * through it: page-locked buffers (CvPinnedBuffer), from the process's
 * staging cache (device.h: cudaHostAlloc costs milliseconds, so blocks are
 * reused across epochs and iterators). The device stage copies such a
 * component straight to the device, one asynchronous copy per component,
 * with no memcpy into a staging slot, and holds the buffer until that copy
 * has completed.
 *
 * Budget: each byte is charged once. A pinned batch is an element like
 * any other: every stage that keeps it (prefetch's buffer, a parallel
 * batch's results, map+batch's rows) charges its bytes (cv_element_bytes),
 * as it would charge an ordinary batch. The pool charges only what no
 * element accounts for: the slack between a block's capacity (4 KiB or
 * 1 MiB steps) and the bytes asked for, while the block is out. Why this
 * way round: core/ram_budget.h keeps its one rule (a stage charges the
 * elements it keeps; no buffer is special), so a pipeline that fits its
 * budget with ordinary batches fits it with pinned ones, plus the slack
 * (none for batches of whole steps). A block is handed out only when the
 * budget has room for all of it at that moment (its bytes are about to be
 * charged by the stage that keeps the batch); when it has not, or
 * cudaHostAlloc fails, the allocator says no and the kernel allocates as
 * usual: that batch takes the staging path, and the device stage counts it
 * (staged_copies). A batch in transit (being built, being copied from a
 * slot of the device stage: at most workers + 1 of them) is charged by no
 * stage, as a batch the consumer holds is not.
 *
 * Lifetimes: the pool is reference counted; its owner (the device
 * iterator) holds one and every buffer out holds one, so a buffer freed
 * after its iterator is gone (on any thread) still returns its block to
 * the staging cache and its charge to the budget.
 *
 * Threads: alloc and release run on any thread (the batch kernel's
 * workers, the device stage's); counters are atomics.
 */
#ifndef CV_DEVICE_PINNED_H
#define CV_DEVICE_PINNED_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/ram_budget.h"
#include "core/tensor.h"
#include "device/device.h"

typedef struct CvPinnedPool CvPinnedPool;

/* A pool over device d's page-locked memory (one reference to d),
 * charging `memory` (one reference; NULL: the default budget). */
CvStatus cv_pinned_pool_new(CvDevice *d, CvMemory *memory, CvPinnedPool **out);
/* The owner lets go (NULL-safe); buffers still out keep the pool alive. */
void cv_pinned_pool_unref(CvPinnedPool *p);
/* The allocator to hand a batch kernel; lives as long as the pool. */
const CvBufferAllocator *cv_pinned_pool_allocator(CvPinnedPool *p);
/* Whether b is a page-locked buffer of pool p. */
bool cv_pinned_buffer_in(const CvBuffer *b, const CvPinnedPool *p);

typedef struct CvPinnedStats {
    int64_t bytes_out;   /* capacity of the buffers out now (their slack charged here) */
    int64_t buffers_out;
    uint64_t allocs;     /* buffers handed out */
    uint64_t refused;    /* requests refused (budget, cudaHostAlloc): built elsewhere */
} CvPinnedStats;
CvPinnedStats cv_pinned_pool_stats(const CvPinnedPool *p);

#endif
