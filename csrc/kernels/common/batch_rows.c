/* Gathering rows into batches and copying values (see batch_rows.h). */
#include "kernels/common/batch_rows.h"

#include <stdlib.h>
#include <string.h>

/* Append row's tensors to the bundle, growing it geometrically (a huge
 * batch_size over a short input must not allocate batch_size slots). */
static CvStatus bundle_append(CvElement *bundle, size_t *capacity, CvElement *row)
{
    if ((size_t)bundle->n + row->n > *capacity) {
        size_t want = *capacity ? *capacity * 2 : 16 * (size_t)(row->n ? row->n : 1);
        while (want < (size_t)bundle->n + row->n)
            want *= 2;
        if (want > UINT32_MAX)
            return cv_error(CV_RESOURCE_EXHAUSTED, "batch has more than 2^32 tensors");
        CvTensor *grown = realloc(bundle->t, want * sizeof(CvTensor));
        if (!grown)
            return cv_error_nomem();
        bundle->t = grown;
        *capacity = want;
    }
    /* Move the tensors, not the element array. */
    if (row->n)
        memcpy(&bundle->t[bundle->n], row->t, row->n * sizeof(CvTensor));
    bundle->n += row->n;
    free(row->t);
    *row = (CvElement){0};
    return CV_STATUS_OK;
}

CvStatus cv_gather_rows(CvRowGatherer *g, CvIterator *input, int64_t batch_size,
                        bool drop_remainder, CvElement *bundle, int64_t *rows, bool *end)
{
    CvStatus s = CV_STATUS_OK;
    CvElement row = {0};
    size_t capacity = g->partial.n; /* the bundle's array is exactly full when resumed */
    int64_t r = g->partial_rows;
    cv_element_move(bundle, &g->partial);
    g->partial_rows = 0;
    *end = false;
    if (g->input_done && r == 0) {
        *end = true;
        return CV_STATUS_OK;
    }
    for (; r < batch_size && !g->input_done; r++) {
        bool row_end = false;
        s = cv_iterator_next(input, &row, &row_end);
        if (s && s->code == CV_INTERRUPTED) {
            cv_element_move(&g->partial, bundle);
            g->partial_rows = r;
            return s;
        }
        if (s)
            goto error;
        if (row_end) {
            g->input_done = true;
            break;
        }
        if (r == 0) {
            g->ncomp = row.n;
        } else if (row.n != g->ncomp) {
            s = cv_error(CV_INVALID_ARGUMENT, "Cannot batch elements with %u and %u components",
                         g->ncomp, row.n);
            goto error;
        }
        if ((s = bundle_append(bundle, &capacity, &row)))
            goto error;
    }
    if (r == 0 || (r < batch_size && drop_remainder)) {
        cv_element_clear(bundle);
        *end = true;
        return CV_STATUS_OK;
    }
    *rows = r;
    return CV_STATUS_OK;
error:
    cv_element_clear(&row);
    cv_element_clear(bundle);
    return s;
}

void cv_row_gatherer_clear(CvRowGatherer *g)
{
    cv_element_clear(&g->partial);
    g->partial_rows = 0;
}

size_t cv_string_bytes(const CvTensor *t)
{
    if (t->dtype != CV_STRING)
        return 0;
    const CvStringRef *refs = (const CvStringRef *)t->data;
    int64_t n = cv_tensor_num_elements(t);
    size_t bytes = 0;
    for (int64_t k = 0; k < n; k++)
        bytes += refs[k].length;
    return bytes;
}

void cv_copy_values(CvTensor *dst, int64_t at, const CvTensor *src, int64_t from, int64_t count,
                    char **blob)
{
    if (count <= 0)
        return;
    if (src->dtype != CV_STRING) {
        size_t item = cv_dtype_size(src->dtype);
        memcpy(dst->data + (size_t)at * item, src->data + (size_t)from * item,
               (size_t)count * item);
        return;
    }
    const CvStringRef *in = (const CvStringRef *)src->data + from;
    CvStringRef *out = (CvStringRef *)dst->data + at;
    char *base = dst->buf->data;
    for (int64_t k = 0; k < count; k++) {
        memcpy(*blob, cv_string_data(src, &in[k]), in[k].length);
        out[k].offset = (uint64_t)(*blob - base);
        out[k].length = in[k].length;
        *blob += in[k].length;
    }
}

void cv_tensor_rows(CvTensor *dst, const CvTensor *src, int64_t start, int64_t count)
{
    cv_tensor_slice(dst, src, start); /* row `start`, then widen it back to `count` rows */
    dst->rank = src->rank;
    memcpy(dst->shape, src->shape, (size_t)src->rank * sizeof(int64_t));
    dst->shape[0] = count;
}
