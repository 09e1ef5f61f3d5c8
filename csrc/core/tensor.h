/* Tensors and elements: the data that flows between kernels.
 *
 * A CvBuffer is a reference-counted block of memory (atomic count, so any
 * thread may drop the last reference). A CvTensor is a small value: dtype,
 * shape, a data pointer into a buffer, and one owned reference to that
 * buffer. Slicing makes a new tensor over the same buffer without copying.
 *
 * Strings (CV_STRING) are stored as an array of CvStringRef {offset, length}
 * pairs at `data`, each offset counted from the start of the buffer's memory,
 * so a slice of a string tensor is a slice of its refs array. A buffer may
 * also hold references to other buffers, its parts (a batch of large records
 * refers to the records' own buffers instead of copying them): the top bits
 * of an offset then select the part the string lives in. Read a string's
 * bytes only through cv_string_data.
 *
 * A CvElement is a flat array of tensors; nesting (tuples, dicts) lives only
 * in Python. An element owns its tensors.
 */
#ifndef CV_TENSOR_H
#define CV_TENSOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define CV_MAX_RANK 16

typedef enum CvDtype {
    CV_BOOL = 0,
    CV_INT8,
    CV_INT16,
    CV_INT32,
    CV_INT64,
    CV_UINT8,
    CV_UINT16,
    CV_UINT32,
    CV_UINT64,
    CV_FLOAT16,
    CV_FLOAT32,
    CV_FLOAT64,
    CV_STRING,
    CV_BFLOAT16, /* after CV_STRING: the codes before it are in saved files */
    CV_NUM_DTYPES
} CvDtype;

typedef struct CvStringRef {
    uint64_t offset; /* part << CV_STRING_PART_SHIFT | offset from that buffer's data */
    uint64_t length;
} CvStringRef;

/* An offset's low 40 bits count bytes (string blobs are limited to 1 TiB),
 * its top 24 bits select the buffer: 0 the tensor's own, k its part k - 1. */
#define CV_STRING_PART_SHIFT 40
#define CV_STRING_OFFSET_MASK ((UINT64_C(1) << CV_STRING_PART_SHIFT) - 1)
#define CV_STRING_MAX_PARTS ((UINT32_C(1) << (64 - CV_STRING_PART_SHIFT)) - 1)

typedef struct CvBuffer CvBuffer;
struct CvBuffer {
    atomic_long refcount;
    char *data;
    size_t size;
    size_t capacity; /* bytes usable at data (>= size) */
    /* Buffers the strings of a tensor over this buffer may live in (see
     * CvStringRef): owned references, released with this buffer; never
     * changed once the buffer is shared; a part has no parts of its own.
     * NULL / 0 for most buffers. */
    CvBuffer **parts;
    uint32_t nparts;
    /* Where the bytes came from, for error messages (see CvOrigin): record
     * `origin_index` of the file, or CV_ORIGIN_WHOLE_FILE. */
    uint32_t origin_index;
    /* Frees the buffer (and its memory) when the last reference drops; may
     * run on any thread, so it must not need the GIL. */
    void (*release)(CvBuffer *buf);
    struct CvOrigin *origin; /* one reference, or NULL (most buffers) */
};

/* The provenance of a record's or a file's bytes: the file's path, shared
 * (reference counted) by every buffer read from that file. Record readers
 * and ReadFile set it on the buffers they fill; a traced program whose op
 * fails cites it (on record 7 of "a.tfr"). The index lives in the
 * buffer (32 bits, kept inside the 64-byte header): records past
 * CV_ORIGIN_WHOLE_FILE - 1 are cited without their index. */
typedef struct CvOrigin CvOrigin;
#define CV_ORIGIN_WHOLE_FILE UINT32_MAX
CvOrigin *cv_origin_new(const char *path); /* NULL when out of memory */
CvOrigin *cv_origin_ref(CvOrigin *o);
void cv_origin_unref(CvOrigin *o); /* NULL-safe */
const char *cv_origin_path(const CvOrigin *o);
/* Attach `o` (a new reference; NULL: nothing) to a buffer not yet shared,
 * with a record index (CV_ORIGIN_WHOLE_FILE for a whole file). */
void cv_buffer_set_origin(CvBuffer *b, CvOrigin *o, uint64_t index);

typedef struct CvTensor {
    CvDtype dtype;
    int rank;
    int64_t shape[CV_MAX_RANK];
    char *data;    /* first byte of this tensor, inside buf */
    CvBuffer *buf; /* one owned reference */
} CvTensor;

/* Describe where t's bytes came from into buf (record 7 of "a.tfr", or
 * "a.jpg" in quotes); false (buf untouched) when unknown. */
bool cv_tensor_origin_str(const CvTensor *t, char *buf, size_t size);

typedef struct CvElement {
    uint32_t n;
    /* The bytes t was allocated with as a block (core/blocks.h: small
     * arrays from cv_element_init), or 0 when t is malloc's. Code that
     * reallocates t sets it to 0; cv_element_free_array frees either. */
    uint32_t t_block;
    CvTensor *t; /* owned array of n tensors (NULL when n == 0) */
} CvElement;

size_t cv_dtype_size(CvDtype dtype); /* bytes per value; sizeof(CvStringRef) for strings */
const char *cv_dtype_name(CvDtype dtype);

/* Buffers. cv_buffer_new allocates header and memory together (64-byte
 * aligned data); returns NULL when out of memory. Large buffers (>= 64 KiB)
 * are recycled through a pool (at most 128 buffers, 256 MiB), so that a
 * pipeline that allocates a batch buffer per step reuses warm memory instead
 * of mapping and faulting fresh pages each time; mid-sized ones (4 KiB to
 * 64 KiB with the header: a record) in classes of 1 KiB (32 MiB in all). */
CvBuffer *cv_buffer_new(size_t size);
/* What the pool has done since the process started: requests for large and
 * mid-sized buffers it served (hits) and those it could not (misses, for
 * missed_bytes of fresh memory), and what it holds now. Each class's figures
 * are taken under its lock, not all at one instant. */
typedef struct CvBufferPoolStats {
    uint64_t hits, misses, missed_bytes;
    size_t pooled_buffers, pooled_bytes;
} CvBufferPoolStats;
CvBufferPoolStats cv_buffer_pool_stats(void);
/* In a fork() child: forget the pool (its lock may be held by a parent thread). */
void cv_buffer_pool_after_fork(void);
static inline CvBuffer *cv_buffer_ref(CvBuffer *b)
{
    atomic_fetch_add_explicit(&b->refcount, 1, memory_order_relaxed);
    return b;
}
void cv_buffer_unref(CvBuffer *b);
/* For a buffer's release function: drop what any buffer may hold besides
 * its memory (the parts it references, its origin). */
void cv_buffer_drop_links(CvBuffer *b);
/* True when the caller holds the only reference (so the memory may be
 * handed out as writable). */
static inline bool cv_buffer_is_unique(CvBuffer *b)
{
    return atomic_load_explicit(&b->refcount, memory_order_acquire) == 1;
}

/* Give b the parts array (n owned references to part-less buffers; the
 * array is malloc'd and taken). b must have no parts yet and be unshared. */
void cv_buffer_set_parts(CvBuffer *b, CvBuffer **parts, uint32_t n);

/* The buffer holding the bytes of string `ref` of t (t's own or a part). */
static inline CvBuffer *cv_string_owner(const CvTensor *t, const CvStringRef *ref)
{
    uint64_t part = ref->offset >> CV_STRING_PART_SHIFT;
    return part ? t->buf->parts[part - 1] : t->buf;
}

/* The first byte of string `ref` of t. */
static inline const char *cv_string_data(const CvTensor *t, const CvStringRef *ref)
{
    return cv_string_owner(t, ref)->data + (ref->offset & CV_STRING_OFFSET_MASK);
}

/* Tensors. */
int64_t cv_tensor_num_elements(const CvTensor *t);
size_t cv_tensor_nbytes(const CvTensor *t); /* num_elements * dtype size */
/* Allocate a dense tensor of the given dtype and shape. Strings get a refs
 * array plus `string_bytes` of blob after it, returned in *blob (the whole
 * buffer at most CV_STRING_OFFSET_MASK bytes, so offsets fit their field). */
CvStatus cv_tensor_alloc(CvTensor *out, CvDtype dtype, int rank, const int64_t *shape,
                         size_t string_bytes, char **blob);
/* Where a stage allocates its output tensors when its consumer asks for
 * it (a device stage: page-locked memory its copy engine reads, core/dataset.h's
 * build_outputs_in). alloc returns a buffer of at least n bytes with one
 * reference (its release returns it to the allocator's owner), or NULL
 * when it cannot (over a budget, out of pinned memory): the caller then
 * allocates as usual. Any thread; ctx outlives every buffer it handed out. */
typedef struct CvBufferAllocator {
    CvBuffer *(*alloc)(void *ctx, size_t n);
    void *ctx;
} CvBufferAllocator;
/* cv_tensor_alloc of a numeric tensor whose buffer comes from `a` when it
 * has one (a NULL: from cv_buffer_new). */
CvStatus cv_tensor_alloc_from(CvTensor *out, CvDtype dtype, int rank, const int64_t *shape,
                              const CvBufferAllocator *a);
/* A scalar string of n bytes (its ref set to them): the caller writes them
 * at *bytes. */
CvStatus cv_tensor_alloc_scalar_string(CvTensor *out, size_t n, char **bytes);
/* A string tensor of `rank` and `shape` whose values, in order, are the
 * byte ranges (data[i], len[i]), copied into its blob. */
CvStatus cv_tensor_strings(CvTensor *out, int rank, const int64_t *shape, const char *const *data,
                           const size_t *len);
/* A new reference to the same memory. */
void cv_tensor_copy_ref(CvTensor *dst, const CvTensor *src);
/* Row `index` of a rank >= 1 tensor, sharing memory. */
void cv_tensor_slice(CvTensor *dst, const CvTensor *src, int64_t index);
void cv_tensor_clear(CvTensor *t);
bool cv_tensor_same_shape(const CvTensor *a, const CvTensor *b);
/* "[2,3]" style shape text into buf (always NUL-terminated). */
const char *cv_shape_str(const int64_t *shape, int rank, char *buf, size_t size);

/* Elements. */
CvStatus cv_element_init(CvElement *e, uint32_t n);
void cv_element_clear(CvElement *e);
/* Free e's tensor array alone (its tensors were moved out); e becomes empty. */
void cv_element_free_array(CvElement *e);
/* Move src into dst, leaving src empty. */
static inline void cv_element_move(CvElement *dst, CvElement *src)
{
    *dst = *src;
    *src = (CvElement){0};
}

#endif
