/* The dataset and iterator contracts.
 *
 * A CvDataset is an immutable description of a pipeline stage: its kernel,
 * its input datasets and its parameters. It is reference counted and may be
 * shared by any number of iterators on any threads.
 *
 * A CvIterator is one pass over a dataset. Each kernel exports exactly one
 * const CvKernel vtable, which has both the dataset and the iterator entry
 * points (as tf.data's DatasetBase/IteratorBase pair does).
 *
 * Iterator contract (tf.data's GetNext):
 *  - next(it, out, end) returns a status. On OK, either *end is true (no
 *    element; `out` untouched) or *end is false and `out` holds an element the
 *    caller now owns. End of sequence is not an error and is sticky.
 *  - A non-OK status is tied to one element position: the next call goes on
 *    with the following element where tf.data does (errors do not poison the
 *    iterator unless the kernel documents otherwise).
 *  - next may be called from any thread, never concurrently on one iterator.
 *  - cancel(it) may be called from any thread at any time, also while another
 *    thread is inside next(); it makes every blocked or later next() of this
 *    iterator and its inputs return CV_CANCELLED promptly (except while a
 *    user function is running, which is waited for). It must be idempotent.
 *  - destroy(it) cancels, joins every thread the iterator started, destroys
 *    its inputs and frees it. It must not be called while next() runs.
 *  - try_next(it, out, end, would_block) is optional: next() for when the
 *    answer is there now (an element, an error or the end), without waiting
 *    for another thread. Otherwise it sets *would_block, returns OK and
 *    takes nothing, and the caller calls next(). It may be called with a
 *    foreign lock held (the binding holds the GIL), so it takes only locks
 *    whose holders never wait for another lock or call out. Same thread
 *    rules as next(); the two are never concurrent.
 */
#ifndef CV_DATASET_H
#define CV_DATASET_H

#include <stdbool.h>
#include <stdint.h>

#include "core/ram_budget.h"
#include "core/iterator_state.h"
#include "core/tensor.h"

#define CV_INFINITE_CARDINALITY (-1)
#define CV_UNKNOWN_CARDINALITY (-2)
#define CV_AUTOTUNE (-1)

typedef struct CvDataset CvDataset;
typedef struct CvIterator CvIterator;
struct CvNodeTotals;
struct CvGauges;

/* Visits one foreign reference: an object owned by a callback's context but
 * managed by the layer that made the callback (a Python object, for the
 * binding's garbage collector). A nonzero return stops the walk and is
 * passed back up. Traverse hooks only report references; they never change
 * them, take locks or call the callback. */
typedef int (*CvVisit)(void *object, void *arg);

/* A grant of elements that an iterator hands out unchanged from its input
 * (CvKernel.pass_through). */
typedef struct CvPassThrough {
    CvIterator *input;       /* borrowed: the iterator's input */
    int64_t units;           /* elements left to take from input directly */
    const _Atomic int *gate; /* the grant holds while this reads 0 (another thread may raise it) */
    bool may_block;          /* ask input with try_next (it may wait for another thread) */
} CvPassThrough;

typedef struct CvKernel {
    const char *name; /* tf.data's name for the stage: "ParallelMap", "Batch", ... */
    /* Dataset side. */
    CvStatus (*make_iterator)(const CvDataset *ds, CvIterator **out);
    int64_t (*cardinality)(const CvDataset *ds);
    void (*free_dataset)(CvDataset *ds); /* frees kernel params; inputs are released by the core */
    /* Iterator side. */
    CvStatus (*next)(CvIterator *it, CvElement *out, bool *end);
    void (*cancel)(CvIterator *it);
    void (*destroy)(CvIterator *it);
    /* Optional: visit the foreign references that ds->params holds through
     * its callbacks (CvFunction, CvSource, ... traverse). Inputs are walked
     * by the core (cv_dataset_traverse_owned). */
    int (*traverse)(const CvDataset *ds, CvVisit visit, void *arg);
    /* Optional: see try_next in the iterator contract above. */
    CvStatus (*try_next)(CvIterator *it, CvElement *out, bool *end, bool *would_block);
    /* Optional, for kernels with a parallel stage: add its counters to
     * *totals and its gauges to *gauges (core/stats.h). Called from any
     * thread while the iterator is attached to its statistics node, also
     * while next() runs; it takes the kernel's short locks only. */
    void (*measure)(CvIterator *it, struct CvNodeTotals *totals, struct CvGauges *gauges);
    /* Optional: exact resume (core/iterator_state.h). save writes the iterator's
     * position as its consumer has seen it (right after the last element
     * next() returned to it), then its inputs' positions that match, each
     * through cv_iterator_save. restore puts a freshly made iterator (no
     * next() yet) at a saved position, its inputs through
     * cv_iterator_restore. Both run on the consumer's thread, never at the
     * same time as next(). NULL: this iterator cannot be saved, and
     * cv_iterator_save says so, naming the kernel. */
    CvStatus (*save)(CvIterator *it, CvStateWriter *w);
    CvStatus (*restore)(CvIterator *it, CvStateReader *r);
    /* Optional: pass over up to n elements without producing them (an
     * indexed record file seeks); *skipped is how many, fewer than n only
     * at the end. Same thread rules as next(). NULL: cv_iterator_skip
     * pulls them with next(). */
    CvStatus (*skip)(CvIterator *it, int64_t n, int64_t *skipped);
    /* Optional: start the I/O of a fresh iterator (no next(), skip() or
     * save() yet) without producing an element, so that its read-ahead
     * runs before its first next(): a file reader pulls its first filename
     * and opens it. An error is kept and returned by the first next(), so
     * what next() yields is the same with or without it; save() and
     * restore() are too (a restore after it puts the iterator at the saved
     * position exactly). Called at most once; same thread rules as next().
     * NULL: nothing to start (cv_iterator_prepare does nothing). */
    void (*prepare)(CvIterator *it);
    /* Optional: an iterator that, for now, hands out its input's elements
     * unchanged (an AUTOTUNE prefetch run inline, core/stage.h) may grant
     * its consumer the next grant->units of them: the consumer takes each
     * from grant->input directly (next, or try_next when may_block) while
     * *grant->gate reads 0 (relaxed), and counts it as this iterator's
     * element or error too; at the input's end, or when the gate opens, it
     * calls this iterator again. Returns whether it granted any. Consumer
     * only; a grant is dropped before anything else calls this iterator
     * (save, restore, destroy). NULL: no grants (core/pipeline.c asks its
     * root after each call of it). */
    bool (*pass_through)(CvIterator *it, CvPassThrough *grant);
    /* Optional: from now on allocate the numeric tensors of the elements
     * this iterator hands out through `a` (which outlives the iterator):
     * its consumer, a device stage, copies them from there with no staging
     * copy. Called once, before the first next(), on the consumer's
     * thread. A stage that builds its outputs (the batch kernels) keeps it
     * and returns true; one that hands its input's elements on unchanged
     * (prefetch) forwards it to its input; NULL: false, nothing changes. */
    bool (*build_outputs_in)(CvIterator *it, const CvBufferAllocator *a);
} CvKernel;

struct CvDataset {
    const CvKernel *kernel;
    /* Two counts in one atomic, so that one read gives both: the low 32
     * bits count the structural references (datasets, the binding's
     * wrappers, pipelines, an interleave's inner dataset), the high 32 bits
     * the iterators of this dataset (CV_DATASET_ITERATOR_REF each), which
     * worker threads make and free without the GIL. The binding's gc
     * accounts for the structural ones only (core/wrapper.h). */
    _Atomic int64_t refcount;
    /* True when next() on an iterator of this dataset may wait for another
     * thread (a worker, or a join); the binding then releases the GIL. */
    bool may_block;
    void *params; /* kernel-owned, freed by kernel->free_dataset */
    /* The RAM budget that this dataset's iterators charge for the elements
     * they keep (owned reference; NULL: the process default). Set once,
     * right after construction, by whoever builds the pipeline. */
    CvMemory *memory;
    /* The front end's handle on this dataset (a CvWrapper, core/wrapper.h),
     * borrowed; NULL when none. Read and written under the front end's lock
     * only (the binding: the GIL); statistics copy it as a name. */
    void *wrapper;
    int num_inputs;
    CvDataset *inputs[]; /* num_inputs owned references (zip takes any number) */
};

struct CvIterator {
    const CvKernel *kernel;
    CvDataset *dataset; /* owned reference: the dataset outlives the iterator */
    /* Statistics (core/stats.h): set by cv_iterator_make, once the iterator
     * is made (readers measure it from other threads), when a pipeline's
     * pool is current, and guarded by that CvStats' lock; NULL otherwise. */
    struct CvStats *stats;
    struct CvNode *node;
    CvIterator *node_prev, *node_next;
    /* Set by whoever watches the iterator (core/stats.c, through the
     * pool's watcher): called before it is destroyed or freed; NULL when
     * nothing watches. */
    void (*unwatch)(CvIterator *it);
    /* Written by the consumer only (cv_iterator_next), read by anyone. */
    _Atomic uint64_t elements;
    _Atomic uint64_t errors;
};

/* Allocate a dataset of `kernel` with the given inputs (new references are
 * taken) and params (ownership passes to the dataset, even on failure).
 * may_block is or-ed with the inputs' flags. */
CvStatus cv_dataset_new(const CvKernel *kernel, CvDataset *const *inputs, int num_inputs,
                        void *params, bool may_block, CvDataset **out);
#define CV_DATASET_ITERATOR_REF ((int64_t)1 << 32)
CvDataset *cv_dataset_ref(CvDataset *ds);
void cv_dataset_unref(CvDataset *ds);
/* The structural references held now (the low half of refcount). */
long cv_dataset_structural_refs(const CvDataset *ds);
int64_t cv_dataset_cardinality(const CvDataset *ds);
/* Make ds charge budget m (a new reference is taken; NULL: the default).
 * Call only before ds is shared (right after its constructor). */
void cv_dataset_set_memory(CvDataset *ds, CvMemory *m);
/* Visit the foreign references of the part of a pipeline that the caller
 * owns: ds itself when its structural count is `holders` (the references
 * the caller accounts for: 1 for its own alone), then, recursively, each
 * input whose structural count is 1 (held only by a dataset so owned).
 * Anything shared (another holder, a pipeline the caller does not account
 * for, an interleave's inner dataset) is skipped: it is reported by none,
 * which is conservative. Iterator references are not compared: the caller
 * accounts for the pipelines that make them (core/wrapper.h).
 * Structural counts in the owned part cannot go up meanwhile: taking one
 * needs a reference, and the caller holds the only paths to it (for the
 * binding: under the GIL). Returns the first nonzero visit. */
int cv_dataset_traverse_owned(const CvDataset *ds, long holders, CvVisit visit, void *arg);

/* Iterator base helpers for kernels: allocate `size` bytes whose first
 * member is a CvIterator, filled in for `ds`. */
void *cv_iterator_alloc(const CvDataset *ds, size_t size);
void cv_iterator_free(CvIterator *it); /* releases the dataset reference and frees */

/* A kernel that makes an iterator of a dataset other than its inputs (one
 * a function returned) keeps a structural reference to that dataset for the
 * iterator's life, as interleave's slots do: the binding's gc relies on
 * every engine iterator having a structural holder (core/wrapper.h). */
CvStatus cv_iterator_make(const CvDataset *ds, CvIterator **out);

/* Kernels with one input iterator (and no threads of their own) start their
 * iterator struct with this and use the helpers below for make/cancel/destroy. */
typedef struct CvUnaryIterator {
    CvIterator base;
    CvIterator *input; /* owned */
} CvUnaryIterator;

/* Allocate `size` bytes (a struct starting with CvUnaryIterator, zeroed) and
 * open the iterator of ds->inputs[0]. */
CvStatus cv_unary_iterator_new(const CvDataset *ds, size_t size, CvIterator **out);
void cv_unary_iterator_cancel(CvIterator *it);
void cv_unary_iterator_destroy(CvIterator *it);
/* One writer: a relaxed load and store, no locked instruction. */
static inline void cv_iterator_count(_Atomic uint64_t *counter)
{
    atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static inline CvStatus cv_iterator_next(CvIterator *it, CvElement *out, bool *end)
{
    CvStatus s = it->kernel->next(it, out, end);
    if (s)
        cv_iterator_count(&it->errors);
    else if (!*end)
        cv_iterator_count(&it->elements);
    return s;
}
/* try_next, or *would_block for kernels without one. */
static inline CvStatus cv_iterator_try_next(CvIterator *it, CvElement *out, bool *end, bool *would_block)
{
    if (!it->kernel->try_next) {
        *would_block = true;
        return CV_STATUS_OK;
    }
    CvStatus s = it->kernel->try_next(it, out, end, would_block);
    if (s)
        cv_iterator_count(&it->errors);
    else if (!*end && !*would_block)
        cv_iterator_count(&it->elements);
    return s;
}
/* The kernel's prepare, if it has one (see CvKernel.prepare). */
static inline void cv_iterator_prepare(CvIterator *it)
{
    if (it->kernel->prepare)
        it->kernel->prepare(it);
}
/* The kernel's build_outputs_in, if it has one; false otherwise. */
static inline bool cv_iterator_build_outputs_in(CvIterator *it, const CvBufferAllocator *a)
{
    return it->kernel->build_outputs_in && it->kernel->build_outputs_in(it, a);
}
void cv_iterator_cancel(CvIterator *it); /* NULL-safe */
void cv_iterator_destroy(CvIterator *it); /* NULL-safe */

/* Exact resume: the iterator's frame (its kernel's name and save()'s
 * fields, inputs included) / restore from such a frame. See save and
 * restore in CvKernel. */
CvStatus cv_iterator_save(CvIterator *it, CvStateWriter *w);
CvStatus cv_iterator_restore(CvIterator *it, CvStateReader *r);
/* Pass over up to n elements (kernel skip, or next() and drop); *skipped as
 * in CvKernel.skip. An error is returned at its position, with *skipped
 * the elements passed before it. */
CvStatus cv_iterator_skip(CvIterator *it, int64_t n, int64_t *skipped);
/* save / restore for a unary kernel whose position is its input's alone. */
CvStatus cv_unary_iterator_save(CvIterator *it, CvStateWriter *w);
CvStatus cv_unary_iterator_restore(CvIterator *it, CvStateReader *r);

/* Why an iterator is being destroyed before its end. A kernel that keeps
 * the result of a whole pass (cache) treats a pass a take() cut short on
 * purpose (a preview) differently from an abandoned one. destroy() runs the
 * whole subtree on the calling thread, so the reason travels in a
 * thread-local that the destroying kernel sets around destroying its input
 * (and restores afterwards). */
typedef enum CvStopReason {
    CV_STOP_ABANDONED = 0, /* the consumer dropped it (the default) */
    CV_STOP_TAKE = 1,      /* a take() above reached its count */
    CV_STOP_EPOCH = 2,     /* repeat() ends an epoch of its input */
    CV_STOP_TAKE_EPOCH = 3 /* a take() that reached its count, ended as a repeat() epoch */
} CvStopReason;
CvStopReason cv_stop_reason(void);
/* Set this thread's reason; returns the previous one, to restore. */
CvStopReason cv_set_stop_reason(CvStopReason reason);

/* Where an element sits: `epoch` numbers the iterators made of the calling
 * dataset (each pass differs), `index` is the element's position in its pass.
 * Random element ops seed from it, so their results do not depend on thread
 * count or scheduling. */
typedef struct CvElementId {
    uint64_t epoch;
    uint64_t index;
} CvElementId;

/* A user function the engine calls: a Python callable wrapped by the
 * binding, or a traced native program (ops/program.h). call() may run on any
 * thread and concurrently with itself; the callee does its own locking (the
 * GIL). `in` and `id` are borrowed; on OK `out` is a new element owned by the
 * caller. */
typedef struct CvFunction {
    CvStatus (*call)(void *ctx, const CvElement *in, const CvElementId *id, CvElement *out);
    /* Optional: call on n elements at once (one GIL acquisition for a Python
     * function). status[i] receives each result's status. */
    void (*call_chunk)(void *ctx, const CvElement *in, const CvElementId *ids, CvElement *out,
                       CvStatus *status, int n);
    void (*release)(void *ctx); /* drops ctx; may run on any thread */
    void *ctx;
    /* Optional: visit the foreign references ctx holds (see CvVisit). */
    int (*traverse)(void *ctx, CvVisit visit, void *arg);
    /* Optional: call(), offering dests[k] (borrowed; one per component of
     * the result) as the memory of result component k: a component that
     * went there is a view of dests[k] (same data pointer), the others are
     * the function's own (ops/program.h). */
    CvStatus (*call_into)(void *ctx, const CvElement *in, const CvElementId *id,
                          const CvTensor *dests, CvElement *out);
    /* Bit k (k < 64): the function opens the file named by input component
     * k on every call (a traced read_file of it), so a map may open it ahead
     * (kernels/common/open_ahead.h). 0: unknown or none. */
    uint64_t opens_args;
} CvFunction;

/* A function from an element to a dataset (interleave's map_func). `in` is
 * borrowed; on OK *out is a new dataset reference owned by the caller. May
 * run on any thread. */
typedef struct CvDatasetFunction {
    CvStatus (*call)(void *ctx, const CvElement *in, CvDataset **out);
    void (*release)(void *ctx);
    void *ctx;
    int (*traverse)(void *ctx, CvVisit visit, void *arg); /* optional, see CvVisit */
} CvDatasetFunction;

/* A source of elements implemented outside the engine (from_generator).
 * open() makes per-iterator state; next()/close() take it. Calls for one
 * state never overlap; they may come from any thread. */
typedef struct CvSource {
    CvStatus (*open)(void *ctx, void **state);
    CvStatus (*next)(void *ctx, void *state, CvElement *out, bool *end);
    void (*close)(void *ctx, void *state);
    void (*release)(void *ctx);
    void *ctx;
    /* Optional: visit the foreign references ctx holds (not the per-iterator
     * states, which belong to iterators). */
    int (*traverse)(void *ctx, CvVisit visit, void *arg);
} CvSource;

/* For kernels' traverse: each callback's hook, or 0 when it has none. */
static inline int cv_function_traverse(const CvFunction *f, CvVisit visit, void *arg)
{
    return f->traverse ? f->traverse(f->ctx, visit, arg) : 0;
}
static inline int cv_dataset_function_traverse(const CvDatasetFunction *f, CvVisit visit, void *arg)
{
    return f->traverse ? f->traverse(f->ctx, visit, arg) : 0;
}
static inline int cv_source_traverse(const CvSource *s, CvVisit visit, void *arg)
{
    return s->traverse ? s->traverse(s->ctx, visit, arg) : 0;
}

#endif
