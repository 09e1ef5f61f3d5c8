#include "core/stats.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include "core/array.h"
#include "core/thread.h"

struct CvStats {
    pthread_mutex_t mu;
    CvNode **nodes; /* owned; guarded by mu */
    int count;
    size_t cap;
    _Atomic int64_t consumer_wait_ns;
    int64_t started_ns;
    atomic_bool inline_start;      /* cv_stats_allow_inline_start */
    _Atomic uint64_t looks_wanted; /* cv_stats_want_look */
};

CvStats *cv_stats_new(void)
{
    CvStats *stats = calloc(1, sizeof(*stats));
    if (!stats)
        return NULL;
    pthread_mutex_init(&stats->mu, NULL);
    stats->started_ns = cv_now_ns();
    return stats;
}

void cv_stats_free(CvStats *stats)
{
    if (!stats)
        return;
    for (int i = 0; i < stats->count; i++)
        free(stats->nodes[i]);
    free(stats->nodes);
    pthread_mutex_destroy(&stats->mu);
    free(stats);
}

/* mu held (or before sharing): a new node, or NULL when out of memory. */
static CvNode *add_node(CvStats *stats, const CvDataset *ds, const CvKernel *kernel, int parent)
{
    if (!cv_array_reserve((void **)&stats->nodes, &stats->cap, (size_t)stats->count + 1, sizeof(CvNode *), 16))
        return NULL;
    CvNode *node = calloc(1, sizeof(*node));
    if (!node)
        return NULL;
    node->dataset = ds;
    node->wrapper = ds ? ds->wrapper : NULL;
    node->kernel = kernel->name;
    node->parent = parent;
    node->inner = ds == NULL;
    stats->nodes[stats->count++] = node;
    return node;
}

static int find_dataset(const CvStats *stats, const CvDataset *ds)
{
    for (int i = 0; i < stats->count; i++)
        if (stats->nodes[i]->dataset == ds)
            return i;
    return -1;
}

CvStatus cv_stats_add_pipeline(CvStats *stats, const CvDataset *root)
{
    /* Depth first, inputs in order, each dataset once: an explicit stack of
     * (dataset, parent node). */
    typedef struct {
        const CvDataset *ds;
        int parent;
    } Pending;
    Pending *stack = NULL;
    int depth = 0;
    size_t cap = 0;
    CvStatus s = CV_STATUS_OK;
    pthread_mutex_lock(&stats->mu);
    if (!cv_array_reserve((void **)&stack, &cap, 1, sizeof(Pending), 16)) {
        s = cv_error_nomem();
        goto done;
    }
    stack[depth++] = (Pending){root, -1};
    while (depth > 0) {
        Pending top = stack[--depth];
        if (find_dataset(stats, top.ds) >= 0)
            continue;
        int index = stats->count;
        if (!add_node(stats, top.ds, top.ds->kernel, top.parent)) {
            s = cv_error_nomem();
            goto done;
        }
        if (!cv_array_reserve((void **)&stack, &cap, (size_t)(depth + top.ds->num_inputs), sizeof(Pending), 16)) {
            s = cv_error_nomem();
            goto done;
        }
        for (int i = top.ds->num_inputs - 1; i >= 0; i--) /* the first input is visited first */
            stack[depth++] = (Pending){top.ds->inputs[i], index};
    }
done:
    pthread_mutex_unlock(&stats->mu);
    free(stack);
    return s;
}

void cv_stats_attach(CvStats *stats, CvIterator *it)
{
    pthread_mutex_lock(&stats->mu);
    int index = find_dataset(stats, it->dataset);
    CvNode *node = index >= 0 ? stats->nodes[index] : NULL;
    for (int i = 0; !node && i < stats->count; i++) /* made at run time: one node per kernel */
        if (stats->nodes[i]->inner && stats->nodes[i]->kernel == it->kernel->name)
            node = stats->nodes[i];
    if (!node)
        node = add_node(stats, NULL, it->kernel, -1);
    if (node) { /* out of memory: the iterator simply goes uncounted */
        it->stats = stats;
        it->node = node;
        it->unwatch = cv_stats_detach;
        it->node_prev = NULL;
        it->node_next = node->live;
        if (node->live)
            node->live->node_prev = it;
        node->live = it;
        node->live_count++;
    }
    pthread_mutex_unlock(&stats->mu);
}

/* mu held: add a live iterator's counts and gauges. */
static void measure(CvIterator *it, CvNodeTotals *totals, CvGauges *gauges)
{
    totals->elements += atomic_load_explicit(&it->elements, memory_order_relaxed);
    totals->errors += atomic_load_explicit(&it->errors, memory_order_relaxed);
    if (it->kernel->measure)
        it->kernel->measure(it, totals, gauges);
}

void cv_stats_detach(CvIterator *it)
{
    CvStats *stats = it->stats;
    if (!stats)
        return;
    pthread_mutex_lock(&stats->mu);
    CvNode *node = it->node;
    CvGauges last = {0};
    measure(it, &node->retired, &last);
    last.buffered = last.bytes = 0; /* freed with the iterator */
    last.limit = NULL;
    node->last = last;
    if (it->node_prev)
        it->node_prev->node_next = it->node_next;
    else
        node->live = it->node_next;
    if (it->node_next)
        it->node_next->node_prev = it->node_prev;
    node->live_count--;
    it->stats = NULL;
    it->node = NULL;
    it->node_prev = it->node_next = NULL;
    pthread_mutex_unlock(&stats->mu);
}

void cv_stats_consumer_wait(CvStats *stats, int64_t ns)
{
    atomic_fetch_add_explicit(&stats->consumer_wait_ns, ns, memory_order_relaxed);
}

void cv_stats_allow_inline_start(CvStats *stats)
{
    atomic_store_explicit(&stats->inline_start, true, memory_order_relaxed);
}

bool cv_stats_may_start_inline(const CvIterator *it)
{
    CvStats *stats = it->stats;
    if (!stats || !it->node || !atomic_load_explicit(&stats->inline_start, memory_order_relaxed))
        return false;
    pthread_mutex_lock(&stats->mu);
    bool alone = !it->node->inner && it->node->live_count == 1;
    pthread_mutex_unlock(&stats->mu);
    return alone;
}

void cv_stats_want_look(CvStats *stats)
{
    atomic_fetch_add_explicit(&stats->looks_wanted, 1, memory_order_relaxed);
}

uint64_t cv_stats_looks_wanted(CvStats *stats)
{
    return atomic_load_explicit(&stats->looks_wanted, memory_order_relaxed);
}

int64_t cv_stats_consumer_wait_ns(CvStats *stats)
{
    return atomic_load_explicit(&stats->consumer_wait_ns, memory_order_relaxed);
}

int64_t cv_stats_started_ns(const CvStats *stats)
{
    return stats->started_ns;
}

/* mu held. */
static void snapshot_node(const CvNode *node, CvNodeSnapshot *out)
{
    *out = (CvNodeSnapshot){
        .wrapper = node->wrapper,
        .kernel = node->kernel,
        .parent = node->parent,
        .inner = node->inner,
        .live = node->live_count,
        .totals = node->retired,
    };
    for (CvIterator *it = node->live; it; it = it->node_next)
        measure(it, &out->totals, &out->gauges);
    if (!node->live)
        out->gauges = node->last;
}

int cv_stats_snapshot(CvStats *stats, CvNodeSnapshot *out, int cap)
{
    pthread_mutex_lock(&stats->mu);
    int n = stats->count;
    for (int i = 0; i < n && i < cap; i++)
        snapshot_node(stats->nodes[i], &out[i]);
    pthread_mutex_unlock(&stats->mu);
    return n;
}

void cv_stats_with_nodes(CvStats *stats, CvStatsVisit fn, void *arg)
{
    pthread_mutex_lock(&stats->mu);
    int n = stats->count;
    CvNodeSnapshot *now = calloc((size_t)(n > 0 ? n : 1), sizeof(*now));
    if (now) {
        for (int i = 0; i < n; i++)
            snapshot_node(stats->nodes[i], &now[i]);
        fn(arg, stats->nodes, now, n);
        free(now);
    }
    pthread_mutex_unlock(&stats->mu);
}

#define FIELD(name, kind, member) {name, kind, offsetof(CvNodeSnapshot, member)}
#define TOTAL(name) FIELD(#name, CV_FIELD_U64, totals.name)
#define GAUGE(name, kind) FIELD(#name, kind, gauges.name)

/* "dataset" is the wrapper's address, which a front end compares with its
 * own handles (the dataset itself may be gone). */
const CvField cv_node_fields[] = {
    FIELD("dataset", CV_FIELD_ADDRESS, wrapper),
    FIELD("kernel", CV_FIELD_STRING, kernel),
    FIELD("parent", CV_FIELD_INT, parent),
    FIELD("inner", CV_FIELD_BOOL, inner),
    FIELD("live", CV_FIELD_INT, live),
    TOTAL(elements),
    TOTAL(errors),
    TOTAL(units),
    TOTAL(turns),
    TOTAL(busy_ns),
    TOTAL(input_ns),
    TOTAL(full_ns),
    TOTAL(wait_ns),
    TOTAL(waits),
    TOTAL(blocked_ns),
    TOTAL(contended_ns),
    GAUGE(parallelism, CV_FIELD_INT),
    GAUGE(max_parallelism, CV_FIELD_INT),
    GAUGE(tuned_parallelism, CV_FIELD_BOOL),
    GAUGE(buffer, CV_FIELD_INT),
    GAUGE(max_buffer, CV_FIELD_INT),
    GAUGE(tuned_buffer, CV_FIELD_BOOL),
    GAUGE(buffered, CV_FIELD_I64),
    GAUGE(bytes, CV_FIELD_I64),
    GAUGE(pulling, CV_FIELD_INT),
    GAUGE(processing, CV_FIELD_INT),
    TOTAL(copies),
    TOTAL(copy_bytes),
    TOTAL(copy_ns),
    TOTAL(inplace_batches),
    TOTAL(inplace_bytes),
    TOTAL(staged_copies),
    TOTAL(staged_bytes),
    GAUGE(ring_slots, CV_FIELD_INT),
    GAUGE(ring_busy, CV_FIELD_INT),
    GAUGE(staging_bytes, CV_FIELD_I64),
    GAUGE(device_bytes, CV_FIELD_I64),
    GAUGE(pinned_bytes, CV_FIELD_I64),
    {NULL, CV_FIELD_INT, 0},
};
