/* The memory cache's recording (kernels/cache.c, filename ""): a pass's
 * elements kept by reference (their buffers are shared, never copied) as a
 * list of runs per component. Consecutive elements that are slices of one
 * buffer with a constant stride and the same shape take one 32-byte run, so
 * recording a from_tensor_slices source costs next to nothing beyond the
 * source itself. A recording belongs to one iterator while it is made;
 * published, it is immutable and replayed by any number of iterators, each
 * through cursors of its own, without locks.
 */
#ifndef CV_RECORDING_H
#define CV_RECORDING_H

#include <stddef.h>
#include <stdint.h>

#include "core/ram_budget.h"
#include "core/tensor.h"

typedef struct {
    CvBuffer *buf;  /* one reference */
    char *data;     /* the first element's data */
    int64_t stride; /* bytes from one element's data to the next one's */
    uint32_t count;
    uint32_t form; /* offset of the elements' (dtype, rank, dims) in CvRecordedColumn.forms */
} CvRecordedRun;

typedef struct {
    CvRecordedRun *runs;
    size_t n_runs, cap_runs;
    int64_t *forms; /* dtype, rank, dims[rank], dtype, rank, ... */
    size_t forms_len, forms_cap;
    uint32_t last_form;
} CvRecordedColumn;

/* A recording charges its elements' bytes to a RAM budget until it is freed
 * (a published one: with the store). */
typedef struct {
    uint32_t ncomp;
    CvRecordedColumn *cols;
    int64_t count;
    CvMemory *memory;         /* owned reference (NULL: the default budget) */
    size_t charged;           /* bytes charged to it */
    /* The same bytes, listed on the budget as "Cache" (from creation to
     * free), so that a budget error elsewhere names the cache when it holds
     * the most. */
    CvMemoryHolder holder;
    unsigned long generation; /* fork generation of the charges */
    /* The input's state when the pass that recorded it began (owned; NULL:
     * that input could not be saved): a restore elsewhere recomputes it. */
    char *start;
    size_t start_len;
} CvRecording;

CvRecording *cv_recording_new(CvMemory *memory); /* NULL: out of memory */
void cv_recording_free(CvRecording *m);            /* NULL-safe; releases the charges */

/* Record one more element by reference, charging its bytes (the element
 * may share them with its source, but the cache keeps them alive). */
CvStatus cv_recording_add(CvRecording *m, const CvElement *e, size_t bytes);

/* A replay's position in one component's runs (one cursor per component). */
typedef struct {
    size_t run;
    uint32_t offset;
} CvRecordingCursor;

/* The next element of a recording read in order through cursors. */
CvStatus cv_recording_replay(const CvRecording *m, CvRecordingCursor *cursors, CvElement *out);

#endif
