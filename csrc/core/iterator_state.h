/* Iterator state: the bytes that exact resume saves and restores.
 *
 * A saved iterator is a tree of frames, one per iterator, in the shape of
 * the pipeline: each frame names its kernel ("Range", "Batch", ...) and holds
 * the kernel's fields followed by the frames of its inputs. Fields are
 * fixed-width little-endian integers, length-prefixed byte strings and whole
 * elements. A frame is [name length: u8][name][contents length: u64][contents]
 * (the length filled in when the frame closes), so a reader finds truncation
 * and a frame of another kernel (a different pipeline) before it trusts a
 * field.
 *
 * Writers grow one heap buffer; a failed write leaves the writer in error and
 * every later write a no-op, so a kernel writes all its fields and checks
 * once (cv_state_end returns the first error). Readers borrow the bytes they
 * read from; every get checks bounds and returns CV_DATA_LOSS ("corrupt
 * iterator state") when the bytes run out or a value is out of range.
 *
 * Neither is thread-safe: one thread saves or restores a pipeline (the
 * consumer, between next() calls).
 */
#ifndef CV_ITERATOR_STATE_H
#define CV_ITERATOR_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/tensor.h"

typedef struct CvStateWriter {
    char *data; /* owned; cv_state_writer_take hands it over */
    size_t len, cap;
    CvStatus error; /* the first failure; later writes do nothing */
} CvStateWriter;

typedef struct CvStateReader {
    const char *data; /* borrowed: outlives the reader */
    size_t len, pos;
} CvStateReader;

void cv_state_writer_init(CvStateWriter *w);
void cv_state_writer_clear(CvStateWriter *w); /* frees the bytes and any error */
void cv_state_writer_reset(CvStateWriter *w); /* empty for reuse: keeps the buffer, frees any error */
/* Opens a frame for kernel `name`; *frame is passed to cv_state_end. */
void cv_state_begin(CvStateWriter *w, const char *name, size_t *frame);
/* Closes the frame; returns (and hands over) the writer's first error. */
CvStatus cv_state_end(CvStateWriter *w, size_t frame);
void cv_state_put_i64(CvStateWriter *w, int64_t v);
void cv_state_put_u64(CvStateWriter *w, uint64_t v);
void cv_state_put_bytes(CvStateWriter *w, const void *p, size_t n);
/* Every tensor of e, by value (strings included). */
void cv_state_put_element(CvStateWriter *w, const CvElement *e);
/* Memory the host cannot read directly (a device's, csrc/device/): the
 * layer that makes such buffers installs this hook once, and
 * cv_state_put_element copies their bytes out through it. It returns false
 * for host memory; otherwise it copied n bytes at src (inside b) to dst, or
 * set *status. Any thread. */
typedef bool (*CvForeignRead)(const CvBuffer *b, const char *src, void *dst, size_t n,
                              CvStatus *status);
void cv_state_set_foreign_reader(CvForeignRead read);
/* The bytes of another writer, as they are (a state saved earlier). */
void cv_state_put_raw(CvStateWriter *w, const void *p, size_t n);

void cv_state_reader_init(CvStateReader *r, const void *data, size_t len);
/* Enters the frame of kernel `name`: CV_FAILED_PRECONDITION when the frame
 * there is another kernel's (the state is of a different pipeline). */
CvStatus cv_state_enter(CvStateReader *r, const char *name, size_t *frame_end);
/* Leaves the frame: CV_DATA_LOSS unless its bytes were read exactly. */
CvStatus cv_state_leave(CvStateReader *r, size_t frame_end);
CvStatus cv_state_get_i64(CvStateReader *r, int64_t *v);
CvStatus cv_state_get_u64(CvStateReader *r, uint64_t *v);
/* An i64 in [lo, hi], else CV_DATA_LOSS naming `what`. */
CvStatus cv_state_get_range(CvStateReader *r, const char *what, int64_t lo, int64_t hi, int64_t *v);
CvStatus cv_state_get_bool(CvStateReader *r, bool *v);
/* Borrowed: *p points into the reader's bytes. */
CvStatus cv_state_get_bytes(CvStateReader *r, const void **p, size_t *n);
/* A new element (owned by the caller) written by cv_state_put_element. */
CvStatus cv_state_get_element(CvStateReader *r, CvElement *out);
/* The bytes of the next whole frame, borrowed, and skips over them. */
CvStatus cv_state_get_frame(CvStateReader *r, const void **p, size_t *n);

/* The error for corrupt state: CV_DATA_LOSS, "corrupt iterator state: ...". */
CvStatus cv_state_corrupt(const char *what);

#endif
