/* Record framing of the three record-file formats of tf.data, read from one
 * file: TFRecord (length, masked CRC-32C of the length, data, masked CRC-32C
 * of the data), text lines, and fixed-length records (header, records,
 * footer). Each record comes out as a scalar string tensor.
 *
 * The dataset kernels that read many files in turn (kernels/tfrecord.c,
 * text_line.c, fixed_length_record.c) open one reader per file. Plain C;
 * nothing here needs the GIL; a reader belongs to one thread at a time.
 * Offsets in messages count bytes of the uncompressed stream, as TensorFlow
 * reports them.
 */
#ifndef CV_RECORD_READER_H
#define CV_RECORD_READER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "io/compression.h"

#define CV_DEFAULT_MAX_RECORD_BYTES ((uint64_t)256 << 20)

/* What a file that ends inside a record (a torn tail: a writer that died
 * mid-write, a copy cut short) does. Every whole record before the tear is
 * returned first in each mode. */
typedef enum CvTruncation {
    CV_TRUNCATION_WARN = 0,   /* a DataLossWarning naming the file and the tear's offset; the file ends */
    CV_TRUNCATION_ERROR = 1,  /* DATA_LOSS "truncated record at <offset>" naming the file */
    CV_TRUNCATION_IGNORE = 2, /* the file ends quietly (TensorFlow's header case) */
} CvTruncation;

static inline bool cv_truncation_valid(int t)
{
    return t >= CV_TRUNCATION_WARN && t <= CV_TRUNCATION_IGNORE;
}

typedef struct CvReadOptions {
    CvCompression compression;
    CvTruncation on_truncation;
    size_t buffer_size;        /* bytes per read (and per inflate output); 0 = default */
    uint64_t max_record_bytes; /* TFRecord: larger declared lengths are data loss; 0 = default */
} CvReadOptions;

typedef enum CvRecordFormat {
    CV_FORMAT_TFRECORD = 0,
    CV_FORMAT_TEXT_LINE = 1,
    CV_FORMAT_FIXED_LENGTH = 2,
} CvRecordFormat;

/* How to read the records of a file. */
typedef struct CvReaderParams {
    CvRecordFormat format;
    CvReadOptions options;
    uint64_t header_bytes, record_bytes, footer_bytes; /* fixed-length only */
} CvReaderParams;

/* INVALID_ARGUMENT unless the params can be read with: a known compression
 * and truncation mode;
 * fixed-length: record_bytes > 0 and the sizes fit in int64. */
CvStatus cv_reader_params_check(const CvReaderParams *params);

typedef struct CvRecordReader CvRecordReader;

/* Open `path` for reading records. Errors: NOT_FOUND (missing), PERMISSION_DENIED,
 * FAILED_PRECONDITION (a directory), INVALID_ARGUMENT (a fixed-length file
 * shorter than its header and footer), each naming the path. */
CvStatus cv_record_reader_open(const char *path, const CvReaderParams *params, CvRecordReader **out);
/* The next record as a scalar string tensor (owned by the caller, its buffer
 * carrying the file and record index as its CvOrigin), or *eof. A torn tail
 * is handled as options.on_truncation says (a warning and *eof, or
 * DATA_LOSS "truncated record at <offset>", or *eof). Errors (DATA_LOSS with
 * "truncated record at <offset>" / "corrupted record at <offset>", the path
 * and the record index) leave the reader unusable: close it. */
CvStatus cv_record_reader_next(CvRecordReader *r, CvTensor *out, bool *eof);
void cv_record_reader_close(CvRecordReader *r); /* NULL-safe */

/* Pass over up to n records without returning them; *skipped < n only with
 * *eof or an error (returned at its record, as next() would). As tf.data's
 * SkipRecords: a TFRecord's length and its CRC are read and its data is
 * skipped unchecked (a damaged header is DATA_LOSS, damaged data is not
 * seen); text and fixed-length records are framed as next() frames them. An
 * uncompressed TFRecord file with a valid index (io/record_index.h, looked
 * up at the first skip) seeks instead, reading nothing; a stale or damaged
 * index is ignored with a warning, and so is an entry whose block fails its
 * CRC or that does not point at the record it indexed (its header's length
 * CRC; the record then read: its data CRC): the reader then reads from the
 * start of the file when it had sought with that index before. `stop` (may be NULL) is polled every few thousand
 * records: when it turns true the skip returns CANCELLED. */
CvStatus cv_record_reader_skip(CvRecordReader *r, uint64_t n, uint64_t *skipped, bool *eof,
                               const atomic_bool *stop);

/* Exact resume: where a reader stands between records, and what the file
 * was then (so a changed file is refused instead of misread). */
typedef struct CvRecordPosition {
    uint64_t offset;    /* the next record's start, in the uncompressed stream */
    uint64_t index;     /* records before it */
    uint64_t file_size; /* compressed bytes, at open */
    int64_t mtime_ns;   /* at open */
    uint64_t flags;     /* reader-private (text lines: a torn tail was reported) */
} CvRecordPosition;

void cv_record_reader_position(const CvRecordReader *r, CvRecordPosition *pos);
/* On a reader just opened (nothing read yet) on the file of `pos`: go to
 * it. Uncompressed files seek (O(1)); compressed ones inflate from the start
 * up to pos->offset (O(offset), as a deflate stream has no random access).
 * FAILED_PRECONDITION when the file is not the one saved (its size or mtime
 * changed, or it is not a regular file), DATA_LOSS when pos->offset is not
 * the start of a record of it; both name the file. */
CvStatus cv_record_reader_seek(CvRecordReader *r, const CvRecordPosition *pos);

#endif
