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
/* State: done, whether a file is open, and then its name and
 * CvRecordPosition; then the input's frame. */
CvStatus cv_file_records_save(CvIterator *it, CvStateWriter *w);
CvStatus cv_file_records_restore(CvIterator *it, CvStateReader *r);
void cv_file_records_cancel(CvIterator *it);
void cv_file_records_destroy(CvIterator *it);

#endif
