/* TFRecord index sidecars: the byte offset of every record of an
 * uncompressed TFRecord file, so that skipping records is a seek.
 *
 * The index of "<file>" is "<file>.cvindex" next to it, written by
 * cv_record_index_write (python -m conveyor.tools.index FILES...). It
 * records what the data file was when it was indexed (size, mtime in
 * nanoseconds, CRC-32C of its first and last 4 KiB), so a file that changed
 * since is detected: its index is stale, and a reader ignores it with a
 * warning naming both files and reads the records instead.
 *
 * Layout (integers little-endian):
 *   [0, 8)   magic "CVRIDX01" (the last two characters are the version)
 *   [8, 16)  u64 data file size       [16, 24) i64 data mtime (ns)
 *   [24, 28) u32 CRC-32C of the first min(size, 4096) bytes
 *   [28, 32) u32 CRC-32C of the last min(size, 4096) bytes
 *   [32, 40) u64 N, the number of whole records
 *   [40, 44) u32 masked CRC-32C of bytes [0, 40)   [44, 48) zero
 *   [48, 48 + 8 (N + 1)) u64 offsets: record i starts at offsets[i];
 *            offsets[N] is where the last whole record ends (the file's
 *            size, unless it ends in a torn record).
 * Entries are read one at a time (pread), never the whole table, so opening
 * an index costs the same for any file size. An entry is trusted only after
 * the reader checks the record header it points at.
 *
 * Plain C; an index belongs to one reader (one thread at a time).
 */
#ifndef CV_RECORD_INDEX_H
#define CV_RECORD_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define CV_RECORD_INDEX_SUFFIX ".cvindex"

typedef struct CvRecordIndex CvRecordIndex;

/* Index the uncompressed TFRecord file `path`: read every record (both
 * CRC-32Cs checked) and write "<path>.cvindex" atomically (a temporary file,
 * fsync'd, renamed over it). A torn tail is left out of the index (offsets[N] is where
 * it starts). Errors name the file: DATA_LOSS for a corrupt record (no index
 * is written), ABORTED when the file changed while being read, and the
 * file's I/O errors. *records: N. */
CvStatus cv_record_index_write(const char *path, size_t buffer_size, uint64_t *records);

/* The index of data file `path`, whose size and mtime the caller has (from
 * its open file), or NULL: none (quietly), or one that cannot be used
 * (stale, damaged, unreadable, not a regular file: after a DataLoss warning
 * naming it). Never blocks in open(): a FIFO or device there is ignored. */
CvRecordIndex *cv_record_index_open(const char *path, uint64_t size, int64_t mtime_ns);
void cv_record_index_close(CvRecordIndex *idx); /* NULL-safe */

const char *cv_record_index_path(const CvRecordIndex *idx);
uint64_t cv_record_index_count(const CvRecordIndex *idx); /* N */
/* offsets[i], 0 <= i <= N. DATA_LOSS naming the index when it cannot be
 * read. */
CvStatus cv_record_index_offset(const CvRecordIndex *idx, uint64_t i, uint64_t *offset);

#endif
