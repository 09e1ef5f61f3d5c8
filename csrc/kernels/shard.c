/* shard(num_shards, index): every num_shards-th element, starting at
 * `index`.
 *
 * Positions follow tf.data's ShardDataset exactly, errors included: each
 * next() skips ahead to the shard's next position and takes one element. An
 * input error while skipping is returned and the elements skipped in that
 * call are not counted (tf.data adds the skipped count only when the skip
 * succeeds), so the following call skips them again from the new position;
 * an error on the taken element is returned without counting it.
 * num_shards == CV_SHARD_HINT is accepted for tf.data compatibility but
 * cannot be iterated (it means "let tf.distribute decide").
 *
 * The gaps are passed with cv_iterator_skip (as tf.data's Skip), so an
 * indexed TFRecord reader seeks over them. State: the input position and
 * whether the input ended, then the input's state.
 */
#include <stdlib.h>

#include "kernels/kernels.h"

typedef struct {
    int64_t num_shards;
    int64_t index;
} ShardParams;

typedef struct {
    CvUnaryIterator base;
    int64_t next_index; /* input position, as tf.data counts it */
    bool done;
} ShardIterator;

static void shard_free(CvDataset *ds)
{
    free(ds->params);
}

static int64_t shard_cardinality(const CvDataset *ds)
{
    const ShardParams *p = ds->params;
    int64_t n = cv_dataset_cardinality(ds->inputs[0]);
    if (n == CV_INFINITE_CARDINALITY || n == CV_UNKNOWN_CARDINALITY)
        return n;
    /* tf.data's formula, also for the hint (whose count means nothing). */
    return n / p->num_shards + (p->index < n % p->num_shards ? 1 : 0);
}

static CvStatus shard_make_iterator(const CvDataset *ds, CvIterator **out)
{
    if (((const ShardParams *)ds->params)->num_shards == CV_SHARD_HINT)
        return cv_error(CV_FAILED_PRECONDITION,
                        "`Dataset.shard(SHARD_HINT, ...)` can only be used with tf.distribute's "
                        "auto-sharding; conveyor has no such policy: pass the number of shards.");
    return cv_unary_iterator_new(ds, sizeof(ShardIterator), out);
}

static CvStatus shard_next(CvIterator *base, CvElement *out, bool *end)
{
    ShardIterator *it = (ShardIterator *)base;
    const ShardParams *p = base->dataset->params;
    *end = false;
    if (it->done) {
        *end = true;
        return CV_STATUS_OK;
    }
    int64_t to_skip = (p->index - it->next_index) % p->num_shards;
    if (to_skip < 0)
        to_skip += p->num_shards;
    int64_t skipped = 0;
    CvStatus s = cv_iterator_skip(it->base.input, to_skip, &skipped);
    if (s && (s->code == CV_INTERRUPTED || s->code == CV_CANCELLED))
        it->next_index += skipped; /* not an element: keep the position exact */
    if (s)
        return s;
    if (skipped < to_skip) {
        it->done = true;
        *end = true;
        return CV_STATUS_OK;
    }
    it->next_index += to_skip;
    s = cv_iterator_next(it->base.input, out, end);
    if (s)
        return s;
    if (*end)
        it->done = true;
    else
        it->next_index++;
    return CV_STATUS_OK;
}

static CvStatus shard_save(CvIterator *base, CvStateWriter *w)
{
    ShardIterator *it = (ShardIterator *)base;
    cv_state_put_i64(w, it->next_index);
    cv_state_put_i64(w, it->done);
    return cv_unary_iterator_save(base, w);
}

static CvStatus shard_restore(CvIterator *base, CvStateReader *r)
{
    ShardIterator *it = (ShardIterator *)base;
    const ShardParams *p = base->dataset->params;
    /* Headroom: the next skip (< num_shards) and take cannot overflow it. */
    CvStatus s = cv_state_get_range(r, "Shard's input position", 0, INT64_MAX - p->num_shards,
                                    &it->next_index);
    if (!s)
        s = cv_state_get_bool(r, &it->done);
    return s ? s : cv_unary_iterator_restore(base, r);
}

const CvKernel cv_kernel_shard = {
    .name = "Shard",
    .make_iterator = shard_make_iterator,
    .cardinality = shard_cardinality,
    .free_dataset = shard_free,
    .next = shard_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = cv_unary_iterator_destroy,
    .save = shard_save,
    .restore = shard_restore,
};

CvStatus cv_shard_dataset(CvDataset *input, int64_t num_shards, int64_t index, CvDataset **out)
{
    if (num_shards <= 0 && num_shards != CV_SHARD_HINT)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Number of shards must be greater than zero (currently num_shards = %lld).",
                        (long long)num_shards);
    if ((index < 0 || index >= num_shards) && num_shards != CV_SHARD_HINT)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Index must be between 0 and %lld (currently index = %lld).",
                        (long long)num_shards - 1, (long long)index);
    ShardParams *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = (ShardParams){num_shards, index};
    return cv_dataset_new(&cv_kernel_shard, &input, 1, p, false, out);
}
