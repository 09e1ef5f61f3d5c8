/* map_and_batch: map(fn, num_parallel_calls) followed by batch(batch_size,
 * drop_remainder), in one kernel (tf.data's MapAndBatch). The Python layer
 * builds it in place of the pair when
 * options.experimental_optimization.map_and_batch_fusion is on and the map
 * runs in parallel; the results are exactly the pair's: the same batches,
 * dtypes and shapes, errors of the same types with the same messages at the
 * same positions, batch boundaries included.
 *
 * DESIGN
 * One CvStage (a task of the pipeline's pool). Its unit is a *piece*: a run
 * of consecutive rows of one batch. A turn pulls a piece (input lock held:
 * rows come in order and get map's element ids, {epoch, index}, with the
 * epoch taken from the map dataset's own counter, so random ops give what
 * they give unfused), runs fn on each row with no lock held (a Python
 * function gets the whole piece in one call: one GIL hand-off), and writes each
 * result straight into its row of the batch's tensors, which the first
 * finished row of the batch allocates (its dtypes and shapes, batch_size
 * rows), then frees the row's own element while it is still in the cache.
 * Several turns fill one batch at once; pieces are as many rows as take about
 * CV_STAGE_CHUNK_NS to map (one image, or a whole batch of small rows). A
 * piece travels through its slot as one tag tensor whose buffer is the piece
 * (so a cancelled or destroyed stage frees it like any element) and whose
 * size is the bytes of its rows, which the stage charges to the RAM budget.
 * The consumer takes pieces in order; when the last piece of a batch is
 * there and every row of it was written, the batch's tensors are the result
 * (the *fast* path: one copy per row, no hand-off per element).
 *
 * Anything else takes the *exact* path, which replays unfused batch over the
 * rows: a row whose fn or input failed, a row that does not match the
 * batch's layout (other dtype, shape or component count: ragged rows),
 * strings (their sizes vary), a short last batch, a piece the RAM budget
 * dropped. Its rows (written ones as views of the batch, others whole, errors
 * as errors) go into a queue that the consumer gathers and stacks with
 * batch's own code (cv_batch_stack), so errors and messages are batch's.
 *
 * Semantics on an error in fn at row k (decided: conveyor's unfused ones,
 * not tf.data's fused ones): the error is delivered in place of the batch
 * it falls in, the rows gathered before it are dropped, and the next batch
 * starts right after it, as unfused map().batch() does; tf.data's
 * MapAndBatch would fail the whole batch instead and keep its boundaries.
 * After such a shift the pulled batches no longer line up with the batches
 * the consumer makes: it replays them (one copy more per row), and publishes
 * where its next batch starts (`align`), so the next batch that the input
 * side opens is short enough to line the following ones up again.
 *
 * Order: always the input's. The Python layer builds the pair instead for a
 * map with deterministic=False (whose results may overtake each other), in
 * the doctor's sequential baseline and for num_parallel_calls=None.
 *
 * Exact resume. The consumer's position is `expect`, a row-stream position
 * that need not be a piece boundary (after an error shifted the batches).
 * The stage marks every piece from the first pull on (a piece is up to a
 * batch of rows, so a mark costs little beside it): the pull side's fields
 * and the input's frame after the piece. The consumer keeps the marks of
 * the pieces it took whose rows it may still need, `marks` (the oldest at
 * or before expect, then later ones), starting with the position at its
 * first next(). The state is the epoch, skip = expect - (that mark's
 * position), and that mark; restore puts the input at the mark and pulls
 * `skip` rows without mapping them (their batch was handed out). State: 24
 * bytes + the pull side (24 bytes, the elements a read_file map pulled ahead
 * (kernels/common/open_ahead.h), the input's frame).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/stage.h"
#include "kernels/common/batch_rows.h"
#include "kernels/common/element_calls.h"
#include "kernels/common/map_batch_pieces.h"
#include "kernels/common/open_ahead.h"
#include "kernels/kernels.h"

#define MB_MAX_PIECE 256                     /* most rows per piece */
#define MB_MAX_DEST_COMPONENTS 16           /* rows of more components are copied in */

typedef struct {
    int64_t batch_size;
    bool drop_remainder;
    CvMapFusion map; /* the map dataset's (our input) */
} MapBatchParams;

/* A row of the exact path. */
typedef struct MbQueued {
    CvStatus status;
    CvElement e;
    uint64_t pos; /* UINT64_MAX: unknown (a piece the budget dropped) */
} MbQueued;

typedef struct {
    CvStagedIterator staged;
    uint64_t epoch;

    /* Input side (the stage's input lock). */
    uint64_t next_index; /* ids, as map's: input elements pulled */
    uint64_t pos;        /* row-stream position: input elements and input errors */
    MbBatch *cur;        /* the batch being pulled, one reference */
    int64_t cur_pulled;
    bool input_done;
    CvOpenAhead ahead;   /* a read_file map's files opened ahead (map.c) */
    int64_t pull_ns;     /* recent time to pull one row */
    _Atomic uint64_t align; /* the consumer's next batch start */
    _Atomic int64_t row_ns; /* recent time to map one row */
    const CvBufferAllocator *out_alloc; /* batches' buffers: build_outputs_in, before the first next() */

    /* Consumer side. */
    MbPiece *peek;          /* taken from the stage, not yet used */
    MbPiece **group;        /* the pieces of the batch being collected */
    int ngroup, group_cap;
    MbQueued *queue;        /* the exact path's rows, [qhead, qlen) */
    size_t qhead, qlen, qcap;
    CvElement bundle;       /* rows gathered by the exact path */
    size_t bundle_cap;
    int64_t brows;
    uint32_t bncomp;
    uint64_t expect;        /* where the next batch starts */
    bool resync;            /* expect unknown: take the next piece's position */
    bool stage_end;

    /* Exact resume, consumer side: marks[0, nmarks) by position, spare
     * writers in [nmarks, marks_cap); marks_error: the input cannot be
     * saved (no marks are taken). */
    struct MbMark {
        uint64_t pos;
        CvStateWriter w;
    } *marks;
    int nmarks, marks_cap;
    bool marking;
    CvStatus marks_error;
} MapBatchIterator;

static void mb_free(CvDataset *ds)
{
    free(ds->params);
}

static int64_t mb_cardinality(const CvDataset *ds)
{
    const MapBatchParams *p = ds->params;
    return cv_batched_cardinality(cv_dataset_cardinality(ds->inputs[0]), p->batch_size,
                                  p->drop_remainder);
}

/* -- the stage: pull a piece, map and write it (batches and pieces:
 * kernels/common/map_batch_pieces.c) ---------------------------------------- */

static CvStatus mb_pull(void *owner, CvElement *work, int64_t *aux, bool *end)
{
    (void)work;
    MapBatchIterator *it = owner;
    const MapBatchParams *p = it->staged.base.dataset->params;
    int64_t bs = p->batch_size;
    if (it->input_done && !it->cur) {
        *end = true;
        return CV_STATUS_OK;
    }
    if (!it->cur) {
        /* Line this batch up with the consumer's: after an error shifted its
         * boundaries, the next one opened is short. */
        uint64_t align = atomic_load_explicit(&it->align, memory_order_relaxed);
        int64_t planned = bs;
        if (align <= it->pos)
            planned = bs - (int64_t)((it->pos - align) % (uint64_t)bs);
        if (!(it->cur = cv_mb_batch_new(it->pos, planned, it->out_alloc)))
            return cv_error_nomem();
        it->cur_pulled = 0;
    }
    MbBatch *b = it->cur;
    int64_t ns = atomic_load_explicit(&it->row_ns, memory_order_relaxed);
    int64_t want = ns > 0 ? CV_STAGE_CHUNK_NS / ns : 1;
    int64_t left = b->planned - it->cur_pulled;
    if (want > MB_MAX_PIECE)
        want = MB_MAX_PIECE;
    if (want > left)
        want = left;
    if (want < 1)
        want = 1;
    /* Rows are initialized as they are pulled: zeroing `want` of them
     * (a batch's worth) per piece showed in the inline pipeline's profile. */
    MbPiece *piece = malloc(sizeof(*piece) + (size_t)want * sizeof(MbRow));
    if (!piece)
        return cv_error_nomem();
    memset(piece, 0, sizeof(*piece));
    atomic_init(&piece->buf.refcount, 1);
    piece->buf.release = cv_mb_piece_release;
    piece->batch = (MbBatch *)cv_buffer_ref(&b->buf);
    piece->pos = it->pos;
    piece->r0 = it->cur_pulled;
    int n = 0;
    int64_t started = cv_now_ns();
    /* The clock is read in the loop only when the rows may be slow to come
     * (a read at 1, 2, 4... rows); a fast input (recent pulls well under the
     * piece's time) is timed once per piece. */
    bool watch = it->pull_ns == 0 || it->pull_ns * want > CV_STAGE_CHUNK_NS / 4;
    while (n < want) {
        MbRow *row = &piece->rows[n];
        *row = (MbRow){0};
        bool row_end = false;
        row->status = cv_open_ahead_next(&it->ahead, it->staged.input, &row->e, &row_end);
        if (!row->status && row_end) {
            it->input_done = true;
            break;
        }
        if (!row->status)
            row->index = it->next_index++;
        n++;
        /* As the stage's own pulls: a slow input must not hold back what was
         * pulled (the batch goes on in the next piece). */
        if (watch && (n & (n - 1)) == 0 && n < want && cv_now_ns() - started > CV_STAGE_CHUNK_NS)
            break;
    }
    if (n > 0) {
        int64_t per_row = (cv_now_ns() - started) / n + 1;
        it->pull_ns = it->pull_ns ? (3 * it->pull_ns + per_row) / 4 : per_row;
    }
    piece->n = n;
    it->pos += (uint64_t)n;
    it->cur_pulled += n;
    if (it->input_done || it->cur_pulled == b->planned) {
        piece->last = true;
        it->cur = NULL;
        if (it->cur_pulled == 0) { /* the input ended at a batch boundary */
            cv_buffer_unref(&piece->buf);
            cv_buffer_unref(&b->buf);
            *end = true;
            return CV_STATUS_OK;
        }
        cv_buffer_unref(&b->buf);
    }
    *aux = (int64_t)(intptr_t)piece;
    return CV_STATUS_OK;
}

/* Call fn on one row. Once the batch has its layout, a native function
 * writes its results straight into the row (call_into): cv_mb_write_row then has
 * nothing to copy for them. */
static CvStatus call_row(const CvFunction *fn, MbBatch *b, int64_t row, const CvElement *in,
                         const CvElementId *id, CvElement *out)
{
    CvTensor dests[MB_MAX_DEST_COMPONENTS];
    if (!fn->call_into || atomic_load_explicit(&b->layout, memory_order_acquire) != 1 ||
        b->ncomp > MB_MAX_DEST_COMPONENTS)
        return fn->call(fn->ctx, in, id, out);
    /* Borrowed rows (call_into's dests are): the batch holds its tensors'
     * buffers until it is handed out, and a result that went into a row
     * takes its own reference; none taken here (two atomics per row). */
    for (uint32_t c = 0; c < b->ncomp; c++) {
        const CvTensor *t = &b->t[c];
        CvTensor *d = &dests[c];
        d->dtype = t->dtype;
        d->rank = t->rank - 1;
        for (int k = 1; k < t->rank; k++)
            d->shape[k - 1] = t->shape[k];
        d->data = t->data + (size_t)row * (size_t)cv_tensor_num_elements(d) * cv_dtype_size(t->dtype);
        d->buf = t->buf;
    }
    return fn->call_into(fn->ctx, in, id, dests, out);
}

/* Map rows [from, to) of piece (whose inputs are all there) with fn. */
static void map_rows(MapBatchIterator *it, MbPiece *piece, int from, int to)
{
    const MapBatchParams *p = it->staged.base.dataset->params;
    const CvFunction *fn = p->map.fn;
    if (!fn->call_chunk) {
        for (int i = from; i < to; i++) {
            MbRow *row = &piece->rows[i];
            if (row->status)
                continue;
            CvElement in, out = {0};
            cv_element_move(&in, &row->e);
            CvElementId id = {it->epoch, row->index};
            row->status = call_row(fn, piece->batch, piece->r0 + i, &in, &id, &out);
            cv_element_clear(&in);
            cv_element_move(&row->e, &out);
        }
        return;
    }
    CvElement in[MB_MAX_PIECE], out[MB_MAX_PIECE];
    CvElementId ids[MB_MAX_PIECE];
    CvStatus status[MB_MAX_PIECE];
    int index[MB_MAX_PIECE], m = 0;
    for (int i = from; i < to; i++) {
        if (piece->rows[i].status)
            continue;
        index[m] = i;
        ids[m] = (CvElementId){it->epoch, piece->rows[i].index};
        cv_element_move(&in[m], &piece->rows[i].e);
        out[m] = (CvElement){0};
        m++;
    }
    if (m)
        fn->call_chunk(fn->ctx, in, ids, out, status, m);
    for (int k = 0; k < m; k++) {
        cv_element_clear(&in[k]);
        piece->rows[index[k]].status = status[k];
        cv_element_move(&piece->rows[index[k]].e, &out[k]);
    }
}

static CvStatus mb_process(void *owner, CvElement *work, int64_t aux, CvElement *out)
{
    (void)work;
    MapBatchIterator *it = owner;
    const MapBatchParams *p = it->staged.base.dataset->params;
    MbPiece *piece = (MbPiece *)(intptr_t)aux;
    int64_t started = cv_now_ns();
    size_t bytes = 0;
    bool clean = true;
    /* Rows go through fn in groups (one GIL hand-off each for a Python
     * function), each written while its result is still in the cache. */
    int group = p->map.fn->call_chunk ? MB_MAX_PIECE : CV_STAGE_MAX_CHUNK;
    for (int from = 0; from < piece->n; from += group) {
        int to = from + group < piece->n ? from + group : piece->n;
        map_rows(it, piece, from, to);
        for (int i = from; i < to; i++) {
            MbRow *row = &piece->rows[i];
            if (row->status) {
                clean = false;
                continue;
            }
            bytes += cv_element_bytes(&row->e);
            if (cv_mb_write_row(piece->batch, piece->r0 + i, &row->e, p->batch_size)) {
                row->written = true;
                cv_element_clear(&row->e);
            } else {
                clean = false;
            }
        }
    }
    piece->clean = clean;
    if (piece->n > 0) {
        int64_t per_row = (cv_now_ns() - started) / piece->n + 1;
        int64_t old = atomic_load_explicit(&it->row_ns, memory_order_relaxed);
        atomic_store_explicit(&it->row_ns, old ? (3 * old + per_row) / 4 : per_row,
                              memory_order_relaxed);
    }
    /* The tag: the piece as the buffer of one uint8 tensor of its rows' size
     * (cv_element_bytes counts shapes), so the stage charges the rows. */
    CvStatus s = cv_element_init(out, 1);
    if (s) {
        cv_buffer_unref(&piece->buf);
        return s;
    }
    CvTensor *tag = &out->t[0];
    tag->dtype = CV_UINT8;
    tag->rank = 1;
    tag->shape[0] = (int64_t)bytes;
    tag->buf = &piece->buf;
    tag->data = NULL;
    return CV_STATUS_OK;
}

/* The pull side's position: the ids and row position, whether the input
 * ended, and the input's frame. A mark is taken after a piece; `cur` (a
 * batch in progress) is not kept: a restored iterator opens a batch at the
 * consumer's position. */
static CvStatus mb_save_input(void *owner, CvStateWriter *w)
{
    MapBatchIterator *it = owner;
    cv_state_put_u64(w, it->next_index);
    cv_state_put_u64(w, it->pos);
    cv_state_put_u64(w, it->input_done);
    return cv_open_ahead_save(&it->ahead, it->staged.input, w);
}

static CvStatus mb_restore_input(void *owner, CvStateReader *r)
{
    MapBatchIterator *it = owner;
    int64_t index = 0, pos = 0;
    bool done = false;
    CvStatus s = cv_state_get_range(r, "map_batch's element index", 0, INT64_MAX, &index);
    if (!s)
        s = cv_state_get_range(r, "map_batch's row position", index, INT64_MAX, &pos);
    if (!s)
        s = cv_state_get_bool(r, &done);
    if (s)
        return s;
    it->next_index = (uint64_t)index;
    it->pos = (uint64_t)pos;
    it->input_done = done;
    return cv_open_ahead_restore(&it->ahead, it->staged.input, r);
}

static const CvStageOps mb_stage_ops = {mb_pull, mb_process, NULL, mb_save_input,
                                        mb_restore_input};

/* -- the consumer ------------------------------------------------------------- */

/* The piece a stage result carries (taking it), or NULL. */
static MbPiece *piece_of(CvElement *e)
{
    if (e->n != 1 || !e->t[0].buf || e->t[0].buf->release != cv_mb_piece_release)
        return NULL;
    MbPiece *piece = (MbPiece *)e->t[0].buf;
    e->t[0].buf = NULL;
    cv_element_clear(e);
    return piece;
}

/* -- exact resume: the consumer's marks -------------------------------------- */

/* A writer for a new mark at the end of marks (a spare one when there is). */
static struct MbMark *mark_push(MapBatchIterator *it)
{
    if (it->nmarks == it->marks_cap) {
        int cap = it->marks_cap ? 2 * it->marks_cap : 8;
        struct MbMark *grown = realloc(it->marks, (size_t)cap * sizeof(*grown));
        if (!grown)
            return NULL;
        for (int i = it->marks_cap; i < cap; i++)
            cv_state_writer_init(&grown[i].w);
        it->marks = grown;
        it->marks_cap = cap;
    }
    struct MbMark *m = &it->marks[it->nmarks];
    m->w.len = 0;
    cv_status_free(m->w.error);
    m->w.error = CV_STATUS_OK;
    return m;
}

/* Drop the marks before the last one at or before expect (their writers
 * become spares). */
static void marks_prune(MapBatchIterator *it)
{
    int keep = 0;
    while (keep + 1 < it->nmarks && it->marks[keep + 1].pos <= it->expect)
        keep++;
    for (int i = 0; i < keep; i++) { /* rotate: dropped writers go to the back */
        struct MbMark spare = it->marks[0];
        memmove(it->marks, it->marks + 1, (size_t)(it->nmarks - 1) * sizeof(*it->marks));
        it->marks[it->nmarks - 1] = spare;
        it->nmarks--;
    }
}

/* A mark's position: its second field (mb_save_input). */
static CvStatus mark_pos(const CvStateWriter *w, uint64_t *pos)
{
    CvStateReader r;
    uint64_t index = 0;
    cv_state_reader_init(&r, w->data, w->len);
    CvStatus s = cv_state_get_u64(&r, &index);
    return s ? s : cv_state_get_u64(&r, pos);
}

/* After the stage handed out a result: keep its piece's mark. A mark that
 * cannot be kept ends marking (save reports why). */
static void mark_taken(MapBatchIterator *it)
{
    if (!it->marking)
        return;
    struct MbMark *m = mark_push(it);
    CvStatus s = m ? CV_STATUS_OK : cv_error_nomem();
    if (!s && !cv_stage_take_mark(&it->staged.stage, &m->w))
        return; /* nothing handed out (an interrupted wait) */
    if (!s && m->w.error)
        s = cv_status_copy(m->w.error);
    if (!s)
        s = mark_pos(&m->w, &m->pos);
    if (s) {
        it->marking = false;
        it->marks_error = s;
        return;
    }
    it->nmarks++;
    marks_prune(it);
}

/* The first next(): the position before any piece, and marks from now on
 * (unless restore did both). */
static void marks_start(MapBatchIterator *it)
{
    if (it->marking || it->marks_error)
        return;
    struct MbMark *m = mark_push(it);
    CvStatus s = m ? CV_STATUS_OK : cv_error_nomem();
    if (!s) {
        m->pos = it->pos;
        pthread_mutex_lock(&it->staged.stage.input_mu); /* no turn yet: for the record */
        s = mb_save_input(it, &m->w);
        pthread_mutex_unlock(&it->staged.stage.input_mu);
        if (!s && m->w.error)
            s = cv_status_copy(m->w.error);
    }
    if (s) {
        it->marks_error = s;
        return;
    }
    it->nmarks++;
    it->marking = true;
    cv_stage_arm(&it->staged.stage);
}

/* [epoch][skip][the mark at or before expect]. */
static CvStatus mb_save(CvIterator *base, CvStateWriter *w)
{
    MapBatchIterator *it = (MapBatchIterator *)base;
    if (it->marks_error)
        return cv_status_copy(it->marks_error);
    if (it->brows > 0 || it->resync)
        return cv_error(CV_FAILED_PRECONDITION,
                        "MapAndBatch: cannot save %s; call next() again first",
                        it->resync ? "right after a RAM budget error" : "inside a batch");
    cv_state_put_u64(w, it->epoch);
    if (!it->marking) { /* no next() yet: no turn has pulled */
        cv_state_put_u64(w, 0);
        pthread_mutex_lock(&it->staged.stage.input_mu);
        CvStatus s = mb_save_input(it, w);
        pthread_mutex_unlock(&it->staged.stage.input_mu);
        return s;
    }
    marks_prune(it);
    if (it->nmarks == 0 || it->marks[0].pos > it->expect)
        return cv_error(CV_INTERNAL, "MapAndBatch: no mark at or before row %llu",
                        (unsigned long long)it->expect);
    cv_state_put_u64(w, it->expect - it->marks[0].pos);
    cv_state_put_raw(w, it->marks[0].w.data, it->marks[0].w.len);
    return CV_STATUS_OK;
}

static CvStatus mb_restore(CvIterator *base, CvStateReader *r)
{
    MapBatchIterator *it = (MapBatchIterator *)base;
    const MapBatchParams *p = base->dataset->params;
    int64_t epoch = 0, skip = 0;
    CvStatus s = cv_state_get_range(r, "map_batch's epoch", 0, INT64_MAX, &epoch);
    if (!s)
        s = cv_state_get_range(r, "map_batch's rows to skip", 0, MB_MAX_PIECE, &skip); /* < a piece */
    if (s)
        return s;
    it->epoch = (uint64_t)epoch;
    cv_epochs_note_restored(p->map.epochs, it->epoch); /* later iterators get later epochs */
    size_t start = r->pos;
    if ((s = mb_restore_input(it, r)))
        return s;
    struct MbMark *m = mark_push(it);
    if (!m)
        return cv_error_nomem();
    m->pos = it->pos;
    cv_state_put_raw(&m->w, r->data + start, r->pos - start);
    if (m->w.error)
        return cv_status_copy(m->w.error);
    it->nmarks++;
    /* The rows of the batches handed out after the mark: pulled, not mapped. */
    for (int64_t k = 0; k < skip && !it->input_done; k++) {
        CvElement e = {0};
        bool end = false;
        s = cv_open_ahead_next(&it->ahead, it->staged.input, &e, &end);
        cv_element_clear(&e);
        if (s && s->code == CV_INTERRUPTED)
            return s;
        if (!s && end) {
            it->input_done = true;
            break;
        }
        if (!s)
            it->next_index++;
        cv_status_free(s);
        it->pos++;
    }
    it->expect = it->pos;
    atomic_store_explicit(&it->align, it->pos, memory_order_relaxed);
    it->marking = true;
    cv_stage_arm(&it->staged.stage);
    return CV_STATUS_OK;
}

/* The next piece: *piece set, or *lost (a stage result without a piece: the
 * RAM budget's error), or *end, or would_block / an interruption (state
 * kept). */
static CvStatus next_piece(MapBatchIterator *it, bool blocking, MbPiece **piece, CvStatus *lost,
                           bool *would_block)
{
    *piece = NULL;
    *lost = CV_STATUS_OK;
    if (it->peek) {
        *piece = it->peek;
        it->peek = NULL;
        return CV_STATUS_OK;
    }
    if (it->stage_end)
        return CV_STATUS_OK;
    CvElement e = {0};
    bool end = false;
    CvStatus s = blocking ? cv_stage_next(&it->staged.stage, &e, &end)
                          : cv_stage_try_next(&it->staged.stage, &e, &end, would_block);
    mark_taken(it);
    if (s && s->code == CV_INTERRUPTED)
        return s;
    if (s) {
        cv_element_clear(&e);
        *lost = s;
        return CV_STATUS_OK;
    }
    if (end) {
        it->stage_end = true;
        return CV_STATUS_OK;
    }
    if (blocking || !*would_block) {
        *piece = piece_of(&e);
        if (!*piece) {
            cv_element_clear(&e);
            *lost = cv_error(CV_INTERNAL, "map_batch: a stage result without its piece");
        }
    }
    return CV_STATUS_OK;
}

static CvStatus queue_push(MapBatchIterator *it, CvStatus status, CvElement *e, uint64_t pos)
{
    if (it->qhead == it->qlen)
        it->qhead = it->qlen = 0;
    if (it->qlen == it->qcap) {
        size_t cap = it->qcap ? 2 * it->qcap : 64;
        MbQueued *grown = realloc(it->queue, cap * sizeof(MbQueued));
        if (!grown) {
            cv_status_free(status);
            if (e)
                cv_element_clear(e);
            return cv_error_nomem();
        }
        it->queue = grown;
        it->qcap = cap;
    }
    MbQueued *q = &it->queue[it->qlen++];
    q->status = status;
    q->e = (CvElement){0};
    if (e)
        cv_element_move(&q->e, e);
    q->pos = pos;
    return CV_STATUS_OK;
}

/* Move piece's rows to the exact path's queue (written ones as views of the
 * batch) and drop the piece. */
static CvStatus queue_piece(MapBatchIterator *it, MbPiece *piece)
{
    CvStatus s = CV_STATUS_OK;
    MbBatch *b = piece->batch;
    for (int i = 0; i < piece->n && !s; i++) {
        MbRow *row = &piece->rows[i];
        CvElement view = {0};
        if (row->written && (s = cv_element_init(&view, b->ncomp)))
            break;
        for (uint32_t c = 0; row->written && c < b->ncomp; c++)
            cv_tensor_slice(&view.t[c], &b->t[c], piece->r0 + i);
        s = queue_push(it, row->status, row->written ? &view : &row->e, piece->pos + (uint64_t)i);
        row->status = CV_STATUS_OK; /* passed on (or freed) */
    }
    cv_buffer_unref(&piece->buf);
    return s;
}

static CvStatus queue_group(MapBatchIterator *it)
{
    CvStatus s = CV_STATUS_OK;
    for (int i = 0; i < it->ngroup; i++) {
        if (!s)
            s = queue_piece(it, it->group[i]);
        else
            cv_buffer_unref(&it->group[i]->buf);
    }
    it->ngroup = 0;
    return s;
}

static void publish(MapBatchIterator *it)
{
    atomic_store_explicit(&it->align, it->expect, memory_order_relaxed);
}

static CvStatus bundle_append(MapBatchIterator *it, CvElement *row)
{
    return cv_bundle_append(&it->bundle, &it->bundle_cap, row);
}

static void bundle_drop(MapBatchIterator *it)
{
    cv_element_clear(&it->bundle);
    it->bundle_cap = 0;
    it->brows = 0;
}

/* The exact path: batch's cv_gather_rows and stack over the queued rows
 * (and the pieces after them), resumable after an interruption. */
static CvStatus gather(MapBatchIterator *it, bool blocking, CvElement *out, bool *end,
                       bool *would_block)
{
    const MapBatchParams *p = it->staged.base.dataset->params;
    while (it->brows < p->batch_size) {
        if (it->qhead == it->qlen) {
            MbPiece *piece;
            CvStatus lost;
            CvStatus s = next_piece(it, blocking, &piece, &lost, would_block);
            if (s || *would_block)
                return s;
            if (lost)
                s = queue_push(it, lost, NULL, UINT64_MAX);
            else if (piece)
                s = queue_piece(it, piece);
            else
                break; /* the end */
            if (s) {
                bundle_drop(it);
                return s;
            }
            continue;
        }
        MbQueued *q = &it->queue[it->qhead++];
        CvStatus s = q->status;
        if (!s && it->brows > 0 && q->e.n != it->bncomp)
            s = cv_error(CV_INVALID_ARGUMENT, "Cannot batch elements with %u and %u components",
                         it->bncomp, q->e.n);
        if (!s) {
            if (it->brows == 0)
                it->bncomp = q->e.n;
            s = bundle_append(it, &q->e);
        }
        if (s) { /* batch fails here; the next one starts after this row */
            cv_element_clear(&q->e);
            bundle_drop(it);
            it->resync = q->pos == UINT64_MAX;
            it->expect = q->pos + 1;
            publish(it);
            return s;
        }
        it->brows++;
        it->expect = q->pos + 1;
    }
    int64_t rows = it->brows;
    it->brows = 0;
    publish(it);
    if (rows == 0 || (rows < p->batch_size && p->drop_remainder)) {
        bundle_drop(it);
        *end = true;
        return CV_STATUS_OK;
    }
    it->bundle_cap = 0;
    return cv_batch_stack(&it->bundle, rows, out, it->out_alloc); /* takes the bundle */
}

static CvStatus group_add(MapBatchIterator *it, MbPiece *piece)
{
    if (it->ngroup == it->group_cap) {
        int cap = it->group_cap ? 2 * it->group_cap : 16;
        MbPiece **grown = realloc(it->group, (size_t)cap * sizeof(MbPiece *));
        if (!grown) {
            cv_buffer_unref(&piece->buf);
            return cv_error_nomem();
        }
        it->group = grown;
        it->group_cap = cap;
    }
    it->group[it->ngroup++] = piece;
    return CV_STATUS_OK;
}

/* The fast path's result: the batch's tensors. */
static CvStatus take_batch(MapBatchIterator *it, CvElement *out)
{
    MbBatch *b = it->group[0]->batch;
    CvStatus s = cv_element_init(out, b->ncomp);
    if (s)
        return s;
    for (uint32_t c = 0; c < b->ncomp; c++)
        cv_tensor_copy_ref(&out->t[c], &b->t[c]);
    it->expect += (uint64_t)b->planned;
    for (int i = 0; i < it->ngroup; i++) /* the last one frees b */
        cv_buffer_unref(&it->group[i]->buf);
    it->ngroup = 0;
    return CV_STATUS_OK;
}

static CvStatus mb_advance(MapBatchIterator *it, bool blocking, CvElement *out, bool *end,
                           bool *would_block)
{
    const MapBatchParams *p = it->staged.base.dataset->params;
    *end = false;
    *would_block = false;
    marks_start(it);
    for (;;) {
        if (it->brows > 0 || it->qhead < it->qlen)
            return gather(it, blocking, out, end, would_block);
        MbPiece *piece;
        CvStatus lost;
        CvStatus s = next_piece(it, blocking, &piece, &lost, would_block);
        if (s || *would_block)
            return s;
        if (lost || (!piece && it->ngroup > 0)) {
            /* A piece of the batch being collected was dropped (or the
             * stage ended inside it): replay what is there. */
            if (!(s = queue_group(it)) && lost)
                s = queue_push(it, lost, NULL, UINT64_MAX);
            if (s)
                return s;
            continue;
        }
        if (!piece)
            return gather(it, blocking, out, end, would_block); /* the end */
        if (it->ngroup == 0) {
            if (it->resync) {
                it->expect = piece->pos;
                it->resync = false;
                publish(it);
            }
            if (piece->r0 != 0 || piece->batch->first != it->expect ||
                piece->batch->planned != p->batch_size) {
                if ((s = queue_piece(it, piece)))
                    return s;
                continue;
            }
        } else if (piece->batch != it->group[0]->batch) {
            it->peek = piece; /* the budget dropped the rest of the collected batch */
            if ((s = queue_group(it)))
                return s;
            continue;
        }
        if ((s = group_add(it, piece)))
            return s;
        if (!piece->last)
            continue;
        bool fast = atomic_load_explicit(&piece->batch->layout, memory_order_acquire) == 1;
        int64_t rows = 0;
        for (int i = 0; i < it->ngroup && fast; i++) {
            fast = it->group[i]->clean;
            rows += it->group[i]->n;
        }
        if (fast && rows == p->batch_size)
            return take_batch(it, out);
        if ((s = queue_group(it)))
            return s;
    }
}

static CvStatus mb_next(CvIterator *base, CvElement *out, bool *end)
{
    bool would_block = false;
    return mb_advance((MapBatchIterator *)base, true, out, end, &would_block);
}

static CvStatus mb_try_next(CvIterator *base, CvElement *out, bool *end, bool *would_block)
{
    MapBatchIterator *it = (MapBatchIterator *)base;
    if (!it->marking && !it->marks_error) { /* the first mark may wait: next()'s work */
        *end = false;
        *would_block = true;
        return CV_STATUS_OK;
    }
    return mb_advance(it, false, out, end, would_block);
}

static void mb_destroy(CvIterator *base)
{
    MapBatchIterator *it = (MapBatchIterator *)base;
    cv_staged_iterator_cancel(base);
    cv_stage_destroy(&it->staged.stage); /* waits for the running turns */
    cv_open_ahead_clear(&it->ahead);
    if (it->cur)
        cv_buffer_unref(&it->cur->buf);
    if (it->peek)
        cv_buffer_unref(&it->peek->buf);
    for (int i = 0; i < it->ngroup; i++)
        cv_buffer_unref(&it->group[i]->buf);
    free(it->group);
    for (size_t i = it->qhead; i < it->qlen; i++) {
        cv_status_free(it->queue[i].status);
        cv_element_clear(&it->queue[i].e);
    }
    free(it->queue);
    cv_element_clear(&it->bundle);
    for (int i = 0; i < it->marks_cap; i++)
        cv_state_writer_clear(&it->marks[i].w);
    free(it->marks);
    cv_status_free(it->marks_error);
    cv_staged_iterator_destroy(base);
}

static CvStatus mb_make_iterator(const CvDataset *ds, CvIterator **out)
{
    const MapBatchParams *p = ds->params;
    MapBatchIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    it->epoch = atomic_fetch_add(p->map.epochs, 1);
    cv_open_ahead_init(&it->ahead, p->map.fn);
    atomic_init(&it->align, 0);
    atomic_init(&it->row_ns, 0);
    CvStatus s = cv_iterator_make(ds->inputs[0]->inputs[0], &it->staged.input);
    int workers = p->map.num_workers;
    if (!s)
        s = cv_stage_init(&it->staged.stage, &mb_stage_ops, it, "MapAndBatch", workers,
                          p->map.tune_workers, 2 * workers, CV_STAGE_SLACK_UNITS * workers, true);
    if (!s) { /* a piece per unit: the window is two per worker, with slack for slow pieces */
        cv_stage_set_chunk(&it->staged.stage, 1, true);
        cv_stage_set_memory(&it->staged.stage, ds->memory,
                            "lower map's num_parallel_calls or batch's batch_size");
        if (p->map.tune_workers) /* AUTOTUNE: tiny pieces may run on the consumer's thread */
            cv_stage_allow_inline(&it->staged.stage, p->map.fn->traverse ? NULL : &it->staged.base,
                                  ds->inputs[0]->inputs[0]); /* a Python function starts parallel (map.c) */
    }
    if (s) {
        mb_destroy(&it->staged.base);
        return s;
    }
    *out = &it->staged.base;
    return CV_STATUS_OK;
}

static bool mb_build_outputs_in(CvIterator *base, const CvBufferAllocator *a)
{
    ((MapBatchIterator *)base)->out_alloc = a;
    return true;
}

const CvKernel cv_kernel_map_batch = {
    .name = "MapAndBatch",
    .make_iterator = mb_make_iterator,
    .cardinality = mb_cardinality,
    .free_dataset = mb_free,
    .next = mb_next,
    .cancel = cv_staged_iterator_cancel,
    .destroy = mb_destroy,
    .measure = cv_staged_iterator_measure,
    .try_next = mb_try_next,
    .save = mb_save,
    .restore = mb_restore,
    .build_outputs_in = mb_build_outputs_in,
};

CvStatus cv_map_batch_dataset(CvDataset *map, int64_t batch_size, bool drop_remainder,
                              CvDataset **out)
{
    CvStatus s = cv_check_batch_size(batch_size);
    CvMapFusion fusion;
    if (!s)
        s = cv_map_fusion(map, &fusion);
    if (!s && fusion.num_workers <= 0)
        s = cv_error(CV_INVALID_ARGUMENT, "map_batch: the map must run in parallel");
    if (s)
        return s;
    MapBatchParams *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    p->batch_size = batch_size;
    p->drop_remainder = drop_remainder;
    p->map = fusion;
    return cv_dataset_new(&cv_kernel_map_batch, &map, 1, p, true, out);
}
