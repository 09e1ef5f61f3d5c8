/* group_by_window's grouping: tf.data's GroupByWindowDataset up to the
 * reduce function.
 *
 * Each input element goes to the group of key_fn(element) (a scalar int64).
 * A key's window size is window_size_fn(key) (or a constant), computed when
 * the key is first seen and kept for the iterator's life. When a group holds
 * its window size of elements, it is emitted as [key, packed window] (the
 * window packed with kernels/common/packed_rows.h) and starts again empty.
 * At the end of the input the remaining groups are emitted, smallest key first, as tf.data's
 * ordered map of groups does. The Python layer runs the reduce function on
 * each emitted window (a flat_map).
 *
 * Errors (input, key_fn, window_size_fn, a window size <= 0) are returned at
 * the element that caused them, which is dropped; grouping goes on.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/common/element_calls.h"
#include "kernels/common/packed_rows.h"
#include "kernels/kernels.h"

typedef struct {
    CvFunction key_fn;
    CvFunction size_fn; /* .call NULL: every key's size is window_size */
    int64_t window_size;
    uint32_t ncomp;
    bool *ragged;                 /* [ncomp] */
    atomic_uint_least64_t epochs; /* iterators made so far: each gets the next epoch */
} GroupParams;

typedef struct {
    bool used;
    int64_t key;
    int64_t size; /* -1 until known */
    CvElement *rows;
    int64_t count, capacity;
} Group;

typedef struct {
    CvUnaryIterator base;
    Group *table; /* open addressing, capacity a power of two, at most half full */
    int64_t capacity, used;
    bool input_done;
    Group **flush; /* at the end of the input: the groups left, by key */
    int64_t flush_count, flush_next;
    uint64_t epoch, next_index; /* the functions' CvElementId of each input element */
} GroupIterator;

static void group_free(CvDataset *ds)
{
    GroupParams *p = ds->params;
    if (p->key_fn.release)
        p->key_fn.release(p->key_fn.ctx);
    if (p->size_fn.release)
        p->size_fn.release(p->size_fn.ctx);
    free(p->ragged);
    free(p);
}

static int group_traverse(const CvDataset *ds, CvVisit visit, void *arg)
{
    const GroupParams *p = ds->params;
    int rc = cv_function_traverse(&p->key_fn, visit, arg);
    return rc ? rc : cv_function_traverse(&p->size_fn, visit, arg);
}

static int64_t group_cardinality(const CvDataset *ds)
{
    int64_t n = cv_dataset_cardinality(ds->inputs[0]);
    return n == CV_INFINITE_CARDINALITY ? n : CV_UNKNOWN_CARDINALITY;
}

static CvStatus group_make_iterator(const CvDataset *ds, CvIterator **out)
{
    CvStatus s = cv_unary_iterator_new(ds, sizeof(GroupIterator), out);
    if (!s)
        ((GroupIterator *)*out)->epoch = atomic_fetch_add(&((GroupParams *)ds->params)->epochs, 1);
    return s;
}

static uint64_t hash_key(int64_t key)
{
    uint64_t x = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return x ^ (x >> 29);
}

static Group *find_slot(Group *table, int64_t capacity, int64_t key)
{
    uint64_t mask = (uint64_t)capacity - 1;
    for (uint64_t i = hash_key(key) & mask;; i = (i + 1) & mask)
        if (!table[i].used || table[i].key == key)
            return &table[i];
}

/* The group of `key`, created (size unknown) if new. */
static CvStatus lookup(GroupIterator *it, int64_t key, Group **out)
{
    if (2 * (it->used + 1) > it->capacity) {
        int64_t grown = it->capacity ? 2 * it->capacity : 16;
        Group *table = calloc((size_t)grown, sizeof(Group));
        if (!table)
            return cv_error_nomem();
        for (int64_t i = 0; i < it->capacity; i++)
            if (it->table[i].used)
                *find_slot(table, grown, it->table[i].key) = it->table[i];
        free(it->table);
        it->table = table;
        it->capacity = grown;
    }
    Group *g = find_slot(it->table, it->capacity, key);
    if (!g->used) {
        *g = (Group){.used = true, .key = key, .size = -1};
        it->used++;
    }
    *out = g;
    return CV_STATUS_OK;
}

static CvStatus append(Group *g, CvElement *e)
{
    if (g->count == g->capacity) {
        int64_t grown = g->capacity ? 2 * g->capacity : 4;
        if (grown > g->size)
            grown = g->size;
        CvElement *rows = realloc(g->rows, (size_t)grown * sizeof(CvElement));
        if (!rows)
            return cv_error_nomem();
        g->rows = rows;
        g->capacity = grown;
    }
    cv_element_move(&g->rows[g->count++], e);
    return CV_STATUS_OK;
}

/* Emit group g as [key, packed window] and empty it. */
static CvStatus emit(const GroupParams *p, Group *g, CvElement *out)
{
    CvElement packed = {0};
    CvElement **rows = malloc((size_t)g->count * sizeof(*rows));
    CvStatus s = rows ? CV_STATUS_OK : cv_error_nomem();
    for (int64_t i = 0; !s && i < g->count; i++)
        rows[i] = &g->rows[i];
    if (!s)
        s = cv_rows_pack(rows, g->count, p->ncomp, p->ragged, "GroupByWindow", &packed);
    free(rows);
    if (!s && !(s = cv_element_init(out, 1 + packed.n)))
        s = cv_tensor_alloc(&out->t[0], CV_INT64, 0, NULL, 0, NULL);
    if (!s) {
        *(int64_t *)out->t[0].data = g->key;
        memcpy(&out->t[1], packed.t, packed.n * sizeof(CvTensor));
        cv_element_free_array(&packed);
    } else {
        cv_element_clear(out);
    }
    cv_element_clear(&packed);
    for (int64_t i = 0; i < g->count; i++)
        cv_element_clear(&g->rows[i]);
    g->count = 0;
    return s;
}

static int by_key(const void *a, const void *b)
{
    int64_t x = (*(Group *const *)a)->key, y = (*(Group *const *)b)->key;
    return (x > y) - (x < y);
}

static CvStatus start_flush(GroupIterator *it)
{
    it->flush = malloc((size_t)(it->used ? it->used : 1) * sizeof(Group *));
    if (!it->flush)
        return cv_error_nomem();
    for (int64_t i = 0; i < it->capacity; i++)
        if (it->table[i].used && it->table[i].count > 0)
            it->flush[it->flush_count++] = &it->table[i];
    qsort(it->flush, (size_t)it->flush_count, sizeof(Group *), by_key);
    it->input_done = true;
    return CV_STATUS_OK;
}

/* A scalar int64 from a user function's result, or an error naming it. */
static CvStatus scalar_int64(const CvElement *e, const char *what, int64_t *value)
{
    if (e->n != 1 || e->t[0].dtype != CV_INT64 || e->t[0].rank != 0)
        return cv_error(CV_INVALID_ARGUMENT, "`%s` must return a scalar int64.", what);
    *value = *(const int64_t *)e->t[0].data;
    return CV_STATUS_OK;
}

static CvStatus window_size_of(const GroupParams *p, Group *g, const CvElement *key,
                               const CvElementId *id)
{
    int64_t size = p->window_size;
    if (p->size_fn.call) {
        CvElement r = {0};
        CvStatus s = p->size_fn.call(p->size_fn.ctx, key, id, &r);
        if (!s)
            s = scalar_int64(&r, "window_size_func", &size);
        cv_element_clear(&r);
        if (s)
            return s;
    }
    if (size <= 0)
        return cv_error(CV_INVALID_ARGUMENT, "Window size must be greater than zero, but got %lld.",
                        (long long)size);
    g->size = size;
    return CV_STATUS_OK;
}

static CvStatus group_next(CvIterator *base, CvElement *out, bool *end)
{
    GroupIterator *it = (GroupIterator *)base;
    const GroupParams *p = base->dataset->params;
    while (!it->input_done) {
        CvElement e = {0}, key = {0};
        bool input_end = false;
        CvStatus s = cv_iterator_next(it->base.input, &e, &input_end);
        if (s)
            return s;
        if (input_end) {
            if ((s = start_flush(it)))
                return s;
            break;
        }
        int64_t k = 0;
        Group *g = NULL;
        CvElementId id = {it->epoch, it->next_index++};
        s = p->key_fn.call(p->key_fn.ctx, &e, &id, &key);
        if (!s)
            s = scalar_int64(&key, "key_func", &k);
        if (!s)
            s = lookup(it, k, &g);
        if (!s && g->size < 0)
            s = window_size_of(p, g, &key, &id);
        if (!s)
            s = append(g, &e);
        cv_element_clear(&key);
        cv_element_clear(&e);
        if (s)
            return s;
        if (g->count == g->size) {
            *end = false;
            return emit(p, g, out);
        }
    }
    if (it->flush_next < it->flush_count) {
        *end = false;
        return emit(p, it->flush[it->flush_next++], out);
    }
    *end = true;
    return CV_STATUS_OK;
}

/* The partial groups are input already pulled that cannot be recomputed
 * without re-reading it: they go in the state by value, each with its key
 * and window size (window_size_fn runs once per key). Then the element ids
 * (epoch, next index: the functions' random ops seed from them), whether
 * the input ended (the groups left are then flushed, smallest key first:
 * the groups that still hold rows), and the input's position. */
static CvStatus group_save(CvIterator *base, CvStateWriter *w)
{
    GroupIterator *it = (GroupIterator *)base;
    cv_state_put_u64(w, it->epoch);
    cv_state_put_u64(w, it->next_index);
    cv_state_put_i64(w, it->input_done);
    cv_state_put_i64(w, it->used);
    for (int64_t i = 0; i < it->capacity; i++) {
        const Group *g = &it->table[i];
        if (!g->used)
            continue;
        cv_state_put_i64(w, g->key);
        cv_state_put_i64(w, g->size);
        cv_state_put_i64(w, g->count);
        for (int64_t r = 0; r < g->count; r++)
            cv_state_put_element(w, &g->rows[r]);
    }
    return cv_iterator_save(it->base.input, w);
}

static CvStatus restore_group(GroupIterator *it, CvStateReader *r)
{
    int64_t key = 0, size = 0, count = 0, used = it->used;
    Group *g = NULL;
    CvStatus s = cv_state_get_i64(r, &key);
    if (!s)
        s = cv_state_get_range(r, "group window size", -1, INT64_MAX, &size);
    if (!s)
        s = cv_state_get_range(r, "group rows", 0, size > 0 ? size - 1 : 0, &count);
    if (!s && size == 0)
        s = cv_state_corrupt("group_by_window: a window size of 0");
    if (!s)
        s = lookup(it, key, &g);
    if (!s && it->used == used)
        s = cv_state_corrupt("group_by_window: a key saved twice");
    if (s)
        return s;
    g->size = size;
    for (int64_t i = 0; i < count && !s; i++) {
        CvElement e = {0};
        s = cv_state_get_element(r, &e);
        if (!s)
            s = append(g, &e);
        cv_element_clear(&e);
    }
    return s;
}

/* Later iterators of the dataset number their epochs on from the restored
 * one, as in filter. */
static CvStatus group_restore(CvIterator *base, CvStateReader *r)
{
    GroupIterator *it = (GroupIterator *)base;
    GroupParams *p = base->dataset->params;
    int64_t epoch = 0, index = 0, groups = 0;
    bool input_done = false;
    CvStatus s = cv_state_get_range(r, "group_by_window epoch", 0, INT64_MAX - 1, &epoch);
    if (!s)
        s = cv_state_get_range(r, "group_by_window index", 0, INT64_MAX, &index);
    if (!s)
        s = cv_state_get_bool(r, &input_done);
    if (!s)
        s = cv_state_get_range(r, "group_by_window groups", 0, INT32_MAX, &groups);
    for (int64_t i = 0; i < groups && !s; i++)
        s = restore_group(it, r);
    if (!s && input_done)
        s = start_flush(it);
    if (!s)
        s = cv_iterator_restore(it->base.input, r);
    if (s)
        return s; /* destroy frees the groups restored so far */
    it->epoch = (uint64_t)epoch;
    it->next_index = (uint64_t)index;
    cv_epochs_note_restored(&p->epochs, (uint64_t)epoch);
    return CV_STATUS_OK;
}

static void group_destroy(CvIterator *base)
{
    GroupIterator *it = (GroupIterator *)base;
    for (int64_t i = 0; i < it->capacity; i++) {
        Group *g = &it->table[i];
        for (int64_t r = 0; r < g->count; r++)
            cv_element_clear(&g->rows[r]);
        free(g->rows);
    }
    free(it->table);
    free(it->flush);
    cv_unary_iterator_destroy(base);
}

const CvKernel cv_kernel_group_by_window = {
    .name = "GroupByWindow",
    .make_iterator = group_make_iterator,
    .cardinality = group_cardinality,
    .free_dataset = group_free,
    .next = group_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = group_destroy,
    .traverse = group_traverse,
    .save = group_save,
    .restore = group_restore,
};

CvStatus cv_group_by_window_dataset(CvDataset *input, CvFunction key_fn, CvFunction size_fn,
                                    int64_t window_size, const bool *ragged, uint32_t ncomp,
                                    CvDataset **out)
{
    GroupParams *p = calloc(1, sizeof(*p));
    bool *mask = malloc((ncomp ? ncomp : 1) * sizeof(bool));
    if (!p || !mask) {
        free(p);
        free(mask);
        if (key_fn.release)
            key_fn.release(key_fn.ctx);
        if (size_fn.release)
            size_fn.release(size_fn.ctx);
        return cv_error_nomem();
    }
    if (ncomp)
        memcpy(mask, ragged, ncomp * sizeof(bool));
    p->key_fn = key_fn;
    p->size_fn = size_fn;
    p->window_size = window_size;
    p->ncomp = ncomp;
    p->ragged = mask;
    atomic_init(&p->epochs, 0);
    return cv_dataset_new(&cv_kernel_group_by_window, &input, 1, p, false, out);
}
