/* cache(filename): the first complete pass over the input is kept, and later
 * passes replay it without running the input.
 *
 * MEMORY (filename ""). A pass that reaches the end of its input (or has
 * produced as many elements as the input's known cardinality, as tf.data
 * decides) publishes what it recorded; iterators created afterwards replay
 * it. Elements are recorded by reference: their buffers are shared, never
 * copied. The recording (kernels/common/recording.h) is a list of runs per
 * component: consecutive elements that are slices of one buffer with a
 * constant stride and the same shape take one 32-byte run, so caching a
 * from_tensor_slices source costs next to nothing beyond the source itself.
 * As in tf.data, iterators created while no pass has completed each read
 * the input and record on their own; the first to complete publishes, the
 * others' recordings are dropped.
 *
 * FILE (see io/cache_file.h). An iterator reads the committed file when
 * there is one, and then never opens its input's iterator. Otherwise, at its
 * first next(), it takes the writers' lock and streams the elements into a
 * temporary file that is committed (fsync + rename) when the pass completes.
 * Without the lock (another iterator or process is writing the same cache)
 * it passes the input's elements through and writes nothing.
 *
 * A pass that stops early is discarded: its recording freed, its temporary
 * file removed. The user is told once per store (hooks.warn), except when a
 * take() above ended the pass on purpose (cv_stop_reason): a preview such as
 * ds.cache().take(5) is silent, the same take ending every epoch of a
 * repeat() is not (that cache would never fill).
 *
 * Errors from the input are passed on and not recorded, as in tf.data. A
 * cache file that cannot be written (disk full, permissions) is reported
 * once and the pass goes on uncached.
 *
 * RESUME (save/restore, see "exact resume" below): a state holds a position,
 * never the cached elements: the file's element index, the replay's index,
 * or a pass over the input (its position and where it started).
 *
 * Threads: the store's published recording is immutable, so any number of
 * iterators replay it without locks; `mu` only orders publishing. next()
 * and destroy() of one iterator never overlap; cancel() may come from any
 * thread and only sets a flag and cancels the input.
 */
#include "kernels/cache.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ram_budget.h"
#include "core/thread.h"
#include "io/record_reader.h"
#include "kernels/common/recording.h"
#include "kernels/kernels.h"

/* ------------------------------------------------------------------ store */

struct CvCacheStore {
    atomic_long refcount;
    char *path;      /* "<filename>.cvcache"; NULL for memory */
    char *lock_path; /* "<path>.lock" */
    CvCacheHooks hooks;
    atomic_bool warned_partial;
    atomic_bool warned_write;
    atomic_bool warned_torn;
    int on_truncation; /* CvTruncation; set before the store is shared */
    pthread_mutex_t mu; /* orders publishing; guards refill */
    _Atomic(CvRecording *) complete;
    /* Set by a restore that continues a pass without recording it (owned;
     * NULL: none): the input's state at the start of the saved pass. The
     * next recording pass starts its input there, so the cache holds the
     * saved pass's elements, as in a straight run. Cleared once a pass
     * completes the cache. */
    char *refill;
    size_t refill_len;
};

CvStatus cv_cache_store_new(const char *filename, CvCacheHooks hooks, CvCacheStore **out)
{
    CvCacheStore *st = calloc(1, sizeof(*st));
    if (!st) {
        if (hooks.release)
            hooks.release(hooks.ctx);
        return cv_error_nomem();
    }
    st->hooks = hooks;
    if (st->hooks.progress_delay_ns < 0)
        st->hooks.progress_delay_ns = CV_CACHE_PROGRESS_DELAY_NS;
    atomic_init(&st->refcount, 1);
    pthread_mutex_init(&st->mu, NULL);
    if (filename && filename[0]) {
        size_t n = strlen(filename) + sizeof(CV_CACHE_FILE_SUFFIX) + 8;
        st->path = malloc(n);
        st->lock_path = malloc(n);
        if (!st->path || !st->lock_path) {
            cv_cache_store_unref(st);
            return cv_error_nomem();
        }
        snprintf(st->path, n, "%s%s", filename, CV_CACHE_FILE_SUFFIX);
        snprintf(st->lock_path, n, "%s.lock", st->path);
    }
    *out = st;
    return CV_STATUS_OK;
}

CvCacheStore *cv_cache_store_ref(CvCacheStore *st)
{
    atomic_fetch_add_explicit(&st->refcount, 1, memory_order_relaxed);
    return st;
}

void cv_cache_store_unref(CvCacheStore *st)
{
    if (!st || atomic_fetch_sub_explicit(&st->refcount, 1, memory_order_acq_rel) != 1)
        return;
    cv_recording_free(atomic_load(&st->complete));
    free(st->refill);
    if (st->hooks.release)
        st->hooks.release(st->hooks.ctx);
    pthread_mutex_destroy(&st->mu);
    free(st->path);
    free(st->lock_path);
    free(st);
}

void cv_cache_store_set_truncation(CvCacheStore *st, int on_truncation)
{
    st->on_truncation = on_truncation;
}

const char *cv_cache_store_path(const CvCacheStore *st)
{
    return st->path;
}

CvStatus cv_cache_store_file_structure(const CvCacheStore *st, char **blob, size_t *len)
{
    CvCacheReader *r = NULL;
    CvStatus s = st->path ? cv_cache_reader_open(st->path, &r) : CV_STATUS_OK;
    *blob = NULL;
    *len = 0;
    if (s && s->code == CV_NOT_FOUND) { /* nothing committed yet */
        cv_status_free(s);
        return CV_STATUS_OK;
    }
    if (s || !r)
        return s;
    const CvCacheFileInfo *info = cv_cache_reader_info(r);
    if (info->structure_len && !(*blob = malloc(info->structure_len)))
        s = cv_error_nomem();
    else if (info->structure_len)
        memcpy(*blob, info->structure, (*len = info->structure_len));
    cv_cache_reader_close(r);
    return s;
}

static void warn_once(CvCacheStore *st, atomic_bool *flag, const char *fmt, ...) CV_PRINTF(3, 4);

static void warn_once(CvCacheStore *st, atomic_bool *flag, const char *fmt, ...)
{
    if (!st->hooks.warn || atomic_exchange(flag, true))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    st->hooks.warn(st->hooks.ctx, msg);
}

/* ---------------------------------------------------------------- kernel */

typedef struct {
    CvCacheStore *store;     /* one reference */
    CvComponentSpec *expected; /* NULL when the element spec was not known */
    uint32_t n_expected;
} CacheParams;

enum {
    MEM_READ,     /* replaying the published recording */
    MEM_WRITE,    /* reading the input, recording */
    FILE_READ,    /* reading the committed file */
    FILE_PENDING, /* no committed file: decide at the first next() */
    FILE_WRITE,   /* reading the input, writing the temporary file */
    PASS_THROUGH  /* reading the input only */
};

typedef struct {
    CvIterator base;
    int mode;
    CvIterator *input; /* owned; the write and pass-through modes */
    atomic_bool cancelled;
    bool recording; /* this pass still records (MEM_WRITE / FILE_WRITE) */
    /* MEM_WRITE / MEM_READ */
    CvRecording *temp;
    const CvRecording *replay;
    CvRecordingCursor *cursors;
    int64_t replayed;
    /* FILE_* */
    CvCacheReader *reader;
    CvCacheWriter *writer;
    int lock_fd;
    /* Exact resume. position: elements next() returned this pass. start:
     * the input's state before its first next() (owned; NULL: unknown), for
     * the modes that read the input. replaying: a restored replay, computed
     * again from the input (its errors were not recorded: drop them). */
    int64_t position;
    char *start;
    size_t start_len;
    bool replaying;
    bool just_saved; /* saved since the last next(): dropping it now is a checkpoint's exit */
    /* This pass. */
    int64_t produced;
    uint64_t bytes;
    int64_t total;
    int64_t started_ns, reported_ns;
    bool reporting;
} CacheIterator;

static CvCacheStore *store_of(const CacheIterator *it)
{
    return ((const CacheParams *)it->base.dataset->params)->store;
}

static void report(CacheIterator *it, int state)
{
    CvCacheStore *st = store_of(it);
    st->hooks.progress(st->hooks.ctx, (uint64_t)(uintptr_t)it, it->produced, it->bytes, it->total,
                       state);
}

static void progress_tick(CacheIterator *it)
{
    if (!store_of(it)->hooks.progress || (it->produced & 255) != 1)
        return;
    int64_t now = cv_now_ns();
    if (it->produced == 1) {
        it->started_ns = now;
        return;
    }
    if (it->reporting ? now - it->reported_ns < CV_CACHE_PROGRESS_PERIOD_NS
                      : now - it->started_ns < store_of(it)->hooks.progress_delay_ns)
        return;
    it->reporting = true;
    it->reported_ns = now;
    report(it, CV_CACHE_FILLING);
}

static void progress_end(CacheIterator *it, int state)
{
    if (it->reporting && store_of(it)->hooks.progress)
        report(it, state);
    it->reporting = false;
}

static void release_lock(CacheIterator *it)
{
    cv_cache_lock_release(store_of(it)->lock_path, it->lock_fd);
    it->lock_fd = -1;
}

static void warn_write_failure(CacheIterator *it, CvStatus s)
{
    CvCacheStore *st = store_of(it);
    warn_once(st, &st->warned_write,
              "Dataset.cache: could not write the cache file '%s' (%s: %s). This pass goes on "
              "with the input's elements and nothing is cached; the next pass tries again.",
              st->path, cv_code_name(s->code), s->message);
    cv_status_free(s);
}

/* Stop recording this pass (a failure): drop what was recorded. */
static void give_up(CacheIterator *it)
{
    cv_recording_free(it->temp);
    it->temp = NULL;
    cv_cache_writer_abort(it->writer);
    it->writer = NULL;
    release_lock(it);
    it->recording = false;
    progress_end(it, CV_CACHE_DISCARDED);
}

static char *copy_bytes(const void *p, size_t n)
{
    char *copy = malloc(n ? n : 1);
    if (copy && n)
        memcpy(copy, p, n);
    return copy;
}

/* The cache is complete: a pending refill is done with. */
static void clear_refill(CvCacheStore *st)
{
    pthread_mutex_lock(&st->mu);
    free(st->refill);
    st->refill = NULL;
    st->refill_len = 0;
    pthread_mutex_unlock(&st->mu);
}

/* The pass is complete: publish the recording or commit the file. */
static void finish_pass(CacheIterator *it)
{
    CvCacheStore *st = store_of(it);
    if (!it->recording)
        return;
    it->recording = false;
    if (it->mode == MEM_WRITE) {
        if (it->start) /* a copy: this iterator can still be saved, at its end */
            it->temp->start = copy_bytes(it->start, it->start_len);
        if (it->temp->start)
            it->temp->start_len = it->start_len;
        pthread_mutex_lock(&st->mu);
        if (!atomic_load_explicit(&st->complete, memory_order_relaxed)) {
            atomic_store_explicit(&st->complete, it->temp, memory_order_release);
            it->temp = NULL;
        }
        pthread_mutex_unlock(&st->mu);
        clear_refill(st);
        cv_recording_free(it->temp); /* another iterator published first */
        it->temp = NULL;
    } else {
        char *blob = NULL;
        size_t len = 0;
        if (st->hooks.describe)
            st->hooks.describe(st->hooks.ctx, &blob, &len);
        CvStatus s = cv_cache_writer_commit(it->writer, blob, len);
        it->writer = NULL;
        free(blob);
        release_lock(it);
        if (s) {
            warn_write_failure(it, s);
            progress_end(it, CV_CACHE_DISCARDED);
            return;
        }
        clear_refill(st);
    }
    progress_end(it, CV_CACHE_DONE);
}

/* The pass stopped before its end: drop it, and tell the user unless a
 * take() ended it on purpose or another pass has completed the cache. */
static void discard_pass(CacheIterator *it)
{
    CvCacheStore *st = store_of(it);
    int64_t produced = it->produced;
    bool memory = it->mode == MEM_WRITE;
    give_up(it);
    if (produced == 0)
        return;
    if (memory ? atomic_load_explicit(&st->complete, memory_order_acquire) != NULL
               : cv_cache_file_exists(st->path))
        return;
    CvStopReason why = cv_stop_reason();
    if (why == CV_STOP_TAKE || it->just_saved) /* a restore goes on with this pass */
        return;
    const char *what = memory ? "the elements it had cached in memory were discarded"
                              : "the partly written cache file was deleted";
    if (why == CV_STOP_TAKE_EPOCH)
        warn_once(st, &st->warned_partial,
                  "Dataset.cache() is followed by take(k) inside repeat(): every epoch stops "
                  "after %" PRId64 " element%s, before the end of the dataset being cached, so %s "
                  "and the cache never fills: each epoch runs the input pipeline again. Write "
                  "`dataset.take(k).cache().repeat()` to cache those k elements.",
                  produced, produced == 1 ? "" : "s", what);
    else
        warn_once(st, &st->warned_partial,
                  "Dataset.cache(): an iterator stopped after %" PRId64 " element%s, before the end "
                  "of the dataset being cached, so %s. Only a complete pass is kept (a truncated "
                  "cache would silently shorten every later epoch); the next pass computes the "
                  "elements again. To cache only the first k elements, write "
                  "`dataset.take(k).cache()`. (Shown once per dataset.)",
                  produced, produced == 1 ? "" : "s", what);
}

static void cache_free(CvDataset *ds)
{
    CacheParams *p = ds->params;
    cv_cache_store_unref(p->store);
    free(p->expected);
    free(p);
}

/* The store's hooks belong to this dataset's part of the graph only while
 * no one else (another dataset, an iterator, the binding's store handle)
 * holds the store. */
static int cache_traverse(const CvDataset *ds, CvVisit visit, void *arg)
{
    const CvCacheStore *st = ((const CacheParams *)ds->params)->store;
    if (!st->hooks.traverse || atomic_load(&((CvCacheStore *)st)->refcount) != 1)
        return 0;
    return st->hooks.traverse(st->hooks.ctx, visit, arg);
}

static int64_t cache_cardinality(const CvDataset *ds)
{
    return cv_dataset_cardinality(ds->inputs[0]);
}

static CvStatus open_input(CacheIterator *it)
{
    it->total = cv_dataset_cardinality(it->base.dataset->inputs[0]);
    return cv_iterator_make(it->base.dataset->inputs[0], &it->input);
}

/* Restore a new input iterator from a state of `len` bytes that must be
 * one whole frame. */
static CvStatus restore_input(CacheIterator *it, const void *state, size_t len)
{
    CvStateReader sub;
    cv_state_reader_init(&sub, state, len);
    CvStatus s = cv_iterator_restore(it->input, &sub);
    if (!s && sub.pos != sub.len)
        s = cv_state_corrupt("bytes are left after the cached pass's start");
    return s;
}

/* A pass that will record opens its input: at the store's refill, if a
 * restore left one (a refill that does not restore is dropped: the pass
 * starts afresh), and keeps where it started (it->start) for save(). An
 * input that cannot be saved leaves start NULL. */
static CvStatus begin_recording_pass(CacheIterator *it)
{
    CvCacheStore *st = store_of(it);
    CvStatus s = open_input(it);
    if (s)
        return s;
    pthread_mutex_lock(&st->mu);
    char *refill = st->refill ? copy_bytes(st->refill, st->refill_len) : NULL;
    size_t refill_len = st->refill_len;
    pthread_mutex_unlock(&st->mu);
    if (refill) {
        if (!(s = restore_input(it, refill, refill_len))) {
            it->start = refill;
            it->start_len = refill_len;
            return CV_STATUS_OK;
        }
        cv_status_free(s);
        free(refill);
        cv_iterator_destroy(it->input);
        it->input = NULL;
        if ((s = open_input(it)))
            return s;
    }
    CvStateWriter w;
    cv_state_writer_init(&w);
    s = cv_iterator_save(it->input, &w);
    if (!s) {
        it->start = w.data; /* handed over */
        it->start_len = w.len;
        w.data = NULL;
    }
    cv_status_free(s);
    cv_state_writer_clear(&w);
    return CV_STATUS_OK;
}

/* FILE_READ if the committed file is there and fits the expected spec. Sets
 * *found false (and returns OK) when there is no committed file, or (*torn)
 * a torn one that the store's on_truncation lets the pass compute again. */
static CvStatus open_reader(CacheIterator *it, bool *found, bool *torn)
{
    const CacheParams *p = it->base.dataset->params;
    CvCacheStore *st = p->store;
    *found = *torn = false;
    CvStatus s = cv_cache_reader_open(st->path, &it->reader);
    if (s && s->code == CV_NOT_FOUND) {
        cv_status_free(s);
        return CV_STATUS_OK;
    }
    uint64_t at;
    if (s && s->code == CV_DATA_LOSS && cv_cache_file_torn(st->path, &at)) {
        cv_status_free(s);
        if (st->on_truncation == CV_TRUNCATION_ERROR)
            return cv_error(CV_DATA_LOSS, "Dataset.cache: the cache file '%s' is truncated at byte "
                            "offset %" PRIu64 " (a torn tail: the file was cut short after it was "
                            "written). Delete it to compute the cache again.", st->path, at);
        if (st->on_truncation == CV_TRUNCATION_WARN && !atomic_exchange(&st->warned_torn, true))
            cv_warn(CV_WARNING_DATA_LOSS, "Dataset.cache: the cache file '%s' is truncated at byte "
                    "offset %" PRIu64 " (a torn tail: the file was cut short after it was "
                    "written); its elements are computed again from the input and the file is "
                    "replaced. Pass on_truncation=\"error\" to raise DataLossError instead.",
                    st->path, at);
        *torn = true;
        return CV_STATUS_OK;
    }
    if (!s && p->expected)
        s = cv_cache_check_spec(cv_cache_reader_info(it->reader), p->expected, p->n_expected,
                                p->store->path);
    if (s) {
        cv_cache_reader_close(it->reader);
        it->reader = NULL;
        return s;
    }
    *found = true;
    it->mode = FILE_READ;
    return CV_STATUS_OK;
}

/* FILE_PENDING at the first next(): read a file committed meanwhile, or
 * write one, or (another writer holds the lock) pass through. */
static CvStatus start_file_pass(CacheIterator *it)
{
    CvCacheStore *st = store_of(it);
    bool found, torn;
    CvStatus s = open_reader(it, &found, &torn);
    if (s || found)
        return s;
    it->mode = PASS_THROUGH;
    s = cv_cache_lock_try(st->lock_path, &it->lock_fd);
    if (s) {
        warn_write_failure(it, s);
        return CV_STATUS_OK;
    }
    if (it->lock_fd < 0)
        return CV_STATUS_OK; /* another writer */
    if (cv_cache_file_exists(st->path)) { /* committed since open_reader looked, or torn */
        if ((s = open_reader(it, &found, &torn)) || found || !torn) {
            release_lock(it);
            if (!s && !found)
                it->mode = PASS_THROUGH;
            return s;
        }
        /* Still torn, and ours to write: the commit replaces it. */
    }
    cv_cache_remove_stale_temps(st->path, NULL);
    s = cv_cache_writer_open(st->path, &it->writer);
    if (s) {
        release_lock(it);
        warn_write_failure(it, s);
        return CV_STATUS_OK;
    }
    it->mode = FILE_WRITE;
    it->recording = true;
    return CV_STATUS_OK;
}

static CvStatus cache_make_iterator(const CvDataset *ds, CvIterator **out)
{
    const CacheParams *p = ds->params;
    CvCacheStore *st = p->store;
    CacheIterator *it = cv_iterator_alloc(ds, sizeof(*it));
    if (!it)
        return cv_error_nomem();
    it->lock_fd = -1;
    it->total = -1;
    CvStatus s = CV_STATUS_OK;
    if (!st->path) {
        const CvRecording *done = atomic_load_explicit(&st->complete, memory_order_acquire);
        if (done) {
            it->mode = MEM_READ;
            it->replay = done;
            it->cursors = calloc(done->ncomp ? done->ncomp : 1, sizeof(CvRecordingCursor));
            if (!it->cursors)
                s = cv_error_nomem();
        } else {
            it->mode = MEM_WRITE;
            it->recording = true;
            it->temp = cv_recording_new(ds->memory);
            s = it->temp ? begin_recording_pass(it) : cv_error_nomem();
        }
    } else {
        bool found, torn;
        s = open_reader(it, &found, &torn);
        if (!s && !found) {
            it->mode = FILE_PENDING;
            s = begin_recording_pass(it);
        }
    }
    if (s) {
        it->recording = false;
        it->base.kernel->destroy(&it->base);
        return s;
    }
    *out = &it->base;
    return CV_STATUS_OK;
}

static CvStatus cancelled_error(void)
{
    return cv_error(CV_CANCELLED, "Cache: the iterator was cancelled");
}

static CvStatus next_element(CacheIterator *it, CvElement *out, bool *end)
{
    *end = false;
    if (it->mode == MEM_READ) {
        if (atomic_load_explicit(&it->cancelled, memory_order_relaxed))
            return cancelled_error();
        if (it->replayed >= it->replay->count) {
            *end = true;
            return CV_STATUS_OK;
        }
        CvStatus s = cv_recording_replay(it->replay, it->cursors, out);
        if (!s)
            it->replayed++;
        return s;
    }
    if (it->mode == FILE_PENDING) {
        CvStatus s = start_file_pass(it);
        if (s)
            return s;
    }
    if (it->mode == FILE_READ) {
        if (atomic_load_explicit(&it->cancelled, memory_order_relaxed))
            return cancelled_error();
        return cv_cache_reader_next(it->reader, out, end);
    }
    CvStatus s = cv_iterator_next(it->input, out, end);
    while (s && it->replaying && s->code != CV_CANCELLED && s->code != CV_INTERRUPTED) {
        cv_status_free(s); /* the replay this pass stands for has no errors */
        s = cv_iterator_next(it->input, out, end);
    }
    if (s || !it->recording)
        return s;
    if (*end) {
        finish_pass(it);
        return CV_STATUS_OK;
    }
    it->produced++;
    size_t bytes = cv_element_bytes(out);
    it->bytes += bytes;
    CvStatus r = it->mode == MEM_WRITE ? cv_recording_add(it->temp, out, bytes)
                                       : cv_cache_writer_append(it->writer, out);
    if (r) {
        if (it->mode == FILE_WRITE) {
            warn_write_failure(it, r);
        } else {
            CvCacheStore *st = store_of(it);
            warn_once(st, &st->warned_write,
                      "Dataset.cache(): could not keep the elements in memory (%s: %s). This pass "
                      "goes on with the input's elements and nothing is cached.",
                      cv_code_name(r->code), r->message);
            cv_status_free(r);
        }
        give_up(it);
        return CV_STATUS_OK;
    }
    if (it->total >= 0 && it->produced == it->total)
        finish_pass(it); /* all the elements there are (tf.data's rule too) */
    else
        progress_tick(it);
    return CV_STATUS_OK;
}

static CvStatus cache_next(CvIterator *base, CvElement *out, bool *end)
{
    CacheIterator *it = (CacheIterator *)base;
    CvStatus s = next_element(it, out, end);
    it->just_saved = false;
    if (!s && !*end)
        it->position++;
    return s;
}

/* -- exact resume ------------------------------------------------------------
 *
 * A state is one of three kinds. FILE: reading the committed file, at
 * element `position` (restored by reading past as many: the file must be
 * there). REPLAY: replaying the memory recording at `position`, with the
 * input's state at the start of the pass that recorded it. INPUT: a pass
 * over the input (recording, writing or passing through) at `position`,
 * with its start and the input's frame.
 *
 * A restored INPUT pass goes on from the input's position and records
 * nothing (what the saved iterator had recorded, or its temporary file, is
 * not in the state); a REPLAY restored where the recording is not (another
 * process) computes the pass again from its start, skipping `position`
 * elements. Either way the store keeps the pass's start as its refill: the
 * next pass that records starts its input there, so the cache gets the
 * saved pass's elements (a reshuffling shuffle below the cache included)
 * and later epochs replay what a straight run replays. */
enum { SAVED_INPUT = 0, SAVED_REPLAY = 1, SAVED_FILE = 2 };

static CvStatus cache_save(CvIterator *base, CvStateWriter *w)
{
    CacheIterator *it = (CacheIterator *)base;
    it->just_saved = true;
    if (it->mode == FILE_READ) {
        cv_state_put_i64(w, SAVED_FILE);
        cv_state_put_i64(w, it->position);
        return CV_STATUS_OK;
    }
    if (it->mode == MEM_READ) {
        if (!it->replay->start)
            return cv_error(CV_UNIMPLEMENTED, "the iterator of Cache cannot be saved: the pass "
                            "that filled the cache began where its input could not be saved, so "
                            "another process could not compute it again");
        cv_state_put_i64(w, SAVED_REPLAY);
        cv_state_put_i64(w, it->replayed);
        cv_state_put_bytes(w, it->replay->start, it->replay->start_len);
        return CV_STATUS_OK;
    }
    cv_state_put_i64(w, SAVED_INPUT);
    cv_state_put_i64(w, it->position);
    cv_state_put_i64(w, it->replaying);
    cv_state_put_i64(w, it->start != NULL);
    if (it->start)
        cv_state_put_bytes(w, it->start, it->start_len);
    return cv_iterator_save(it->input, w);
}

/* Turn a new iterator into a pass over the input that records nothing,
 * with a new input iterator to restore (the one make() opened may stand at
 * the store's refill already). */
static CvStatus pass_through(CacheIterator *it)
{
    cv_iterator_destroy(it->input);
    it->input = NULL;
    cv_cache_reader_close(it->reader);
    it->reader = NULL;
    free(it->cursors);
    it->cursors = NULL;
    it->replay = NULL;
    cv_recording_free(it->temp);
    it->temp = NULL;
    it->recording = false;
    it->mode = PASS_THROUGH;
    return open_input(it);
}

static CvStatus restore_file_position(CacheIterator *it, int64_t position)
{
    CvCacheStore *st = store_of(it);
    if (it->mode != FILE_READ)
        return cv_error(CV_FAILED_PRECONDITION, "Dataset.cache: the saved iterator was reading "
                        "the cache file '%s', which is not there now (or was found unusable); "
                        "restoring it needs that file", st->path);
    for (int64_t i = 0; i < position; i++) {
        CvElement e = {0};
        bool end = false;
        CvStatus s = cv_cache_reader_next(it->reader, &e, &end);
        if (s)
            return s;
        cv_element_clear(&e);
        if (end)
            return cv_error(CV_FAILED_PRECONDITION, "Dataset.cache: the cache file '%s' has %"
                            PRId64 " elements, fewer than the saved position %" PRId64 " (the "
                            "file was replaced)", st->path, i, position);
    }
    it->position = position;
    return CV_STATUS_OK;
}

/* Skip n elements of the input as a replay counts them (errors were not
 * recorded, so they do not count). */
static CvStatus skip_recorded(CacheIterator *it, int64_t n)
{
    while (n > 0) {
        int64_t skipped = 0;
        CvStatus s = cv_iterator_skip(it->input, n, &skipped);
        n -= skipped;
        if (s && (s->code == CV_CANCELLED || s->code == CV_INTERRUPTED))
            return s;
        if (s)
            cv_status_free(s);
        else if (n > 0)
            return cv_error(CV_FAILED_PRECONDITION, "Dataset.cache: computing the cached pass "
                            "again ended %" PRId64 " elements before the saved position: the "
                            "input does not repeat its pass from the same state", n);
    }
    return CV_STATUS_OK;
}

static CvStatus cache_restore(CvIterator *base, CvStateReader *r)
{
    CacheIterator *it = (CacheIterator *)base;
    CvCacheStore *st = store_of(it);
    int64_t kind = 0, position = 0;
    bool has_start = true, replaying = false;
    const void *start = NULL;
    size_t start_len = 0;
    CvStatus s = cv_state_get_range(r, "cache's state kind", SAVED_INPUT, SAVED_FILE, &kind);
    if (!s)
        s = cv_state_get_range(r, "cache's position", 0, INT64_MAX, &position);
    if (!s && kind == SAVED_FILE)
        return restore_file_position(it, position);
    if (!s && kind == SAVED_INPUT)
        s = cv_state_get_bool(r, &replaying);
    if (!s && kind == SAVED_INPUT)
        s = cv_state_get_bool(r, &has_start);
    if (!s && has_start)
        s = cv_state_get_bytes(r, &start, &start_len);
    if (s)
        return s;
    if (kind == SAVED_REPLAY && it->mode == MEM_READ) { /* the recording is here */
        if (position > it->replay->count)
            return cv_state_corrupt("cache's position is past the cached elements");
        for (int64_t i = 0; i < position; i++) /* cursors only: no element is made */
            for (uint32_t c = 0; c < it->replay->ncomp; c++) {
                CvRecordingCursor *cur = &it->cursors[c];
                if (++cur->offset == it->replay->cols[c].runs[cur->run].count) {
                    cur->run++;
                    cur->offset = 0;
                }
            }
        it->replayed = it->position = position;
        return CV_STATUS_OK;
    }
    char *kept = has_start ? copy_bytes(start, start_len) : NULL;
    char *refill = has_start ? copy_bytes(start, start_len) : NULL;
    if (has_start && (!kept || !refill))
        s = cv_error_nomem();
    if (!s)
        s = pass_through(it);
    if (!s && kind == SAVED_REPLAY) {
        it->replaying = true;
        if (!(s = restore_input(it, start, start_len)))
            s = skip_recorded(it, position);
    } else if (!s) {
        it->replaying = replaying;
        s = cv_iterator_restore(it->input, r);
    }
    if (s) {
        free(kept);
        free(refill);
        return s;
    }
    free(it->start);
    it->start = kept;
    it->start_len = start_len;
    it->position = position;
    bool complete = st->path ? cv_cache_file_exists(st->path)
                             : atomic_load_explicit(&st->complete, memory_order_acquire) != NULL;
    if (refill && !complete) {
        pthread_mutex_lock(&st->mu);
        free(st->refill);
        st->refill = refill;
        st->refill_len = start_len;
        pthread_mutex_unlock(&st->mu);
    } else {
        free(refill);
    }
    return CV_STATUS_OK;
}

static void cache_cancel(CvIterator *base)
{
    CacheIterator *it = (CacheIterator *)base;
    atomic_store(&it->cancelled, true);
    cv_iterator_cancel(it->input);
}

static void cache_destroy(CvIterator *base)
{
    CacheIterator *it = (CacheIterator *)base;
    if (it->recording)
        discard_pass(it);
    cv_iterator_destroy(it->input);
    cv_cache_reader_close(it->reader);
    cv_cache_writer_abort(it->writer);
    release_lock(it);
    cv_recording_free(it->temp);
    free(it->cursors);
    free(it->start);
    cv_iterator_free(base);
}

const CvKernel cv_kernel_cache = {
    .name = "Cache",
    .make_iterator = cache_make_iterator,
    .cardinality = cache_cardinality,
    .free_dataset = cache_free,
    .traverse = cache_traverse,
    .next = cache_next,
    .cancel = cache_cancel,
    .destroy = cache_destroy,
    .save = cache_save,
    .restore = cache_restore,
};

/* p->expected from the flat form (kernels.h); INVALID_ARGUMENT when the
 * ints do not make whole components. */
static CvStatus expected_from_ints(CacheParams *p, const int64_t *v, int64_t n)
{
    p->expected = calloc((size_t)(n > 0 ? n : 1), sizeof(CvComponentSpec)); /* >= components */
    if (!p->expected)
        return cv_error_nomem();
    for (int64_t i = 0; i < n; p->n_expected++) {
        CvComponentSpec *c = &p->expected[p->n_expected];
        int64_t rank = i + 1 < n ? v[i + 1] : -2;
        if (v[i] < 0 || v[i] >= CV_NUM_DTYPES || rank < -1 || rank > CV_MAX_RANK ||
            i + 2 + (rank > 0 ? rank : 0) > n)
            return cv_error(CV_INVALID_ARGUMENT, "cache: a bad expected component at %lld",
                            (long long)i);
        c->dtype = (CvDtype)v[i];
        c->rank = (int)rank;
        for (int k = 0; k < c->rank; k++)
            c->dims[k] = v[i + 2 + k];
        i += 2 + (rank > 0 ? rank : 0);
    }
    return CV_STATUS_OK;
}

CvStatus cv_cache_dataset(CvDataset *input, CvCacheStore *store, const int64_t *expected,
                          int64_t n_expected, CvDataset **out)
{
    CacheParams *p = calloc(1, sizeof(*p));
    if (!p)
        return cv_error_nomem();
    p->store = cv_cache_store_ref(store);
    CvStatus s = n_expected >= 0 ? expected_from_ints(p, expected, n_expected) : CV_STATUS_OK;
    if (s) {
        cache_free(&(CvDataset){.params = p});
        return s;
    }
    return cv_dataset_new(&cv_kernel_cache, &input, 1, p, false, out);
}
