/* prefetch_to_device(device, buffer_size) and copy_to_device(device):
 * elements copied to a device (cuda:N, or the host for tests), ahead of
 * the consumer.
 *
 * Each element's numeric components travel together: a turn of the stage
 * packs them into a page-locked staging slot (256-byte aligned), allocates
 * one device block for the element (device.h's cache), starts one
 * asynchronous host-to-device copy on the device's copy stream and records
 * an event after it. The element handed out views that block: its tensors
 * are device tensors, and its consumer's stream waits on the event
 * (DLPack). Strings stay on the host, in the element as they were.
 *
 * The staging ring: packing is a memcpy on the CPU, slower than the DMA
 * that follows (about 10 GB/s per thread against 25-50 GB/s over PCIe),
 * so up to `workers` turns pack at once (min(4, CPUs / 2), autotuned),
 * each into a slot of its own, while the device copies from the others:
 * workers + 1 slots. A turn claims a slot no other turn is filling,
 * preferring one whose copy has completed, and waits (in a blocking
 * section) for the copy of the one it took. Slots grow to the largest
 * element; their bytes are charged to the pipeline's RAM budget. Their
 * page-locked memory comes from, and goes back to, the staging cache
 * (device.h), so the next epoch's iterator does not pin it again. Elements
 * waiting on the device are charged to a budget of their own (device
 * memory, not RAM; shown in statistics). buffer_size 0 (copy_to_device)
 * copies on the consumer's thread, in next().
 *
 * Batches built in place: when the input is a batch kernel (or a prefetch
 * of one), the stage hands it a pool of page-locked buffers (pinned.h)
 * before the first next(), and the batch's numeric components are built
 * there. Such an element skips the packing: its turn issues one
 * asynchronous copy per component, straight from the batch's buffers into
 * the element's device block, and its slot holds the buffers (references)
 * until that copy has completed. An element with any numeric component
 * elsewhere (a map between the batch and this stage, a ragged or string
 * batch's parts, a batch the pool refused) takes the staging path; both
 * are counted (inplace_*, staged_*).
 *
 * Exact resume: the stage's (core/stage.h). A save that writes elements in
 * flight reads them back from the device (core/iterator_state.h's foreign reader);
 * restored, they come back as host elements, and next() copies them again.
 *
 * Locks: ring_mu guards the slots' flags (never held while packing or
 * waiting); copy_mu makes each copy's event, copy and events one unbroken
 * sequence on the stream, so its timing events measure that copy alone,
 * and keeps the byte and copy counters in step for device_measure.
 */
#include <stdlib.h>
#include <string.h>

#include "core/blocking.h"
#include "core/stage.h"
#include "device/device.h"
#include "device/pinned.h"
#include "device/prefetch_to_device.h"

#define CV_DEVICE_MAX_WORKERS 4
#define CV_DEVICE_ALIGN 256
#define CV_DEVICE_AUTOTUNE_MAX 16
#define CV_DEVICE_BUFFER_MAX 1024

typedef struct {
    CvDeviceKind kind;
    int index;
    int64_t buffer_size;
} DeviceParams;

typedef struct {
    void *host;      /* page-locked; the filling turn's */
    size_t capacity;
    void *start, *done; /* timing events around the slot's last copy */
    bool filling;       /* a turn owns it (ring_mu) */
    bool busy;          /* a copy from it may still run (ring_mu) */
    /* In place: the pinned buffers its last copy reads, one reference
     * each, dropped once that copy has completed (the slot's owner's). */
    CvBuffer **held;
    uint32_t nheld, held_cap;
} StagingSlot;

typedef struct {
    CvStagedIterator staged; /* stage initialized when buffer_size != 0 */
    CvDevice *device;        /* one reference */
    CvMemory *results;       /* device bytes waiting in the stage */
    pthread_mutex_t ring_mu, copy_mu;
    StagingSlot *ring; /* nslots; flags guarded by ring_mu */
    int nslots;
    _Atomic size_t ring_bytes; /* charged to the dataset's budget */
    _Atomic uint64_t copy_bytes, copies, copy_ns;
    atomic_int ring_busy;
    CvPinnedPool *pinned; /* our input builds its batches here; NULL: it cannot */
    _Atomic uint64_t inplace_batches, inplace_bytes; /* copied from where they were built */
    _Atomic uint64_t staged_copies, staged_bytes;    /* packed into a staging slot first */
} DeviceIterator;

static void device_free_params(CvDataset *ds)
{
    free(ds->params);
}

static int64_t device_cardinality(const CvDataset *ds)
{
    return cv_dataset_cardinality(ds->inputs[0]);
}

static void drop_held(StagingSlot *slot)
{
    for (uint32_t i = 0; i < slot->nheld; i++)
        cv_buffer_unref(slot->held[i]);
    slot->nheld = 0;
}

/* The slot keeps a reference to each numeric component's buffer of work
 * (the caller owns the slot). */
static CvStatus hold_buffers(StagingSlot *slot, const CvElement *work)
{
    if (work->n > slot->held_cap) {
        CvBuffer **grown = realloc(slot->held, work->n * sizeof(CvBuffer *));
        if (!grown)
            return cv_error_nomem();
        slot->held = grown;
        slot->held_cap = work->n;
    }
    for (uint32_t i = 0; i < work->n; i++)
        if (work->t[i].dtype != CV_STRING && !cv_device_buffer_of(work->t[i].buf))
            slot->held[slot->nheld++] = cv_buffer_ref(work->t[i].buf);
    return CV_STATUS_OK;
}

/* The slot's last copy has completed (waiting if need be); the buffers it
 * held for it are let go. The caller owns the slot (filling), or the stage
 * has stopped. */
static CvStatus retire_slot(DeviceIterator *it, StagingSlot *slot)
{
    pthread_mutex_lock(&it->ring_mu);
    bool busy = slot->busy;
    pthread_mutex_unlock(&it->ring_mu);
    if (!busy)
        return CV_STATUS_OK;
    CvDevice *d = it->device;
    CvStatus s = CV_STATUS_OK;
    if (!d->methods->done(d, slot->done)) {
        cv_blocking_begin();
        s = d->methods->sync(d, slot->done);
        cv_blocking_end();
    }
    if (s)
        return s;
    if (d->kind == CV_DEVICE_CUDA) {
        double ms = d->methods->elapsed_ms(d, slot->start, slot->done);
        atomic_fetch_add_explicit(&it->copy_ns, (uint64_t)(ms * 1e6), memory_order_relaxed);
    }
    drop_held(slot);
    pthread_mutex_lock(&it->ring_mu);
    slot->busy = false;
    pthread_mutex_unlock(&it->ring_mu);
    atomic_fetch_sub_explicit(&it->ring_busy, 1, memory_order_relaxed);
    return CV_STATUS_OK;
}

/* Claim a slot no turn is filling, preferring one with no copy in flight
 * (there is always one: at most `workers` turns fill at once). */
static StagingSlot *claim_slot(DeviceIterator *it)
{
    StagingSlot *found = NULL;
    pthread_mutex_lock(&it->ring_mu);
    for (int i = 0; i < it->nslots; i++) {
        StagingSlot *slot = &it->ring[i];
        if (slot->filling)
            continue;
        if (!found || (found->busy && (!slot->busy || it->device->methods->done(it->device, slot->done))))
            found = slot;
    }
    if (found)
        found->filling = true;
    pthread_mutex_unlock(&it->ring_mu);
    return found;
}

static void release_slot(DeviceIterator *it, StagingSlot *slot, bool copying)
{
    pthread_mutex_lock(&it->ring_mu);
    slot->filling = false;
    slot->busy = copying;
    pthread_mutex_unlock(&it->ring_mu);
    if (copying)
        atomic_fetch_add_explicit(&it->ring_busy, 1, memory_order_relaxed);
}

/* The caller owns the slot: make it hold n bytes. */
static CvStatus grow_slot(DeviceIterator *it, StagingSlot *slot, size_t n)
{
    if (slot->capacity >= n)
        return CV_STATUS_OK;
    CvDevice *d = it->device;
    size_t step = (size_t)1 << 20, capacity = (n + step - 1) / step * step;
    CvMemory *m = it->staged.base.dataset->memory;
    CvStatus s = cv_memory_charge(m, capacity - slot->capacity, "PrefetchToDevice",
                                  atomic_load(&it->ring_bytes), "lower the batch size");
    if (s)
        return s;
    void *host = NULL;
    if ((s = cv_device_staging_take(d, capacity, &host))) {
        cv_memory_release(m, capacity - slot->capacity);
        return s;
    }
    cv_device_staging_give(d, slot->host, slot->capacity);
    it->ring_bytes += capacity - slot->capacity;
    slot->host = host;
    slot->capacity = capacity;
    return CV_STATUS_OK;
}

/* Copy a host element to the device: *out gets device tensors (strings
 * stay). Takes *work. Any thread; takes copy_mu. */
static CvStatus copy_element(DeviceIterator *it, CvElement *work, CvElement *out)
{
    CvDevice *d = it->device;
    size_t offsets[64], *offset = work->n <= 64 ? offsets : malloc(work->n * sizeof(size_t));
    size_t total = 0, data_bytes = 0;
    bool numeric = false; /* a host numeric component, even of zero size, goes to the device */
    bool inplace = it->pinned != NULL; /* every numeric component built in our pinned pool */
    CvStatus s = CV_STATUS_OK;
    CvDeviceBlock *block = NULL;
    CvDeviceBuffer *buf = NULL;
    if (!offset) {
        s = cv_error_nomem();
        goto cleanup;
    }
    for (uint32_t i = 0; i < work->n; i++) {
        if (work->t[i].dtype == CV_STRING || cv_device_buffer_of(work->t[i].buf))
            continue;
        numeric = true;
        inplace = inplace && cv_pinned_buffer_in(work->t[i].buf, it->pinned);
        data_bytes += cv_tensor_nbytes(&work->t[i]);
        offset[i] = total;
        total += (cv_tensor_nbytes(&work->t[i]) + CV_DEVICE_ALIGN - 1) / CV_DEVICE_ALIGN * CV_DEVICE_ALIGN;
    }
    if (!numeric) { /* strings only, or already there */
        cv_element_move(out, work);
        goto cleanup;
    }
    int previous = cv_device_enter(d);
    StagingSlot *slot = claim_slot(it);
    if (!slot) { /* more turns than slots: a bug, reported rather than raced */
        cv_device_leave(d, previous);
        s = cv_error(CV_INTERNAL, "PrefetchToDevice: no free staging slot");
        goto cleanup;
    }
    bool copying = false, issued = false;
    if (!(s = retire_slot(it, slot)) && !(s = inplace ? hold_buffers(slot, work) : grow_slot(it, slot, total))) {
        for (uint32_t i = 0; !inplace && i < work->n; i++) /* the staging path: pack */
            if (work->t[i].dtype != CV_STRING && !cv_device_buffer_of(work->t[i].buf) &&
                cv_tensor_nbytes(&work->t[i]))
                memcpy((char *)slot->host + offset[i], work->t[i].data, cv_tensor_nbytes(&work->t[i]));
        if (!(s = cv_device_block_alloc(d, total, &block)) &&
            !(s = cv_device_buffer_new(d, block, total, &buf))) {
            block = NULL; /* the buffer's */
            pthread_mutex_lock(&it->copy_mu);
            int64_t t0 = cv_now_ns();
            if (!(s = d->methods->record(d, slot->start, NULL)) && !inplace && total) {
                issued = true;
                s = d->methods->copy_in(d, buf->base.data, slot->host, total);
            }
            for (uint32_t i = 0; !s && inplace && i < work->n; i++) /* one copy per component */
                if (work->t[i].dtype != CV_STRING && !cv_device_buffer_of(work->t[i].buf) &&
                    cv_tensor_nbytes(&work->t[i])) {
                    issued = true;
                    s = d->methods->copy_in(d, buf->base.data + offset[i], work->t[i].data,
                                            cv_tensor_nbytes(&work->t[i]));
                }
            CvStatus r = d->methods->record(d, slot->done, NULL); /* also after a failed copy: */
            if (!s && !r)                                          /* the held buffers wait on it */
                s = d->methods->record(d, buf->ready, NULL);
            int64_t t1 = cv_now_ns();
            if (!s) { /* counted under copy_mu, so a measure sees bytes and copies agree */
                copying = d->kind == CV_DEVICE_CUDA; /* in flight until its event completes */
                if (!copying) /* the host's copy is done: its time is the memcpy's */
                    atomic_fetch_add_explicit(&it->copy_ns, (uint64_t)(t1 - t0), memory_order_relaxed);
                atomic_fetch_add_explicit(&it->copy_bytes, total, memory_order_relaxed);
                atomic_fetch_add_explicit(&it->copies, 1, memory_order_relaxed);
                atomic_fetch_add_explicit(inplace ? &it->inplace_batches : &it->staged_copies, 1,
                                          memory_order_relaxed);
                atomic_fetch_add_explicit(inplace ? &it->inplace_bytes : &it->staged_bytes, data_bytes,
                                          memory_order_relaxed);
            } else if (issued && !r && d->kind == CV_DEVICE_CUDA) {
                copying = true; /* a copy may still read the slot: retired behind `done` */
            }
            if (s) /* the first error is the one to report */
                cv_status_free(r);
            else
                s = r;
            pthread_mutex_unlock(&it->copy_mu);
        }
    }
    if (!copying)
        drop_held(slot); /* the host's copies are done; or none ran */
    release_slot(it, slot, copying);
    cv_device_leave(d, previous);
    if (s)
        goto cleanup;
    if ((s = cv_element_init(out, work->n)))
        goto cleanup;
    for (uint32_t i = 0; i < work->n; i++) {
        CvTensor *src = &work->t[i], *dst = &out->t[i];
        if (src->dtype == CV_STRING || cv_device_buffer_of(src->buf)) {
            *dst = *src;
            src->buf = NULL;
            src->rank = 0;
            continue;
        }
        dst->dtype = src->dtype;
        dst->rank = src->rank;
        memcpy(dst->shape, src->shape, sizeof(dst->shape));
        dst->data = buf->base.data + offset[i];
        dst->buf = cv_buffer_ref(&buf->base);
    }
cleanup:
    if (block) {
        d->methods->free(d, block->ptr);
        atomic_fetch_sub_explicit(&d->device_bytes, (long long)block->size, memory_order_relaxed);
        free(block);
    }
    if (buf)
        cv_buffer_unref(&buf->base);
    if (offset != offsets)
        free(offset);
    cv_element_clear(work);
    return s;
}

static bool on_device(const CvElement *e)
{
    for (uint32_t i = 0; i < e->n; i++)
        if (e->t[i].dtype != CV_STRING && !cv_device_buffer_of(e->t[i].buf))
            return false;
    return true;
}

/* A restored element (on the host) goes to the device now. */
static CvStatus settle(DeviceIterator *it, CvStatus s, CvElement *out, bool end)
{
    if (s || end || on_device(out))
        return s;
    CvElement host;
    cv_element_move(&host, out);
    return copy_element(it, &host, out);
}

static CvStatus device_pull(void *owner, CvElement *work, int64_t *aux, bool *end)
{
    (void)aux;
    return cv_iterator_next(((DeviceIterator *)owner)->staged.input, work, end);
}

static CvStatus device_process(void *owner, CvElement *work, int64_t aux, CvElement *out)
{
    (void)aux;
    return copy_element(owner, work, out);
}

static CvStatus device_save_input(void *owner, CvStateWriter *w)
{
    return cv_iterator_save(((DeviceIterator *)owner)->staged.input, w);
}

static CvStatus device_restore_input(void *owner, CvStateReader *r)
{
    return cv_iterator_restore(((DeviceIterator *)owner)->staged.input, r);
}

static const CvStageOps device_stage_ops = {device_pull, device_process, NULL, device_save_input,
                                            device_restore_input};

static void device_destroy(CvIterator *base)
{
    DeviceIterator *it = (DeviceIterator *)base;
    if (it->staged.stage.slots)
        cv_stage_destroy(&it->staged.stage); /* cancels; frees the elements it holds */
    cv_iterator_destroy(it->staged.input);
    CvDevice *d = it->device;
    if (d) {
        int previous = cv_device_enter(d);
        for (int i = 0; it->ring && i < it->nslots; i++) {
            StagingSlot *slot = &it->ring[i];
            if (slot->busy)
                cv_status_free(d->methods->sync(d, slot->done));
            drop_held(slot); /* back to the pool: its copy is done */
            free(slot->held);
            cv_device_staging_give(d, slot->host, slot->capacity); /* the next epoch's */
            d->methods->event_free(d, slot->start);
            d->methods->event_free(d, slot->done);
        }
        cv_device_leave(d, previous);
        cv_memory_release(base->dataset->memory, atomic_load(&it->ring_bytes));
        cv_pinned_pool_unref(it->pinned); /* buffers still out keep it */
        cv_device_retire(d); /* arrays still out there must not pin its cache */
        cv_device_unref(d);
    }
    free(it->ring);
    cv_memory_unref(it->results);
    pthread_mutex_destroy(&it->ring_mu);
    pthread_mutex_destroy(&it->copy_mu);
    cv_iterator_free(base);
}

static void device_cancel(CvIterator *base)
{
    DeviceIterator *it = (DeviceIterator *)base;
    if (it->staged.stage.slots)
        cv_stage_cancel(&it->staged.stage);
    cv_iterator_cancel(it->staged.input);
}

static CvStatus device_make_iterator(const CvDataset *ds, CvIterator **out)
{
    const DeviceParams *p = ds->params;
    DeviceIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    pthread_mutex_init(&it->ring_mu, NULL);
    pthread_mutex_init(&it->copy_mu, NULL);
    int cpus = cv_cpu_count() / 2, workers = p->buffer_size == 0 ? 1 : cpus < 1 ? 1
                                         : cpus > CV_DEVICE_MAX_WORKERS ? CV_DEVICE_MAX_WORKERS : cpus;
    it->nslots = workers + 1;
    CvStatus s = cv_device_open(p->kind, p->index, &it->device);
    if (!s && !(it->ring = calloc((size_t)it->nslots, sizeof(StagingSlot))))
        s = cv_error_nomem();
    if (!s) {
        int previous = cv_device_enter(it->device);
        for (int i = 0; !s && i < it->nslots; i++)
            if (!(s = it->device->methods->event_new(it->device, true, &it->ring[i].start)))
                s = it->device->methods->event_new(it->device, true, &it->ring[i].done);
        cv_device_leave(it->device, previous);
    }
    if (!s && !(it->results = cv_memory_new_unlisted()))
        s = cv_error_nomem();
    if (!s)
        s = cv_iterator_make(ds->inputs[0], &it->staged.input);
    if (!s && !(s = cv_pinned_pool_new(it->device, ds->memory, &it->pinned)) &&
        !cv_iterator_build_outputs_in(it->staged.input, cv_pinned_pool_allocator(it->pinned))) {
        cv_pinned_pool_unref(it->pinned); /* no batch kernel to build in it */
        it->pinned = NULL;
    }
    if (!s && p->buffer_size != 0) {
        int size = p->buffer_size > CV_DEVICE_BUFFER_MAX ? CV_DEVICE_BUFFER_MAX : (int)p->buffer_size;
        int initial = p->buffer_size == CV_AUTOTUNE ? 2 : size;
        int max = p->buffer_size == CV_AUTOTUNE ? CV_DEVICE_AUTOTUNE_MAX : size;
        s = cv_stage_init(&it->staged.stage, &device_stage_ops, it, "PrefetchToDevice", workers,
                          workers > 1, initial < workers ? workers : initial,
                          max < workers ? workers : max, true);
        if (!s)
            cv_stage_set_memory(&it->staged.stage, it->results, "lower prefetch_to_device's buffer_size");
    }
    if (s) {
        device_destroy(&it->staged.base);
        return s;
    }
    *out = &it->staged.base;
    return CV_STATUS_OK;
}

static CvStatus device_next(CvIterator *base, CvElement *out, bool *end)
{
    DeviceIterator *it = (DeviceIterator *)base;
    if (it->staged.stage.slots)
        return settle(it, cv_stage_next(&it->staged.stage, out, end), out, *end);
    CvElement host = {0};
    CvStatus s = cv_iterator_next(it->staged.input, &host, end);
    if (s || *end)
        return s;
    return copy_element(it, &host, out);
}

static CvStatus device_try_next(CvIterator *base, CvElement *out, bool *end, bool *would_block)
{
    DeviceIterator *it = (DeviceIterator *)base;
    if (!it->staged.stage.slots) {
        *would_block = true; /* copies happen in next(), without the GIL */
        return CV_STATUS_OK;
    }
    /* Restored elements come out on the host and are copied in settle(),
     * which may wait for the device: not here, where the GIL may be held. */
    if (it->staged.stage.restored_next < it->staged.stage.nrestored) {
        *would_block = true;
        return CV_STATUS_OK;
    }
    return cv_stage_try_next(&it->staged.stage, out, end, would_block);
}

static void device_measure(CvIterator *base, CvNodeTotals *totals, CvGauges *gauges)
{
    DeviceIterator *it = (DeviceIterator *)base;
    cv_staged_iterator_measure(base, totals, gauges);
    pthread_mutex_lock(&it->copy_mu); /* one copy's bytes and count together */
    totals->copy_bytes += atomic_load_explicit(&it->copy_bytes, memory_order_relaxed);
    totals->copies += atomic_load_explicit(&it->copies, memory_order_relaxed);
    pthread_mutex_unlock(&it->copy_mu);
    totals->copy_ns += atomic_load_explicit(&it->copy_ns, memory_order_relaxed);
    gauges->ring_slots += it->nslots;
    gauges->ring_busy += atomic_load_explicit(&it->ring_busy, memory_order_relaxed);
    gauges->staging_bytes += (int64_t)atomic_load_explicit(&it->ring_bytes, memory_order_relaxed);
    gauges->pinned_bytes += cv_pinned_pool_stats(it->pinned).bytes_out;
    totals->inplace_batches += atomic_load_explicit(&it->inplace_batches, memory_order_relaxed);
    totals->inplace_bytes += atomic_load_explicit(&it->inplace_bytes, memory_order_relaxed);
    totals->staged_copies += atomic_load_explicit(&it->staged_copies, memory_order_relaxed);
    totals->staged_bytes += atomic_load_explicit(&it->staged_bytes, memory_order_relaxed);
    if (it->device)
        gauges->device_bytes += atomic_load_explicit(&it->device->device_bytes, memory_order_relaxed);
}

/* [elements in flight][input]; none without a stage. */
static CvStatus device_save(CvIterator *base, CvStateWriter *w)
{
    DeviceIterator *it = (DeviceIterator *)base;
    if (it->staged.stage.slots)
        return cv_stage_save(&it->staged.stage, w);
    cv_state_put_u64(w, 0);
    return device_save_input(it, w);
}

static CvStatus device_restore(CvIterator *base, CvStateReader *r)
{
    DeviceIterator *it = (DeviceIterator *)base;
    int64_t pending = 0;
    if (it->staged.stage.slots)
        return cv_stage_restore(&it->staged.stage, r);
    CvStatus s = cv_state_get_range(r, "copy_to_device's elements in flight", 0, 0, &pending);
    return s ? s : device_restore_input(it, r);
}

const CvKernel cv_kernel_prefetch_to_device = {
    .name = "PrefetchToDevice",
    .make_iterator = device_make_iterator,
    .cardinality = device_cardinality,
    .free_dataset = device_free_params,
    .next = device_next,
    .cancel = device_cancel,
    .destroy = device_destroy,
    .measure = device_measure,
    .try_next = device_try_next,
    .save = device_save,
    .restore = device_restore,
};

CvStatus cv_prefetch_to_device_dataset(CvDataset *input, CvDeviceKind kind, int index,
                                       int64_t buffer_size, CvDataset **out)
{
    if (buffer_size < 0 && buffer_size != CV_AUTOTUNE)
        return cv_error(CV_INVALID_ARGUMENT, "buffer_size must be >= 0 or AUTOTUNE (-1), got %lld",
                        (long long)buffer_size);
    if (kind == CV_DEVICE_CUDA) { /* fail when the pipeline is built, not at its first element */
        CvStatus s = cv_cuda_check_device(index);
        if (s)
            return s;
    }
    DeviceParams *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = (DeviceParams){kind, index, buffer_size};
    return cv_dataset_new(&cv_kernel_prefetch_to_device, &input, 1, p, true, out);
}

static CvStatus build(CvBuildArg *a, CvDataset **out)
{
    CvDeviceKind kind = a[1].i == 1 ? CV_DEVICE_CUDA : CV_DEVICE_CPU;
    return cv_prefetch_to_device_dataset(a[0].dataset, kind, (int)a[2].i, a[3].i, out);
}

const CvBuilder cv_prefetch_to_device_builder = {
    "prefetch_to_device",
    {{"input", CV_ARG_DATASET}, {"kind", CV_ARG_INT}, {"index", CV_ARG_INT},
     {"buffer_size", CV_ARG_INT}, {"memory", CV_ARG_MEMORY}},
    4,
    build,
    "kind 0 the host, 1 CUDA (the runtime loaded first by the Python layer)",
};
