/* A buffered input stream over one file, inflating ZLIB or GZIP data on the
 * fly: what the record readers (io/record_reader.h) frame records from.
 *
 * It reads large blocks (buffer_size bytes per read(), and per inflate()
 * output) and inflates in streaming mode. The inflating path follows
 * TensorFlow's ZlibInputStream step by step (inflate into an empty output
 * buffer; read more input only when inflate made no progress; a GZIP stream
 * may hold several members, a ZLIB stream ends at its end), so a damaged or
 * truncated compressed file yields the same bytes and errors as in
 * TensorFlow.
 *
 * Offsets count bytes of the uncompressed stream, as TensorFlow reports
 * them. A stream belongs to one thread at a time. Plain C.
 */
#ifndef CV_INPUT_STREAM_H
#define CV_INPUT_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "io/compression.h"
#include "io/fs.h"

#define CV_DEFAULT_READ_BUFFER (256u << 10)

typedef struct CvInputStream CvInputStream;

/* Open `path` (a path or URL: io/fs.h) for reading; buffer_size 0 means CV_DEFAULT_READ_BUFFER (it is
 * kept within [4 KiB, 64 MiB]: the bytes read are the same). Errors name the
 * path (io/file.h; a directory is FAILED_PRECONDITION). */
CvStatus cv_input_stream_open(const char *path, CvCompression compression, size_t buffer_size,
                              CvInputStream **out);
void cv_input_stream_close(CvInputStream *s); /* NULL-safe */

const char *cv_input_stream_path(const CvInputStream *s);
CvCompression cv_input_stream_compression(const CvInputStream *s);
/* The file's size at open (compressed bytes); UINT64_MAX when it is not a
 * regular file. */
uint64_t cv_input_stream_file_size(const CvInputStream *s);
/* After the end of a compressed stream: true when the file ended inside a
 * ZLIB stream or GZIP member (it was cut short); false otherwise. */
bool cv_input_stream_truncated(const CvInputStream *s);
/* Uncompressed bytes consumed so far (where the next read starts). */
uint64_t cv_input_stream_offset(const CvInputStream *s);

/* Read up to n bytes into dst; *got < n only at the end of the stream.
 * Errors: I/O (naming the path), and a damaged compressed stream
 * (DATA_LOSS, a message without context: the caller adds it). */
CvStatus cv_input_stream_read(CvInputStream *s, void *dst, size_t n, size_t *got);
/* Skip up to n bytes; *got < n only at the end of the stream. */
CvStatus cv_input_stream_skip(CvInputStream *s, uint64_t n, uint64_t *got);

/* The buffered bytes not yet consumed, refilling the buffer first when it is
 * empty: *data and *avail (> 0), or *eof. Nothing is consumed; call
 * cv_input_stream_consume() with what was used. Errors as for read. */
CvStatus cv_input_stream_peek(CvInputStream *s, const unsigned char **data, size_t *avail,
                              bool *eof);
/* Consume n <= avail bytes of what cv_input_stream_peek() showed. */
void cv_input_stream_consume(CvInputStream *s, size_t n);

/* The file's modification time at open (nanoseconds since the epoch). */
int64_t cv_input_stream_file_mtime_ns(const CvInputStream *s);
/* What the file-system layer said about the file at open (size, mtime,
 * version); owned by the stream. */
const CvFileInfo *cv_input_stream_file_info(const CvInputStream *s);

/* Go to uncompressed byte `offset`. Uncompressed: a seek, at any time (the
 * buffer is kept when the offset is inside it). Compressed: forward only, by
 * inflating everything up to the offset (O(offset): a deflate stream has no
 * random access); an offset behind the current one is INTERNAL. A stream
 * that ends before `offset` is DATA_LOSS naming the path and `what`. */
CvStatus cv_input_stream_seek(CvInputStream *s, uint64_t offset, const char *what);

#endif
