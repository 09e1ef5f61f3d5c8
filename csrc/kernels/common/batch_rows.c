/* Gathering rows into batches and copying values (see batch_rows.h). */
#include "kernels/common/batch_rows.h"

#include <stdlib.h>
#include <string.h>

CvStatus cv_bundle_append(CvElement *bundle, size_t *capacity, CvElement *row)
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
        bundle->t_block = 0; /* malloc's now */
        *capacity = want;
    }
    /* Move the tensors, not the element array. */
    if (row->n)
        memcpy(&bundle->t[bundle->n], row->t, row->n * sizeof(CvTensor));
    bundle->n += row->n;
    cv_element_free_array(row);
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
        if ((s = cv_bundle_append(bundle, &capacity, &row)))
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

/* Whether cv_stack_rows references string `ref` of t instead of copying it:
 * long enough, and its buffer is a leaf (no parts: the result's parts stay
 * one level deep) that the string fills at least half of (so a slice of a
 * large blob is copied, not kept alive whole). */
static bool share_string(const CvTensor *t, const CvStringRef *ref)
{
    if (ref->length < CV_STACK_SHARE_MIN_BYTES)
        return false;
    const CvBuffer *owner = cv_string_owner(t, ref);
    return owner->nparts == 0 && owner->size / 2 <= ref->length;
}

static CvStatus stack_strings(CvTensor *out, const CvElement *bundle, int64_t rows,
                              uint32_t ncomp, uint32_t c, int rank, const int64_t *shape)
{
    int64_t per_row = cv_tensor_num_elements(&bundle->t[c]);
    size_t blob_bytes = 0, shared = 0;
    for (int64_t r = 0; r < rows; r++) {
        const CvTensor *t = &bundle->t[r * ncomp + c];
        const CvStringRef *refs = (const CvStringRef *)t->data;
        for (int64_t k = 0; k < per_row; k++) {
            if (share_string(t, &refs[k]))
                shared++;
            else
                blob_bytes += refs[k].length;
        }
    }
    bool share = shared > 0 && shared <= CV_STRING_MAX_PARTS;
    if (shared && !share) { /* more than the part index can name: copy them all */
        blob_bytes = 0;
        for (int64_t r = 0; r < rows; r++)
            blob_bytes += cv_string_bytes(&bundle->t[r * ncomp + c]);
    }
    CvBuffer **parts = NULL; /* owned references, at most one per shared string */
    if (share && !(parts = malloc(shared * sizeof(CvBuffer *))))
        return cv_error_nomem();
    char *blob = NULL;
    CvStatus s = cv_tensor_alloc(out, CV_STRING, rank, shape, blob_bytes, &blob);
    if (s) {
        free(parts);
        return s;
    }
    CvStringRef *dst = (CvStringRef *)out->data;
    char *base = out->buf->data;
    uint32_t nparts = 0;
    for (int64_t r = 0; r < rows; r++) {
        const CvTensor *t = &bundle->t[r * ncomp + c];
        const CvStringRef *refs = (const CvStringRef *)t->data;
        for (int64_t k = 0; k < per_row; k++, dst++) {
            const CvStringRef *ref = &refs[k];
            dst->length = ref->length;
            if (share && share_string(t, ref)) {
                CvBuffer *owner = cv_string_owner(t, ref);
                if (nparts == 0 || parts[nparts - 1] != owner) /* rows of one buffer share a part */
                    parts[nparts++] = cv_buffer_ref(owner);
                dst->offset = (uint64_t)nparts << CV_STRING_PART_SHIFT |
                              (uint64_t)(cv_string_data(t, ref) - owner->data);
                continue;
            }
            if (ref->length)
                memcpy(blob, cv_string_data(t, ref), ref->length);
            dst->offset = (uint64_t)(blob - base);
            blob += ref->length;
        }
    }
    if (nparts)
        cv_buffer_set_parts(out->buf, parts, nparts);
    else
        free(parts);
    return CV_STATUS_OK;
}

CvStatus cv_stack_rows(CvTensor *out, const CvElement *bundle, int64_t rows, uint32_t ncomp,
                       uint32_t c, int rank, const int64_t *shape, const CvBufferAllocator *a)
{
    const CvTensor *first = &bundle->t[c];
    if (first->dtype == CV_STRING)
        return stack_strings(out, bundle, rows, ncomp, c, rank, shape);
    CvStatus s = cv_tensor_alloc_from(out, first->dtype, rank, shape, a);
    if (s)
        return s;
    int64_t per_row = cv_tensor_num_elements(first);
    for (int64_t r = 0; r < rows; r++)
        cv_copy_values(out, r * per_row, &bundle->t[r * ncomp + c], 0, per_row, NULL);
    return CV_STATUS_OK;
}
