/* The dataset and iterator of the record-file reader kernels (tfrecord.c,
 * text_line.c, fixed_length_record.c): a flat_map over the filenames of the
 * input (scalar strings) that opens one io/record_reader.h reader per file
 * and yields each record as a scalar string. A non-EOF error is returned at
 * its position and the next call goes on with the next file, as tf.data
 * does. The three kernels differ only in their reader params, so each one's
 * vtable points at these functions. Never needs the GIL.
 *
 * Exact resume saves the input's state, the open file's name and the
 * reader's CvRecordPosition: a restore reopens the file and seeks (an
 * uncompressed file in O(1), a compressed one by inflating up to the
 * offset), and refuses a file that changed since the save.
 */
#ifndef CV_FILE_RECORDS_H
#define CV_FILE_RECORDS_H

#include "core/dataset.h"
#include "io/record_reader.h"

/* Checks and copies the params; the new dataset has `input` (scalar strings,
 * borrowed) as input. */
CvStatus cv_file_records_dataset(const CvKernel *kernel, CvDataset *input,
                                 const CvReaderParams *params, CvDataset **out);
void cv_file_records_free_params(CvDataset *ds);

CvStatus cv_file_records_make_iterator(const CvDataset *ds, CvIterator **out);
CvStatus cv_file_records_next(CvIterator *it, CvElement *out, bool *end);
/* Skip: seeks with a TFRecord index (cv_record_reader_skip), file by file. */
CvStatus cv_file_records_skip(CvIterator *it, int64_t n, int64_t *skipped);
/* Pull the first filename and open that file (its read-ahead starts); an
 * error is kept for the first next(). Until the first next() or skip(), a
 * save is the state from before (the input's frame from before the pull),
 * and a restore closes the file and makes the input afresh. */
void cv_file_records_prepare(CvIterator *it);
/* State: cv_file_resume_save's, the position a CvRecordPosition. */
CvStatus cv_file_records_save(CvIterator *it, CvStateWriter *w);
CvStatus cv_file_records_restore(CvIterator *it, CvStateReader *r);
void cv_file_records_cancel(CvIterator *it);
void cv_file_records_destroy(CvIterator *it);

/* Exact resume of any reader that reads the files named by its input one
 * after the other (the record readers above, kernels/csv.c): the input
 * stands right after the open file's name as long as the file is open, so
 * the state is `done`, whether a file is open, and if one is, its name and
 * the kernel's position in it; then the input's frame. A restore restores
 * the input, then reopens the file and goes to the position. `it` is a
 * CvUnaryIterator. */
typedef struct CvFileResume {
    const char *reader; /* "file reader", "CSV reader": named in corrupt-state messages */
    /* The open file's position, after its name. */
    void (*put_position)(const CvIterator *it, CvStateWriter *w);
    /* Reads it into *position (the caller's scratch, see below). */
    CvStatus (*get_position)(CvStateReader *r, void *position);
    /* Opens `path` (owned by the iterator from now on, as its open file's
     * name) and goes to `position`; on error leaves no file open. */
    CvStatus (*reopen)(CvIterator *it, char *path, const void *position);
} CvFileResume;

/* name: the open file's, or NULL between files (and at the end). */
CvStatus cv_file_resume_save(CvIterator *it, CvStateWriter *w, const CvFileResume *how, bool done,
                             const char *name);
/* On a new iterator. `position`: scratch for how->get_position. *done: the
 * saved `done` once restored (false on error). */
CvStatus cv_file_resume_restore(CvIterator *it, CvStateReader *r, const CvFileResume *how,
                                void *position, bool *done);

#endif
