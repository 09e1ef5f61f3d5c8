/* map(fn, num_parallel_calls, deterministic).
 *
 * Sequential (num_parallel_calls == 0): fn runs on the caller's thread.
 * Parallel: a CvStage whose workers pull input elements in order and run fn
 * concurrently; results come back in input order unless deterministic is
 * false. An error from fn or from the input is delivered at its element and
 * the map goes on with the next one, as tf.data's does.
 *
 * Exact resume: the state is the epoch and the index of the next input
 * element (the element id {epoch, index} seeds the function's random ops),
 * then the input's frame; parallel, the stage's marks or in-flight results
 * (core/stage.h). A function (Python or traced) keeps no state of ours: it
 * is called again, after a restore, on the elements not yet handed out.
 * State: 8 bytes + the pull side (8 bytes + the input's frame).
 *
 * A function that read_file's an input component (CvFunction.opens_args)
 * pulls its input through an open-ahead (kernels/common/open_ahead.h): the
 * files of the next elements are opened, their GETs in flight, before a
 * worker runs them; the pull side's state then also holds the elements
 * pulled ahead.
 */
#include <stdlib.h>

#include "core/pipeline.h" /* cv_parallelism */
#include "core/stage.h"
#include "kernels/common/element_calls.h"
#include "kernels/common/open_ahead.h"
#include "kernels/kernels.h"

typedef struct {
    CvFunction fn;
    int num_workers; /* 0: sequential */
    bool tune_workers; /* AUTOTUNE: num_workers is the most */
    bool deterministic;
    atomic_uint_least64_t epochs; /* iterators made so far: each gets the next epoch */
} MapParams;

typedef struct {
    CvStagedIterator staged; /* first: the stage runs only when parallel */
    uint64_t epoch;
    uint64_t next_index; /* position of the next input element (pulls are serialized) */
    CvOpenAhead ahead;   /* the pull side's, as next_index */
} MapIterator;

static void map_free(CvDataset *ds)
{
    MapParams *p = ds->params;
    if (p->fn.release)
        p->fn.release(p->fn.ctx);
    free(p);
}

static int map_traverse(const CvDataset *ds, CvVisit visit, void *arg)
{
    return cv_function_traverse(&((const MapParams *)ds->params)->fn, visit, arg);
}

static int64_t map_cardinality(const CvDataset *ds)
{
    return cv_dataset_cardinality(ds->inputs[0]);
}

static CvStatus call_fn(const MapParams *p, CvElement *in, const CvElementId *id, CvElement *out)
{
    CvStatus s = p->fn.call(p->fn.ctx, in, id, out);
    cv_element_clear(in);
    return s;
}

static CvStatus map_pull(void *owner, CvElement *work, int64_t *aux, bool *end)
{
    MapIterator *it = owner;
    CvStatus s = cv_open_ahead_next(&it->ahead, it->staged.input, work, end);
    if (!s && !*end)
        *aux = (int64_t)it->next_index++;
    return s;
}

static CvStatus map_process(void *owner, CvElement *work, int64_t aux, CvElement *out)
{
    MapIterator *it = owner;
    CvElementId id = {it->epoch, (uint64_t)aux};
    return call_fn(it->staged.base.dataset->params, work, &id, out);
}

/* A chunk of inputs goes to the function at once when it can take it. */
static void map_process_chunk(void *owner, CvStageUnit *units, int n)
{
    MapIterator *it = owner;
    const MapParams *p = it->staged.base.dataset->params;
    CvElement in[CV_STAGE_MAX_CHUNK], out[CV_STAGE_MAX_CHUNK];
    CvElementId ids[CV_STAGE_MAX_CHUNK];
    CvStatus status[CV_STAGE_MAX_CHUNK];
    int index[CV_STAGE_MAX_CHUNK], m = 0;
    for (int i = 0; i < n; i++) {
        if (units[i].status)
            continue;
        index[m] = i;
        ids[m] = (CvElementId){it->epoch, (uint64_t)units[i].aux};
        cv_element_move(&in[m], &units[i].work);
        out[m] = (CvElement){0};
        m++;
    }
    if (m)
        p->fn.call_chunk(p->fn.ctx, in, ids, out, status, m);
    for (int k = 0; k < m; k++) {
        cv_element_clear(&in[k]);
        units[index[k]].status = status[k];
        cv_element_move(&units[index[k]].out, &out[k]);
    }
}

/* The pull side's position: the next index, then the input's frame. */
static CvStatus map_save_input(void *owner, CvStateWriter *w)
{
    MapIterator *it = owner;
    cv_state_put_u64(w, it->next_index);
    return cv_open_ahead_save(&it->ahead, it->staged.input, w);
}

static CvStatus map_restore_input(void *owner, CvStateReader *r)
{
    MapIterator *it = owner;
    int64_t index = 0;
    CvStatus s = cv_state_get_range(r, "map's element index", 0, INT64_MAX, &index);
    if (s)
        return s;
    it->next_index = (uint64_t)index;
    return cv_open_ahead_restore(&it->ahead, it->staged.input, r);
}

/* An inline map's try_next over an input that may block (a parallel
 * batch run inline): the input's try_next, so that the binding keeps the
 * GIL as over the sequential map. With open-ahead on, next() pulls. */
static CvStatus map_try_pull(void *owner, CvElement *work, int64_t *aux, bool *end, bool *would_block)
{
    MapIterator *it = owner;
    if (it->ahead.mask) {
        *would_block = true;
        return CV_STATUS_OK;
    }
    CvStatus s = cv_iterator_try_next(it->staged.input, work, end, would_block);
    if (!s && !*end && !*would_block)
        *aux = (int64_t)it->next_index++;
    return s;
}

static const CvStageOps map_stage_ops = {map_pull, map_process, NULL, map_save_input,
                                         map_restore_input, map_try_pull};
static const CvStageOps map_chunk_stage_ops = {map_pull, map_process, map_process_chunk,
                                               map_save_input, map_restore_input, map_try_pull};

/* Most units per worker turn: a GIL hand-off (a function that takes chunks
 * gets the whole chunk in one call) and a wake-up cost ~10-20 us here, so
 * cheap calls on small elements go 16 at a time; the stage shrinks the chunk
 * for slow calls (CV_STAGE_CHUNK_NS: a slow native function keeps one unit
 * per worker and full parallelism) and large elements (CV_STAGE_CHUNK_BYTES). */
#define CV_MAP_CHUNK 16


static CvStatus map_make_iterator(const CvDataset *ds, CvIterator **out)
{
    MapParams *p = ds->params;
    MapIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    it->epoch = atomic_fetch_add(&p->epochs, 1);
    cv_open_ahead_init(&it->ahead, &p->fn);
    CvStatus s = cv_iterator_make(ds->inputs[0], &it->staged.input);
    if (!s && p->num_workers > 0) {
        int chunk = CV_MAP_CHUNK;
        int window = 2 * p->num_workers * chunk;
        s = cv_stage_init(&it->staged.stage, p->fn.call_chunk ? &map_chunk_stage_ops : &map_stage_ops, it,
                          "ParallelMap", p->num_workers, p->tune_workers, window, window,
                          p->deterministic);
        if (!s) {
            cv_stage_set_chunk(&it->staged.stage, chunk, true);
            cv_stage_set_memory(&it->staged.stage, ds->memory, "lower map's num_parallel_calls");
            if (p->tune_workers) /* AUTOTUNE: a tiny function may run on the consumer's thread; a
                                  * Python one (it may wait for another call) starts parallel */
                cv_stage_allow_inline(&it->staged.stage, p->fn.traverse ? NULL : &it->staged.base,
                                      ds->inputs[0]);
        }
    }
    if (s) {
        cv_staged_iterator_destroy(&it->staged.base);
        return s;
    }
    *out = &it->staged.base;
    return CV_STATUS_OK;
}

/* The sequential map: one input element through fn. would_block: pull with
 * the input's try_next (map_try_pull), NULL: with next(). */
static CvStatus map_one(MapIterator *it, const MapParams *p, CvElement *out, bool *end, bool *would_block)
{
    CvElement in = {0};
    int64_t index = 0;
    CvStatus s = would_block ? map_try_pull(it, &in, &index, end, would_block)
                             : map_pull(it, &in, &index, end);
    if (s || *end || (would_block && *would_block))
        return s;
    CvElementId id = {it->epoch, (uint64_t)index};
    return call_fn(p, &in, &id, out);
}

/* The stage's turns stop before the open-ahead (theirs) is cleared. */
static void map_destroy(CvIterator *base)
{
    MapIterator *it = (MapIterator *)base;
    cv_staged_iterator_cancel(base);
    cv_stage_destroy(&it->staged.stage);
    cv_open_ahead_clear(&it->ahead);
    cv_iterator_destroy(it->staged.input);
    cv_iterator_free(base);
}

/* An AUTOTUNE map run inline takes the sequential path (cv_stage_inline_fast);
 * from try_next (would_block) over an input that may block, the input's
 * try_next, and a grant not used goes back. */
static CvStatus map_inline(MapIterator *it, const MapParams *p, CvElement *out, bool *end, bool *would_block)
{
    CvStatus s = map_one(it, p, out, end, would_block);
    if (!s && would_block && *would_block)
        cv_stage_inline_undo(&it->staged.stage);
    else if (!s && *end)
        cv_stage_inline_end(&it->staged.stage);
    return s;
}

static CvStatus map_next(CvIterator *base, CvElement *out, bool *end)
{
    MapIterator *it = (MapIterator *)base;
    const MapParams *p = base->dataset->params;
    if (p->num_workers == 0)
        return map_one(it, p, out, end, NULL);
    if (cv_stage_inline_fast(&it->staged.stage))
        return map_inline(it, p, out, end, NULL);
    return cv_stage_next(&it->staged.stage, out, end);
}

static CvStatus map_try_next(CvIterator *base, CvElement *out, bool *end, bool *would_block)
{
    MapIterator *it = (MapIterator *)base;
    const MapParams *p = base->dataset->params;
    if (p->num_workers > 0) {
        CvStage *st = &it->staged.stage;
        *would_block = false;
        if (cv_stage_inline_fast(st)) /* as inline_next: the pull may not wait */
            return map_inline(it, p, out, end, st->input_may_block ? would_block : NULL);
        return cv_stage_try_next(st, out, end, would_block);
    }
    *would_block = true; /* sequential: fn runs in next() */
    return CV_STATUS_OK;
}

/* [epoch][results in flight: none when sequential][next index][input]. */
static CvStatus map_save(CvIterator *base, CvStateWriter *w)
{
    MapIterator *it = (MapIterator *)base;
    cv_state_put_u64(w, it->epoch);
    if (((const MapParams *)base->dataset->params)->num_workers > 0)
        return cv_stage_save(&it->staged.stage, w);
    cv_state_put_u64(w, 0);
    return map_save_input(it, w);
}

static CvStatus map_restore(CvIterator *base, CvStateReader *r)
{
    MapIterator *it = (MapIterator *)base;
    MapParams *p = base->dataset->params;
    int64_t epoch = 0, pending = 0;
    CvStatus s = cv_state_get_range(r, "map's epoch", 0, INT64_MAX, &epoch);
    if (s)
        return s;
    it->epoch = (uint64_t)epoch;
    cv_epochs_note_restored(&p->epochs, it->epoch);
    if (p->num_workers > 0)
        return cv_stage_restore(&it->staged.stage, r);
    if ((s = cv_state_get_range(r, "map's results in flight", 0, 0, &pending)))
        return s;
    return map_restore_input(it, r);
}

const CvKernel cv_kernel_map = {
    .name = "Map",
    .make_iterator = map_make_iterator,
    .cardinality = map_cardinality,
    .free_dataset = map_free,
    .next = map_next,
    .cancel = cv_staged_iterator_cancel,
    .destroy = map_destroy,
    .measure = cv_staged_iterator_measure,
    .traverse = map_traverse,
    .try_next = map_try_next,
    .save = map_save,
    .restore = map_restore,
};

CvStatus cv_map_fusion(const CvDataset *map, CvMapFusion *out)
{
    if (map->kernel != &cv_kernel_map)
        return cv_error(CV_INVALID_ARGUMENT, "map_batch: the input is not a map dataset");
    MapParams *p = map->params;
    out->fn = &p->fn;
    out->num_workers = p->num_workers;
    out->tune_workers = p->tune_workers;
    out->deterministic = p->deterministic;
    out->epochs = &p->epochs;
    return CV_STATUS_OK;
}

CvStatus cv_map_dataset(CvDataset *input, CvFunction fn, int64_t num_parallel_calls,
                        bool deterministic, CvDataset **out)
{
    int workers = 0;
    bool tune = false;
    CvStatus s = cv_parallelism(num_parallel_calls, &workers, &tune);
    MapParams *p = s ? NULL : malloc(sizeof(*p));
    if (!p) {
        if (fn.release)
            fn.release(fn.ctx);
        return s ? s : cv_error_nomem();
    }
    p->fn = fn;
    p->deterministic = deterministic;
    p->num_workers = workers;
    p->tune_workers = tune;
    atomic_init(&p->epochs, 0);
    return cv_dataset_new(&cv_kernel_map, &input, 1, p, workers > 0, out);
}
