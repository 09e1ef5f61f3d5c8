/* The iterator the record-file reader kernels share (see file_records.h):
 * open each filename of the input in turn, hand out its records, close it.
 *
 * Exact resume: the input stands right after the open file's name as long
 * as the file is open (nothing is pulled from it meanwhile), so a save is
 * the input's state plus the open file's name and position
 * (CvRecordPosition); a restore restores the input, reopens the file and
 * seeks. Between files (and at the end) there is no file to save. */
#include "kernels/common/file_records.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct FileRecordsIterator {
    CvUnaryIterator base;
    CvRecordReader *reader; /* owned; NULL between files */
    char *name;             /* owned: the open file's name; NULL between files */
    bool done;              /* the input has ended (sticky) */
    atomic_bool cancelled;
    /* prepare() ran and no next() or skip() since: the file (or the end,
     * or `pending`) was reached early, and `before` holds the input's frame
     * from before that pull (its error: why the input cannot be saved), which
     * save() writes instead, as if prepare had not run. */
    bool prepared;
    CvStatus pending; /* owned: prepare's error, for the first next() */
    CvStateWriter before;
} FileRecordsIterator;

void cv_file_records_free_params(CvDataset *ds)
{
    free(ds->params);
}

CvStatus cv_file_records_dataset(const CvKernel *kernel, CvDataset *input,
                                 const CvReaderParams *params, CvDataset **out)
{
    CvStatus st = cv_reader_params_check(params);
    if (st)
        return st;
    CvReaderParams *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = *params;
    return cv_dataset_new(kernel, &input, 1, p, false, out);
}

CvStatus cv_file_records_make_iterator(const CvDataset *ds, CvIterator **out)
{
    CvStatus st = cv_unary_iterator_new(ds, sizeof(FileRecordsIterator), out);
    if (!st) {
        atomic_init(&((FileRecordsIterator *)*out)->cancelled, false);
        cv_state_writer_init(&((FileRecordsIterator *)*out)->before);
    }
    return st;
}

/* The filename in a scalar string element, as a new NUL-terminated string. */
static CvStatus filename_of(const CvElement *e, char **out)
{
    if (e->n != 1 || e->t[0].dtype != CV_STRING || e->t[0].rank != 0)
        return cv_error(CV_INVALID_ARGUMENT, "a file reader's input must be scalar strings (filenames)");
    const CvStringRef *ref = (const CvStringRef *)e->t[0].data;
    const char *p = cv_string_data(&e->t[0], ref);
    if (memchr(p, '\0', ref->length))
        return cv_error(CV_INVALID_ARGUMENT, "a filename contains a NUL byte");
    char *name = malloc(ref->length + 1);
    if (!name)
        return cv_error_nomem();
    memcpy(name, p, ref->length);
    name[ref->length] = '\0';
    *out = name;
    return CV_STATUS_OK;
}

/* Pull the next filename and open it (it->reader, it->name), or *end (the
 * input ended: it->done). An error belongs to that file's position. */
static CvStatus open_next_file(FileRecordsIterator *it, bool *end)
{
    const CvReaderParams *params = it->base.base.dataset->params;
    CvElement fe = {0};
    CvStatus st = cv_iterator_next(it->base.input, &fe, end);
    if (st)
        return st;
    if (*end) {
        it->done = true;
        return CV_STATUS_OK;
    }
    char *name = NULL;
    st = filename_of(&fe, &name);
    cv_element_clear(&fe);
    if (!st)
        st = cv_record_reader_open(name, params, &it->reader);
    if (st) {
        free(name);
        return st; /* the next call goes on with the next file */
    }
    it->name = name;
    return CV_STATUS_OK;
}

static void close_file(FileRecordsIterator *it)
{
    cv_record_reader_close(it->reader);
    it->reader = NULL;
    free(it->name);
    it->name = NULL;
}

void cv_file_records_prepare(CvIterator *base)
{
    FileRecordsIterator *it = (FileRecordsIterator *)base;
    if (it->prepared || it->reader || it->done)
        return;
    CvStatus st = cv_iterator_save(it->base.input, &it->before);
    if (st) { /* kept for a save() before the first next() */
        cv_state_writer_clear(&it->before);
        it->before.error = st;
    }
    bool end = false;
    it->pending = open_next_file(it, &end);
    it->prepared = true;
}

/* The first next() or skip() after prepare(): from now on the iterator is
 * where prepare put it. Returns prepare's error, if any (the caller's). */
static CvStatus end_prepared(FileRecordsIterator *it)
{
    CvStatus st = it->pending;
    it->pending = NULL;
    it->prepared = false;
    cv_state_writer_clear(&it->before);
    return st;
}

CvStatus cv_file_records_next(CvIterator *base, CvElement *out, bool *end)
{
    FileRecordsIterator *it = (FileRecordsIterator *)base;
    for (;;) {
        if (atomic_load_explicit(&it->cancelled, memory_order_relaxed))
            return cv_error(CV_CANCELLED, "%s was cancelled", base->kernel->name);
        if (it->prepared) {
            CvStatus st = end_prepared(it);
            if (st)
                return st;
        }
        if (it->done) {
            *end = true;
            return CV_STATUS_OK;
        }
        if (!it->reader) {
            CvStatus st = open_next_file(it, end);
            if (st || *end)
                return st;
        }
        CvTensor t;
        bool eof = false;
        CvStatus st = cv_record_reader_next(it->reader, &t, &eof);
        if (st || eof) {
            close_file(it);
            if (st)
                return st;
            continue;
        }
        st = cv_element_init(out, 1);
        if (st) {
            cv_tensor_clear(&t);
            return st;
        }
        out->t[0] = t;
        *end = false;
        return CV_STATUS_OK;
    }
}

CvStatus cv_file_records_skip(CvIterator *base, int64_t n, int64_t *skipped)
{
    FileRecordsIterator *it = (FileRecordsIterator *)base;
    *skipped = 0;
    while (*skipped < n) {
        if (atomic_load_explicit(&it->cancelled, memory_order_relaxed))
            return cv_error(CV_CANCELLED, "%s was cancelled", base->kernel->name);
        if (it->prepared) {
            CvStatus st = end_prepared(it);
            if (st)
                return st;
        }
        if (it->done)
            return CV_STATUS_OK;
        bool end = false;
        CvStatus st = CV_STATUS_OK;
        if (!it->reader && ((st = open_next_file(it, &end)) || end))
            return st;
        uint64_t k = 0;
        bool eof = false;
        st = cv_record_reader_skip(it->reader, (uint64_t)(n - *skipped), &k, &eof, &it->cancelled);
        *skipped += (int64_t)k;
        if (st || eof)
            close_file(it);
        if (st)
            return st;
    }
    return CV_STATUS_OK;
}

/* -- exact resume, shared with kernels/csv.c ------------------------------- */

CvStatus cv_file_resume_save(CvIterator *it, CvStateWriter *w, const CvFileResume *how, bool done,
                             const char *name)
{
    cv_state_put_i64(w, done);
    cv_state_put_i64(w, name != NULL);
    if (name) {
        cv_state_put_bytes(w, name, strlen(name));
        how->put_position(it, w);
    }
    return cv_iterator_save(((CvUnaryIterator *)it)->input, w);
}

CvStatus cv_file_resume_restore(CvIterator *it, CvStateReader *r, const CvFileResume *how,
                                void *position, bool *done)
{
    bool saved_done = false, open = false;
    const void *name = NULL;
    size_t name_len = 0;
    char what[96];
    *done = false;
    CvStatus st = cv_state_get_bool(r, &saved_done);
    if (!st)
        st = cv_state_get_bool(r, &open);
    if (!st && open && saved_done) {
        snprintf(what, sizeof(what), "a finished %s with an open file", how->reader);
        st = cv_state_corrupt(what);
    }
    if (!st && open && !(st = cv_state_get_bytes(r, &name, &name_len)) &&
        (name_len == 0 || memchr(name, '\0', name_len))) {
        snprintf(what, sizeof(what), "a %s's filename is empty or holds a NUL byte", how->reader);
        st = cv_state_corrupt(what);
    }
    if (!st && open)
        st = how->get_position(r, position);
    if (!st)
        st = cv_iterator_restore(((CvUnaryIterator *)it)->input, r);
    if (st || !open) {
        *done = !st && saved_done;
        return st;
    }
    char *path = malloc(name_len + 1);
    if (!path)
        return cv_error_nomem();
    memcpy(path, name, name_len);
    path[name_len] = '\0';
    return how->reopen(it, path, position);
}

/* -- the record readers' resume ---------------------------------------------- */

static void put_record_position(const CvIterator *base, CvStateWriter *w)
{
    CvRecordPosition pos;
    cv_record_reader_position(((const FileRecordsIterator *)base)->reader, &pos);
    cv_state_put_u64(w, pos.offset);
    cv_state_put_u64(w, pos.index);
    cv_state_put_u64(w, pos.file_size);
    cv_state_put_i64(w, pos.mtime_ns);
    cv_state_put_u64(w, pos.flags);
}

static CvStatus get_record_position(CvStateReader *r, void *position)
{
    CvRecordPosition *pos = position;
    CvStatus st = cv_state_get_u64(r, &pos->offset);
    if (!st)
        st = cv_state_get_u64(r, &pos->index);
    if (!st)
        st = cv_state_get_u64(r, &pos->file_size);
    if (!st)
        st = cv_state_get_i64(r, &pos->mtime_ns);
    if (!st)
        st = cv_state_get_u64(r, &pos->flags);
    return st;
}

static CvStatus reopen_records(CvIterator *base, char *path, const void *position)
{
    FileRecordsIterator *it = (FileRecordsIterator *)base;
    it->name = path;
    CvStatus st = cv_record_reader_open(path, base->dataset->params, &it->reader);
    if (!st)
        st = cv_record_reader_seek(it->reader, position);
    if (st)
        close_file(it);
    return st;
}

static const CvFileResume record_resume = {
    .reader = "file reader",
    .put_position = put_record_position,
    .get_position = get_record_position,
    .reopen = reopen_records,
};

CvStatus cv_file_records_save(CvIterator *base, CvStateWriter *w)
{
    FileRecordsIterator *it = (FileRecordsIterator *)base;
    if (it->prepared) { /* as cv_file_resume_save between files, the input as it was */
        if (it->before.error)
            return cv_status_copy(it->before.error);
        cv_state_put_i64(w, 0);
        cv_state_put_i64(w, 0);
        cv_state_put_raw(w, it->before.data, it->before.len);
        return CV_STATUS_OK;
    }
    return cv_file_resume_save(base, w, &record_resume, it->done, it->reader ? it->name : NULL);
}

CvStatus cv_file_records_restore(CvIterator *base, CvStateReader *r)
{
    FileRecordsIterator *it = (FileRecordsIterator *)base;
    CvRecordPosition pos = {0};
    if (it->prepared) { /* undo prepare: no file, and an input that was never pulled */
        cv_status_free(end_prepared(it));
        close_file(it);
        it->done = false;
        cv_iterator_destroy(it->base.input);
        it->base.input = NULL;
        CvStatus st = cv_iterator_make(base->dataset->inputs[0], &it->base.input);
        if (st)
            return st;
    }
    return cv_file_resume_restore(base, r, &record_resume, &pos, &it->done);
}

void cv_file_records_cancel(CvIterator *base)
{
    FileRecordsIterator *it = (FileRecordsIterator *)base;
    atomic_store(&it->cancelled, true);
    cv_unary_iterator_cancel(base);
}

void cv_file_records_destroy(CvIterator *base)
{
    FileRecordsIterator *it = (FileRecordsIterator *)base;
    cv_status_free(end_prepared(it));
    close_file(it);
    cv_unary_iterator_destroy(base);
}
