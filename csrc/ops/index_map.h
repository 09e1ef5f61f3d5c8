/* Copying a tensor through a per-dim index map, for the ops that move
 * values without changing them (transpose, tile, pad, broadcast_to, split,
 * reverse of strings). Header-only helpers; no op of its own.
 *
 * Output value at coordinates (o_0, ..., o_{r-1}) is the source value at
 * flat index sum_d map[d][o_d] * stride[d], or the scalar `fill` when any
 * map[d][o_d] is negative (padding). Strings are copied into the output's
 * own blob (refs and bytes), as GatherV2 does.
 *
 * Ownership: cv_index_map_init allocates one block for all maps (only when
 * the output has values); cv_index_map_free releases it. The caller fills
 * map[d][0 .. shape[d]) and stride[d] before cv_index_map_copy. */
#ifndef CV_OPS_INDEX_MAP_H
#define CV_OPS_INDEX_MAP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"

typedef struct CvIndexMap {
    int rank;
    int64_t shape[CV_MAX_RANK];  /* the output's */
    int64_t stride[CV_MAX_RANK]; /* source values per step of map[d] */
    int64_t *map[CV_MAX_RANK];
    int64_t total; /* output values */
    int64_t *block;
} CvIndexMap;

/* Row-major strides (in values) of t's dims. */
static inline void cv_index_map_strides(const CvTensor *t, int64_t *stride)
{
    int64_t s = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        stride[d] = s;
        s *= t->shape[d] ? t->shape[d] : 1;
    }
}

static inline CvStatus cv_index_map_init(CvIndexMap *m, int rank, const int64_t *shape)
{
    int64_t sum = 0;
    memset(m, 0, sizeof(*m));
    if (rank < 0 || rank > CV_MAX_RANK)
        return cv_error(CV_INVALID_ARGUMENT, "rank %d is over %d", rank, CV_MAX_RANK);
    m->rank = rank;
    m->total = 1;
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 0)
            return cv_error(CV_INVALID_ARGUMENT, "negative dim %lld", (long long)shape[d]);
        m->shape[d] = shape[d];
        if (shape[d] == 0)
            m->total = 0;
        else if (m->total > INT64_MAX / shape[d])
            return cv_error(CV_RESOURCE_EXHAUSTED, "the result has too many values");
        else
            m->total *= shape[d];
    }
    if (m->total == 0)
        return CV_STATUS_OK;
    for (int d = 0; d < rank; d++)
        sum += shape[d]; /* <= total + rank: each dim is >= 1 */
    m->block = malloc((size_t)(sum + 1) * sizeof(int64_t));
    if (!m->block)
        return cv_error_nomem();
    sum = 0;
    for (int d = 0; d < rank; d++) {
        m->map[d] = m->block + sum;
        sum += shape[d];
    }
    return CV_STATUS_OK;
}

static inline void cv_index_map_free(CvIndexMap *m)
{
    free(m->block);
    m->block = NULL;
}

/* Flat source index of output value `idx`, or -1 for fill. */
static inline int64_t cv_index_map_source(const CvIndexMap *m, const int64_t *idx)
{
    int64_t off = 0;
    for (int d = 0; d < m->rank; d++) {
        int64_t v = m->map[d][idx[d]];
        if (v < 0)
            return -1;
        off += v * m->stride[d];
    }
    return off;
}

static inline void cv_index_map_next(const CvIndexMap *m, int64_t *idx)
{
    for (int d = m->rank - 1; d >= 0 && ++idx[d] == m->shape[d]; d--)
        idx[d] = 0;
}

/* Copy one value of `esize` bytes; fixed sizes compile to a single move. */
static inline void cv_index_map_copy1(char *dst, const char *src, size_t esize)
{
    switch (esize) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, esize); break;
    }
}

/* The numeric path: one output row (the last dim) at a time; source
 * values that follow each other (stride 1, consecutive map entries) are
 * copied as one run. `fill` is non-NULL when a map has negative entries
 * (the op checks this before). */
static inline void cv_index_map_rows(const CvIndexMap *m, const CvTensor *src,
                                     const CvTensor *fill, char *dst, size_t esize)
{
    int last = m->rank - 1;
    int64_t idx[CV_MAX_RANK] = {0}, n = m->shape[last], rows = m->total / n;
    const int64_t *map = m->map[last];
    int64_t stride = m->stride[last];
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = 0;
        bool pad_row = false;
        for (int d = 0; d < last; d++) {
            int64_t v = m->map[d][idx[d]];
            pad_row = pad_row || v < 0;
            base += v * m->stride[d];
        }
        for (int64_t o = 0; o < n;) {
            int64_t v = map[o], len = 1;
            if (pad_row || v < 0) {
                for (; o < n && (pad_row || map[o] < 0); o++, dst += esize)
                    cv_index_map_copy1(dst, fill->data, esize);
                continue;
            }
            if (stride == 1)
                while (o + len < n && map[o + len] == v + len)
                    len++;
            if (len > 1) {
                memcpy(dst, src->data + (size_t)(base + v) * esize, (size_t)len * esize);
            } else {
                cv_index_map_copy1(dst, src->data + (size_t)(base + v * stride) * esize, esize);
            }
            dst += (size_t)len * esize;
            o += len;
        }
        for (int d = last - 1; d >= 0 && ++idx[d] == m->shape[d]; d--)
            idx[d] = 0;
    }
}

static inline CvStatus cv_index_map_copy(const CvIndexMap *m, const CvTensor *src,
                                         const CvTensor *fill, CvTensor *out)
{
    int64_t idx[CV_MAX_RANK] = {0};
    size_t esize = cv_dtype_size(src->dtype), blob_bytes = 0;
    bool str = src->dtype == CV_STRING;
    if (fill && (fill->dtype != src->dtype || fill->rank != 0))
        return cv_error(CV_INVALID_ARGUMENT, "the padding value must be a scalar of the "
                                             "tensor's dtype");
    for (int d = 0; !fill && m->total && d < m->rank; d++)
        for (int64_t o = 0; o < m->shape[d]; o++)
            if (m->map[d][o] < 0)
                return cv_error(CV_INVALID_ARGUMENT, "index map: no padding value");
    if (str) {
        for (int64_t i = 0; i < m->total; i++, cv_index_map_next(m, idx)) {
            int64_t k = cv_index_map_source(m, idx);
            const CvTensor *t = k < 0 ? fill : src;
            if (!t)
                return cv_error(CV_INVALID_ARGUMENT, "index map: no padding value");
            size_t len = ((const CvStringRef *)t->data)[k < 0 ? 0 : k].length;
            if (len > SIZE_MAX - blob_bytes)
                return cv_error(CV_RESOURCE_EXHAUSTED, "the result is too large");
            blob_bytes += len;
        }
    }
    char *blob = NULL, *dst;
    CvStatus s = cv_tensor_alloc(out, src->dtype, m->rank, m->shape, blob_bytes, &blob);
    if (s)
        return s;
    if (!str && m->rank > 0) {
        if (m->total)
            cv_index_map_rows(m, src, fill, out->data, esize);
        return CV_STATUS_OK;
    }
    dst = out->data;
    memset(idx, 0, sizeof(idx));
    for (int64_t i = 0; i < m->total; i++, cv_index_map_next(m, idx), dst += esize) {
        int64_t k = cv_index_map_source(m, idx);
        const CvTensor *t = k < 0 ? fill : src;
        if (!t) {
            cv_tensor_clear(out);
            return cv_error(CV_INVALID_ARGUMENT, "index map: no padding value");
        }
        const char *from = t->data + (size_t)(k < 0 ? 0 : k) * esize;
        if (!str) {
            memcpy(dst, from, esize);
            continue;
        }
        const CvStringRef *sr = (const CvStringRef *)from;
        CvStringRef *dr = (CvStringRef *)dst;
        dr->offset = (uint64_t)(blob - out->buf->data);
        dr->length = sr->length;
        if (sr->length)
            memcpy(blob, cv_string_data(t, sr), sr->length);
        blob += sr->length;
    }
    return CV_STATUS_OK;
}

#endif
