/* TFRecord index sidecars: the byte offset of every record of an
 * uncompressed TFRecord file, so that skipping records is a seek.
 *
 * The index of "<file>" is "<file>.cvindex" next to it, written by
 * cv_record_index_write (python -m conveyor.tools.index FILES...). It
 * records what the data file was when it was indexed (size, mtime in
 * nanoseconds, CRC-32C of its first and last 4 KiB, and of the file
 * system's version string: a local file's inode, size, mtime and
 * status-change time, an object's generation or ETag), so a file that
 * changed since, even rewritten in place with its mtime put back, is
 * detected: its index is stale, and a reader ignores it with a warning
 * naming both files and reads the records instead.
 *
 * Layout, version 02 (integers little-endian):
 *   [0, 8)   magic "CVRIDX02" (the last two characters are the version)
 *   [8, 16)  u64 data file size       [16, 24) i64 data mtime (ns)
 *   [24, 28) u32 CRC-32C of the first min(size, 4096) bytes
 *   [28, 32) u32 CRC-32C of the last min(size, 4096) bytes
 *   [32, 40) u64 N, the number of whole records
 *   [40, 44) u32 B, entries per block (256)
 *   [44, 48) u32 CRC-32C of the data file's version string ("" unknown)
 *   [48, 52) u32 masked CRC-32C of bytes [0, 48)   [52, 64) zero
 *   [64, 64 + 4 K) u32 per block of B entries (K = ceil((N + 1) / B)): the
 *            masked CRC-32C of the block's number (u64) then its bytes, so
 *            a damaged, zeroed or moved block fails its check;
 *   then N + 1 entries of 16 bytes: u64 offset, u32 the record header's
 *            length CRC (its bytes [8, 12)), u32 its data CRC (its footer).
 *            Entry N is the end of the whole records (the file's size,
 *            unless it ends in a torn record), its CRCs zero.
 * A seek reads one block (4 KiB) and its CRC, never the whole table, so
 * opening an index costs the same for any file size. An entry is trusted
 * only after its block's CRC passes and the record header it points at
 * carries the length CRC it recorded (for the end entry: the last record
 * ends there); the record then read through it must carry the data CRC
 * it recorded.
 *
 * Version 01 indexes (no block CRCs, no version string) are ignored with a
 * warning asking for a rebuild.
 *
 * Plain C; an index belongs to one reader (one thread at a time).
 */
#ifndef CV_RECORD_INDEX_H
#define CV_RECORD_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "io/fs.h"

#define CV_RECORD_INDEX_SUFFIX ".cvindex"

typedef struct CvRecordIndex CvRecordIndex;

/* Index the uncompressed TFRecord file `path`: read every record (both
 * CRC-32Cs checked) and write "<path>.cvindex" atomically (a temporary file,
 * fsync'd, renamed over it). A torn tail is left out of the index (offsets[N] is where
 * it starts). Errors name the file: DATA_LOSS for a corrupt record (no index
 * is written), ABORTED when the file changed while being read, and the
 * file's I/O errors. *records: N. */
CvStatus cv_record_index_write(const char *path, size_t buffer_size, uint64_t *records);

/* The index of data file `path`, as the caller's open file describes it
 * (size, mtime, version), or NULL: none (quietly), or one that cannot be
 * used (stale, damaged, unreadable, not a regular file: after a DataLoss
 * warning naming it). Never blocks in open(): a FIFO or device there is
 * ignored. */
CvRecordIndex *cv_record_index_open(const char *path, const CvFileInfo *info);
void cv_record_index_close(CvRecordIndex *idx); /* NULL-safe */

const char *cv_record_index_path(const CvRecordIndex *idx);
uint64_t cv_record_index_count(const CvRecordIndex *idx); /* N */

typedef struct CvRecordIndexEntry {
    uint64_t offset;     /* where record i starts (i == N: where the records end) */
    uint32_t header_crc; /* its header's bytes [8, 12); 0 for entry N */
    uint32_t data_crc;   /* its footer; 0 for entry N */
} CvRecordIndexEntry;

/* Entry i, 0 <= i <= N, from its block (read and checked, then kept: the
 * index caches one block). DATA_LOSS when the block cannot be read (naming
 * the index) or fails its CRC ("its block B (entries i-j) fails ..."). */
CvStatus cv_record_index_entry(CvRecordIndex *idx, uint64_t i, CvRecordIndexEntry *e);

#endif
