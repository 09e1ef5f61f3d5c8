/* unique(): the input elements that have not been seen before, in order of
 * first appearance, as tf.data's UniqueDataset. Elements have one component
 * of dtype int32, int64 or string (the Python layer checks), of any shape:
 * two elements are the same when shape and values are.
 *
 * Every distinct element is kept, as a key (its shape and value bytes) in
 * an append-only arena indexed by an open-addressing hash table, so memory
 * grows with the number of distinct elements, as in tf.data. An error from
 * the input is delivered at that element and the next call goes on.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

typedef struct {
    CvUnaryIterator base;
    char *arena; /* keys: each a uint64 length, then that many bytes */
    size_t arena_len, arena_cap;
    uint64_t *slots; /* arena offset + 1 of a key; 0: empty */
    size_t num_slots; /* a power of two, or 0 */
    size_t num_keys;
    char *scratch; /* the key of the element being checked */
    size_t scratch_cap;
} UniqueIterator;

static int64_t unique_cardinality(const CvDataset *ds)
{
    int64_t n = cv_dataset_cardinality(ds->inputs[0]);
    return n == CV_INFINITE_CARDINALITY ? n : CV_UNKNOWN_CARDINALITY;
}

static CvStatus unique_make_iterator(const CvDataset *ds, CvIterator **out)
{
    return cv_unary_iterator_new(ds, sizeof(UniqueIterator), out);
}

static void unique_destroy(CvIterator *base)
{
    UniqueIterator *it = (UniqueIterator *)base;
    free(it->arena);
    free(it->slots);
    free(it->scratch);
    cv_unary_iterator_destroy(base);
}

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * UINT64_C(0x100000001b3);
    return h ^ (h >> 29);
}

static CvStatus reserve(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return CV_STATUS_OK;
    size_t n = *cap ? *cap : 256;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return cv_error_nomem();
        n *= 2;
    }
    char *p = realloc(*buf, n);
    if (!p)
        return cv_error_nomem();
    *buf = p;
    *cap = n;
    return CV_STATUS_OK;
}

static CvStatus append(UniqueIterator *it, size_t *len, const void *p, size_t n)
{
    CvStatus s = reserve(&it->scratch, &it->scratch_cap, *len + n);
    if (!s) {
        memcpy(it->scratch + *len, p, n);
        *len += n;
    }
    return s;
}

/* The key of tensor t into it->scratch: rank, dims, then the values (each
 * string as its length and bytes). */
static CvStatus make_key(UniqueIterator *it, const CvTensor *t, size_t *len)
{
    *len = 0;
    uint64_t rank = (uint64_t)t->rank;
    CvStatus s = append(it, len, &rank, sizeof(rank));
    if (!s)
        s = append(it, len, t->shape, sizeof(int64_t) * (size_t)t->rank);
    if (s || t->dtype != CV_STRING)
        return s ? s : append(it, len, t->data, cv_tensor_nbytes(t));
    const CvStringRef *refs = (const CvStringRef *)t->data;
    int64_t n = cv_tensor_num_elements(t);
    for (int64_t i = 0; i < n && !s; i++) {
        uint64_t length = refs[i].length;
        s = append(it, len, &length, sizeof(length));
        if (!s)
            s = append(it, len, cv_string_data(t, &refs[i]), refs[i].length);
    }
    return s;
}

static const char *key_at(const UniqueIterator *it, uint64_t offset, uint64_t *len)
{
    memcpy(len, it->arena + offset, sizeof(*len));
    return it->arena + offset + sizeof(*len);
}

/* The slot holding key (p, n), or the empty slot where it would go. */
static size_t find_slot(const UniqueIterator *it, const char *p, size_t n, uint64_t h)
{
    size_t mask = it->num_slots - 1, i = (size_t)h & mask;
    for (;; i = (i + 1) & mask) {
        if (!it->slots[i])
            return i;
        uint64_t len;
        const char *k = key_at(it, it->slots[i] - 1, &len);
        if (len == n && memcmp(k, p, n) == 0)
            return i;
    }
}

static CvStatus grow_table(UniqueIterator *it)
{
    size_t n = it->num_slots ? it->num_slots * 2 : 64;
    if (n > SIZE_MAX / sizeof(uint64_t) / 2)
        return cv_error_nomem();
    uint64_t *old = it->slots;
    size_t old_n = it->num_slots;
    it->slots = calloc(n, sizeof(uint64_t));
    if (!it->slots) {
        it->slots = old;
        return cv_error_nomem();
    }
    it->num_slots = n;
    for (size_t i = 0; i < old_n; i++) {
        if (!old[i])
            continue;
        uint64_t len;
        const char *k = key_at(it, old[i] - 1, &len);
        it->slots[find_slot(it, k, len, hash_bytes(k, len))] = old[i];
    }
    free(old);
    return CV_STATUS_OK;
}

/* Add key (p, n) unless present; *added says whether it was new. */
static CvStatus insert(UniqueIterator *it, const char *p, size_t n, bool *added)
{
    CvStatus s = CV_STATUS_OK;
    if ((it->num_keys + 1) * 2 > it->num_slots && (s = grow_table(it)))
        return s;
    uint64_t h = hash_bytes(p, n);
    size_t slot = find_slot(it, p, n, h);
    *added = !it->slots[slot];
    if (!*added)
        return CV_STATUS_OK;
    size_t offset = it->arena_len;
    if ((s = reserve(&it->arena, &it->arena_cap, offset + sizeof(uint64_t) + n)))
        return s;
    uint64_t len = n;
    memcpy(it->arena + offset, &len, sizeof(len));
    memcpy(it->arena + offset + sizeof(len), p, n);
    it->arena_len += sizeof(len) + n;
    it->slots[slot] = (uint64_t)offset + 1;
    it->num_keys++;
    return CV_STATUS_OK;
}

static CvStatus unique_next(CvIterator *base, CvElement *out, bool *end)
{
    UniqueIterator *it = (UniqueIterator *)base;
    for (;;) {
        CvElement in = {0};
        CvStatus s = cv_iterator_next(it->base.input, &in, end);
        if (s || *end)
            return s;
        size_t len = 0;
        bool added = false;
        if (in.n != 1)
            s = cv_error(CV_INVALID_ARGUMENT,
                         "Dataset.unique: elements must have one component, got %u", in.n);
        if (!s)
            s = make_key(it, &in.t[0], &len);
        if (!s)
            s = insert(it, it->scratch, len, &added);
        if (!s && added) {
            cv_element_move(out, &in);
            return CV_STATUS_OK;
        }
        cv_element_clear(&in);
        if (s)
            return s;
    }
}

/* The keys seen (the arena), then the input's position. */
static CvStatus unique_save(CvIterator *base, CvStateWriter *w)
{
    UniqueIterator *it = (UniqueIterator *)base;
    cv_state_put_bytes(w, it->arena, it->arena_len);
    return cv_iterator_save(it->base.input, w);
}

static CvStatus unique_restore(CvIterator *base, CvStateReader *r)
{
    UniqueIterator *it = (UniqueIterator *)base;
    const void *p = NULL;
    size_t n = 0, pos = 0;
    CvStatus s = cv_state_get_bytes(r, &p, &n);
    if (!s)
        s = cv_iterator_restore(it->base.input, r);
    if (s)
        return s;
    const char *bytes = p;
    it->arena_len = it->num_keys = 0;
    if (it->slots)
        memset(it->slots, 0, it->num_slots * sizeof(uint64_t));
    while (!s && pos < n) {
        uint64_t len = 0;
        bool added = false;
        if (n - pos < sizeof(len))
            return cv_error(CV_DATA_LOSS, "unique state: a truncated key");
        memcpy(&len, bytes + pos, sizeof(len));
        pos += sizeof(len);
        if (len > n - pos)
            return cv_error(CV_DATA_LOSS, "unique state: a truncated key");
        s = insert(it, bytes + pos, (size_t)len, &added);
        pos += (size_t)len;
    }
    return s;
}

const CvKernel cv_kernel_unique = {
    .name = "Unique",
    .make_iterator = unique_make_iterator,
    .cardinality = unique_cardinality,
    .next = unique_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = unique_destroy,
    .save = unique_save,
    .restore = unique_restore,
};

CvStatus cv_unique_dataset(CvDataset *input, CvDataset **out)
{
    return cv_dataset_new(&cv_kernel_unique, &input, 1, NULL, false, out);
}
