/* Record files: a buffered (optionally inflating) input stream, the three
 * record readers of tf.data (TFRecord, text lines, fixed-length records), the
 * TFRecord writer, and the "records of each file in turn" iterator the
 * reader kernels share.
 *
 * Plain C; nothing here needs the GIL. Readers and streams belong to one
 * thread at a time. Offsets in messages count bytes of the uncompressed
 * stream, as TensorFlow reports them.
 */
#ifndef CV_RECORD_IO_H
#define CV_RECORD_IO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dataset.h"

typedef enum CvCompression {
    CV_COMPRESSION_NONE = 0,
    CV_COMPRESSION_ZLIB = 1, /* zlib stream, window bits 15 */
    CV_COMPRESSION_GZIP = 2, /* gzip stream (window bits 15 + 16); members may be concatenated */
} CvCompression;

#define CV_DEFAULT_READ_BUFFER (256u << 10)
#define CV_DEFAULT_MAX_RECORD_BYTES ((uint64_t)256 << 20)

typedef struct CvReadOptions {
    CvCompression compression;
    size_t buffer_size;        /* bytes per read (and per inflate output); 0 = default */
    uint64_t max_record_bytes; /* TFRecord: larger declared lengths are data loss; 0 = default */
} CvReadOptions;

/* An errno as TensorFlow reports file errors: "<path>; No such file or
 * directory" with the matching code (NOT_FOUND, PERMISSION_DENIED,
 * FAILED_PRECONDITION for a directory, ...); `what` (may be NULL) is appended. */
CvStatus cv_file_error(int e, const char *path, const char *what);

/* ---------------------------------------------------------------- readers */

typedef enum CvRecordFormat {
    CV_FORMAT_TFRECORD = 0,
    CV_FORMAT_TEXT_LINE = 1,
    CV_FORMAT_FIXED_LENGTH = 2,
} CvRecordFormat;

/* What a reader kernel keeps as its dataset params. */
typedef struct CvReaderParams {
    CvRecordFormat format;
    CvReadOptions options;
    uint64_t header_bytes, record_bytes, footer_bytes; /* fixed-length only */
} CvReaderParams;

typedef struct CvRecordReader CvRecordReader;

/* Open `path` for reading records. Errors: NOT_FOUND (missing), PERMISSION_DENIED,
 * FAILED_PRECONDITION (a directory), INVALID_ARGUMENT (a fixed-length file whose
 * size does not fit the layout), each naming the path. */
CvStatus cv_record_reader_open(const char *path, const CvReaderParams *params, CvRecordReader **out);
/* The next record as a scalar string tensor (owned by the caller), or *eof.
 * Errors (DATA_LOSS with "truncated record at <offset>" / "corrupted record at
 * <offset>", the path and the record index) leave the reader unusable: close it. */
CvStatus cv_record_reader_next(CvRecordReader *r, CvTensor *out, bool *eof);
void cv_record_reader_close(CvRecordReader *r); /* NULL-safe */

/* ------------------------------------------------- records of many files */

/* The iterator of a reader kernel: a flat_map over the filenames of its
 * input (scalar strings). A non-EOF error is returned at its position and the
 * next call goes on with the next file, as tf.data does. */
typedef struct CvFileRecordsIterator {
    CvUnaryIterator base;
    CvRecordReader *reader; /* owned; NULL between files */
    bool done;              /* the input has ended (sticky) */
    atomic_bool cancelled;
} CvFileRecordsIterator;

CvStatus cv_file_records_make_iterator(const CvDataset *ds, CvIterator **out);
CvStatus cv_file_records_next(CvIterator *it, CvElement *out, bool *end);
void cv_file_records_cancel(CvIterator *it);
void cv_file_records_destroy(CvIterator *it);
void cv_file_records_free_params(CvDataset *ds);
/* Checks and copies the params; the new dataset has `input` (scalar strings) as input. */
CvStatus cv_file_records_dataset(const CvKernel *kernel, CvDataset *input,
                                 const CvReaderParams *params, CvDataset **out);

/* ----------------------------------------------------------------- writer */

typedef struct CvRecordWriterOptions {
    CvCompression compression;
    int level;     /* zlib level, -1 = Z_DEFAULT_COMPRESSION (TensorFlow's default) */
    int mem_level; /* 1..9; TensorFlow uses 9 */
    int strategy;  /* Z_DEFAULT_STRATEGY = 0 */
} CvRecordWriterOptions;

typedef struct CvTFRecordWriter CvTFRecordWriter;

/* Create (truncate) `path`. The output is byte-identical to TensorFlow's
 * tf.io.TFRecordWriter for the same records, flushes and options. Calls are
 * serialized by an internal lock, so any thread may use the writer. */
CvStatus cv_tfrecord_writer_open(const char *path, const CvRecordWriterOptions *options,
                                 CvTFRecordWriter **out);
CvStatus cv_tfrecord_writer_write(CvTFRecordWriter *w, const void *data, size_t n);
/* Push buffered bytes to the file (a zlib partial flush when compressing). */
CvStatus cv_tfrecord_writer_flush(CvTFRecordWriter *w);
/* Finish the stream and close the file; later writes fail with FAILED_PRECONDITION.
 * Idempotent. */
CvStatus cv_tfrecord_writer_close(CvTFRecordWriter *w);
void cv_tfrecord_writer_free(CvTFRecordWriter *w); /* closes (ignoring errors) and frees; NULL-safe */

#endif
