/* Cache files: the on-disk form of Dataset.cache(filename), its streaming
 * writer and its validating reader, and the advisory lock writers share.
 *
 * FORMAT (version 1). All integers are in the writer's byte order, which the
 * prologue records; a file from a machine of the other order is refused.
 *
 *   prologue  32 B   "CVCACHE\0", u32 version, u32 byte-order mark (0x01020304),
 *                    u64 creation time (ns), u32 reserved, u32 crc
 *   chunk*           header 32 B: u32 'CVCK', u32 element count, u64 data bytes,
 *                    u64 shape bytes, u32 body crc, u32 header crc;
 *                    body: the data section, then the shape section
 *   trailer          u32 'CVTR', u32 components, u64 elements, u64 chunks,
 *                    per component: u32 dtype, i32 rank (-1: varies),
 *                    i64 dims[rank] (-1: varies); u64 structure length,
 *                    the structure (opaque bytes from the Python layer),
 *                    zero padding to 8 bytes
 *   footer    32 B   u64 trailer offset, u64 trailer length, u32 trailer crc,
 *                    u32 footer crc, "CVCEND\0\0"
 *
 * Every crc is a masked CRC-32C (io/crc32c.h). A chunk's data section holds
 * its elements' components in order, each padded to 8 bytes: numeric values
 * as they are in memory; strings as {u64 offset, u64 length} pairs (offsets
 * from the start of the data section, each string right after the previous)
 * followed by the bytes. The shape section has, per component, one u64 word:
 * (rank << 8) | 0 followed by the dims when every element of the chunk has
 * the same shape, or 1 followed by (rank, dims...) per element.
 *
 * The trailer's shapes are the most specific ones that fit every element
 * (tf.TensorShape.most_specific_compatible_shape over the data written).
 *
 * A file is complete by construction: the writer streams chunks into a
 * uniquely named temporary file next to the target and renames it over the
 * target only after the trailer and footer are written and fsync'ed. A
 * reader checks the prologue, the footer and the trailer when it opens a
 * file, and each chunk's crcs and bounds before handing out its elements,
 * so a truncated or damaged file is a DATA_LOSS error naming the file and
 * the offset, never a crash or a wrong element.
 *
 * Plain C; a writer or reader belongs to one thread at a time. The writer
 * is cache_file_writer.c, the reader and the lock cache_file.c, and the
 * layout's constants and byte helpers they share cache_file_format.h.
 */
#ifndef CV_CACHE_FILE_H
#define CV_CACHE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

#define CV_CACHE_FILE_SUFFIX ".cvcache"
#define CV_CACHE_FILE_VERSION 1
/* A chunk is written once its data section reaches this size. Readers keep
 * a chunk's memory while any of its elements lives (elements are views of
 * it), so smaller chunks waste less behind a shuffle buffer. */
#define CV_CACHE_CHUNK_BYTES ((size_t)256 << 10)
#define CV_CACHE_CHUNK_MAX_ELEMENTS 65536

/* The spec of one flat component: rank -1 or a dim -1 means "varies". */
typedef struct CvComponentSpec {
    CvDtype dtype;
    int rank;
    int64_t dims[CV_MAX_RANK];
} CvComponentSpec;

/* What a complete cache file says about its contents. */
typedef struct CvCacheFileInfo {
    uint32_t num_components;
    CvComponentSpec *components; /* owned, num_components */
    uint64_t num_elements;
    uint64_t num_chunks;
    char *structure; /* owned, structure_len bytes (may be 0) */
    size_t structure_len;
} CvCacheFileInfo;

void cv_cache_file_info_clear(CvCacheFileInfo *info);

/* INVALID_ARGUMENT naming `path` unless the file's components fit `expected`
 * (same count and dtypes; each known expected rank and dim equal to the
 * file's). */
CvStatus cv_cache_check_spec(const CvCacheFileInfo *info, const CvComponentSpec *expected,
                             uint32_t n, const char *path);

/* ---------------------------------------------------------------- writer */

typedef struct CvCacheWriter CvCacheWriter;

/* Create the directories above `path` that do not exist yet (the writer's
 * and the lock's). Errors name the directory. */
CvStatus cv_cache_make_parents(const char *path);

/* Create the parent directories of `path` and a new temporary file next to
 * it ("<path>.tmp-<pid>-<n>-<random>"). Errors name the path. */
CvStatus cv_cache_writer_open(const char *path, CvCacheWriter **out);
/* Append one element (copied). All elements must have the components and
 * dtypes of the first (INVALID_ARGUMENT otherwise). Writes a chunk when one
 * is full. */
CvStatus cv_cache_writer_append(CvCacheWriter *w, const CvElement *e);
/* Bytes handed to the file so far (chunks written). */
uint64_t cv_cache_writer_bytes(const CvCacheWriter *w);
/* Write the last chunk, the trailer (with `structure`) and the footer,
 * fsync, and rename the temporary file to `path` (replacing any file there);
 * then fsync the directory. Frees w whatever the result; on failure the
 * temporary file is removed. */
CvStatus cv_cache_writer_commit(CvCacheWriter *w, const char *structure, size_t structure_len);
/* Remove the temporary file and free w. NULL-safe. */
void cv_cache_writer_abort(CvCacheWriter *w);

/* ---------------------------------------------------------------- reader */

typedef struct CvCacheReader CvCacheReader;

/* Open and check a complete cache file. NOT_FOUND when there is none;
 * DATA_LOSS (naming the path and what is wrong) when it is truncated,
 * damaged, or not a cache file; FAILED_PRECONDITION for another format
 * version or byte order. */
CvStatus cv_cache_reader_open(const char *path, CvCacheReader **out);
const CvCacheFileInfo *cv_cache_reader_info(const CvCacheReader *r);
/* The next element (views of the chunk's memory, no copy), or *end. A
 * DATA_LOSS error names the file, the chunk and the byte offset; the
 * reader then stays at the end. */
CvStatus cv_cache_reader_next(CvCacheReader *r, CvElement *out, bool *end);
void cv_cache_reader_close(CvCacheReader *r); /* NULL-safe */
/* After cv_cache_reader_open failed with DATA_LOSS: true when the file at
 * `path` is a cache file cut short (a torn tail: a valid prologue, whole
 * chunks, then a partial chunk, trailer or footer, or a prefix of the
 * prologue), with *offset the byte offset where the first incomplete part
 * starts; false for a damaged or foreign file. */
bool cv_cache_file_torn(const char *path, uint64_t *offset);

/* ------------------------------------------------------------------ lock */

/* Try to take the writers' advisory lock (flock on `lock_path`, created
 * with its directories if needed) without waiting. *fd is the lock's descriptor, or -1 when another
 * process or iterator holds it. Errors only for an unusable lock file. */
CvStatus cv_cache_lock_try(const char *lock_path, int *fd);
/* The *fd of cv_cache_lock_try for a remote cache: no lock exists (object
 * stores), the caller writes; release does nothing. */
#define CV_CACHE_NO_LOCK 0x7fffffff
/* Remove the lock file and release the lock. fd < 0: no-op. */
void cv_cache_lock_release(const char *lock_path, int fd);
/* With the lock held: remove temporary files of `path` left by writers that
 * died (every "<path>.tmp-*"), except `keep` (may be NULL). */
void cv_cache_remove_stale_temps(const char *path, const char *keep);
/* True when a regular file exists at path. */
bool cv_cache_file_exists(const char *path);

#endif
