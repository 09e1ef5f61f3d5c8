/* The TFRecord writer: records framed as TFRecord files frame them (length,
 * masked CRC-32C of the length, data, masked CRC-32C of the data), optionally
 * deflated (ZLIB or GZIP). What tf.io.TFRecordWriter is built on. Plain C.
 */
#ifndef CV_RECORD_WRITER_H
#define CV_RECORD_WRITER_H

#include <stddef.h>

#include "core/status.h"
#include "io/compression.h"

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
/* Push buffered bytes to the file (a zlib partial flush when compressing).
 * `path` is any URL of the file-system layer (io/fs.h); the file appears
 * under its name, whole, at close (before: under a temporary name). */
CvStatus cv_tfrecord_writer_flush(CvTFRecordWriter *w);
/* Finish the stream and close the file; later writes fail with FAILED_PRECONDITION.
 * Idempotent. */
CvStatus cv_tfrecord_writer_close(CvTFRecordWriter *w);
void cv_tfrecord_writer_free(CvTFRecordWriter *w); /* closes (ignoring errors) and frees; NULL-safe */

#endif
