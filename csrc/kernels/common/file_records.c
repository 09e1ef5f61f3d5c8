/* The iterator the record-file reader kernels share (see file_records.h):
 * open each filename of the input in turn, hand out its records, close it. */
#include "kernels/common/file_records.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct FileRecordsIterator {
    CvUnaryIterator base;
    CvRecordReader *reader; /* owned; NULL between files */
    bool done;              /* the input has ended (sticky) */
    atomic_bool cancelled;
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
    if (!st)
        atomic_init(&((FileRecordsIterator *)*out)->cancelled, false);
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

CvStatus cv_file_records_next(CvIterator *base, CvElement *out, bool *end)
{
    FileRecordsIterator *it = (FileRecordsIterator *)base;
    const CvReaderParams *params = base->dataset->params;
    for (;;) {
        if (atomic_load_explicit(&it->cancelled, memory_order_relaxed))
            return cv_error(CV_CANCELLED, "%s was cancelled", base->kernel->name);
        if (it->done) {
            *end = true;
            return CV_STATUS_OK;
        }
        if (!it->reader) {
            CvElement fe = {0, NULL};
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
            free(name);
            if (st)
                return st; /* the next call goes on with the next file */
        }
        CvTensor t;
        bool eof = false;
        CvStatus st = cv_record_reader_next(it->reader, &t, &eof);
        if (st || eof) {
            cv_record_reader_close(it->reader);
            it->reader = NULL;
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

void cv_file_records_cancel(CvIterator *base)
{
    FileRecordsIterator *it = (FileRecordsIterator *)base;
    atomic_store(&it->cancelled, true);
    cv_unary_iterator_cancel(base);
}

void cv_file_records_destroy(CvIterator *base)
{
    FileRecordsIterator *it = (FileRecordsIterator *)base;
    cv_record_reader_close(it->reader);
    it->reader = NULL;
    cv_unary_iterator_destroy(base);
}
