/* map_and_batch's batches and pieces: see map_batch_pieces.h. */
#include "kernels/common/map_batch_pieces.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/common/batch_rows.h"

#define MB_MAX_FAST_BYTES ((size_t)1 << 30) /* bigger batches are stacked by the exact path */

static void batch_release(CvBuffer *buf)
{
    MbBatch *b = (MbBatch *)buf;
    if (b->t) {
        for (uint32_t c = 0; c < b->ncomp; c++)
            cv_tensor_clear(&b->t[c]);
        free(b->t);
    }
    pthread_mutex_destroy(&b->mu);
    free(b);
}

MbBatch *cv_mb_batch_new(uint64_t first, int64_t planned, const CvBufferAllocator *a)
{
    MbBatch *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    atomic_init(&b->buf.refcount, 1);
    b->buf.release = batch_release;
    b->first = first;
    b->planned = planned;
    b->out_alloc = a;
    pthread_mutex_init(&b->mu, NULL);
    atomic_init(&b->layout, 0);
    return b;
}

void cv_mb_piece_release(CvBuffer *buf)
{
    MbPiece *p = (MbPiece *)buf;
    for (int i = 0; i < p->n; i++) {
        cv_status_free(p->rows[i].status);
        cv_element_clear(&p->rows[i].e);
    }
    cv_buffer_unref(&p->batch->buf);
    free(p);
}

/* Set b's layout from its first finished row e (b->mu held). */
static void set_layout(MbBatch *b, const CvElement *e, int64_t batch_size)
{
    int layout = -1;
    size_t row = 0;
    bool ok = e->n > 0 && b->planned == batch_size;
    for (uint32_t c = 0; ok && c < e->n; c++) {
        const CvTensor *t = &e->t[c];
        ok = t->dtype != CV_STRING && t->rank + 1 <= CV_MAX_RANK;
        row += ok ? cv_tensor_nbytes(t) : 0;
    }
    if (ok && row <= MB_MAX_FAST_BYTES / (size_t)b->planned && (b->t = calloc(e->n, sizeof(CvTensor)))) {
        b->ncomp = e->n;
        layout = 1;
        for (uint32_t c = 0; c < e->n && layout == 1; c++) {
            int64_t shape[CV_MAX_RANK];
            shape[0] = b->planned;
            memcpy(shape + 1, e->t[c].shape, (size_t)e->t[c].rank * sizeof(int64_t));
            CvStatus s = cv_tensor_alloc_from(&b->t[c], e->t[c].dtype, e->t[c].rank + 1, shape, b->out_alloc);
            if (s) { /* the exact path will meet (or not) the same shortage */
                cv_status_free(s);
                layout = -1;
            }
        }
        if (layout != 1) {
            for (uint32_t c = 0; c < e->n; c++)
                cv_tensor_clear(&b->t[c]);
            free(b->t);
            b->t = NULL;
            b->ncomp = 0;
        }
    }
    atomic_store_explicit(&b->layout, layout, memory_order_release);
}

/* Copy result e into row `row` of b when it matches b's layout. */
bool cv_mb_write_row(MbBatch *b, int64_t row, const CvElement *e, int64_t batch_size)
{
    int layout = atomic_load_explicit(&b->layout, memory_order_acquire);
    if (layout == 0) {
        pthread_mutex_lock(&b->mu);
        if (atomic_load_explicit(&b->layout, memory_order_relaxed) == 0)
            set_layout(b, e, batch_size);
        layout = atomic_load_explicit(&b->layout, memory_order_relaxed);
        pthread_mutex_unlock(&b->mu);
    }
    if (layout != 1 || e->n != b->ncomp)
        return false;
    for (uint32_t c = 0; c < e->n; c++) {
        const CvTensor *t = &e->t[c], *dst = &b->t[c];
        if (t->dtype != dst->dtype || t->rank + 1 != dst->rank ||
            memcmp(t->shape, dst->shape + 1, (size_t)t->rank * sizeof(int64_t)) != 0)
            return false;
    }
    for (uint32_t c = 0; c < e->n; c++) {
        int64_t per_row = cv_tensor_num_elements(&e->t[c]);
        if (e->t[c].data != b->t[c].data + (size_t)(row * per_row) * cv_dtype_size(e->t[c].dtype))
            cv_copy_values(&b->t[c], row * per_row, &e->t[c], 0, per_row, NULL); /* not written in place */
    }
    return true;
}
