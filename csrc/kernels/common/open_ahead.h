/* Open-ahead: a map whose function opens the file named by an input
 * component (CvFunction.opens_args: a traced read_file) pulls its input
 * ahead and opens those files as it pulls (io/fs_ahead.h), so
 * each remote GET runs while its element waits for a worker, and a worker
 * runs the element when the bytes are (nearly) there: requests in flight
 * follow the I/O budget, not the pool's threads.
 *
 * It wraps the input's next(): elements come out in the input's order, with
 * their errors in their turn and the end after the last; the function still
 * opens each file itself (taking the open one when it is there), so a
 * missing file fails exactly as without it. At most `depth` elements (the
 * I/O budget's request count) are pulled ahead. A file handed out stays open
 * for the function until CV_OPEN_AHEAD_LINGER later elements were handed
 * out, or the wrapper is cleared; one nobody took is then closed.
 *
 * Exact resume: save writes the elements pulled ahead and not handed out
 * (status and element), then the input's frame; restore reads them back and
 * opens their files again. Disabled (the function opens no input
 * component: mask 0), every call is the input's own and the state is the
 * input's frame alone. An element whose file is local (an open starts no
 * read) or an error stops the pulling ahead there: a map over local paths
 * pulls as it would without open-ahead.
 *
 * Thread-safety: one thread at a time (the caller's pull lock). */
#ifndef CV_KERNELS_COMMON_OPEN_AHEAD_H
#define CV_KERNELS_COMMON_OPEN_AHEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dataset.h"
#include "core/iterator_state.h"
#include "io/fs_ahead.h"

#define CV_OPEN_AHEAD_FILES 4    /* files opened per element at most */
#define CV_OPEN_AHEAD_LINGER 1024 /* handed-out elements whose files stay open */

typedef struct CvOpenAheadEntry {
    CvStatus status;
    CvElement e;
    bool end;
    CvFsAhead *files[CV_OPEN_AHEAD_FILES];
} CvOpenAheadEntry;

typedef struct CvOpenAhead {
    uint64_t mask; /* input components opened ahead; 0: disabled */
    int depth;     /* elements pulled ahead at most */
    CvOpenAheadEntry *q; /* ring of depth entries, [head, head + len) */
    int head, len;
    CvFsAhead **linger; /* ring of handed-out files, CV_OPEN_AHEAD_LINGER * FILES */
    int linger_next;
} CvOpenAhead;

/* Disabled unless fn opens an input component. Allocation happens at the
 * first pull. */
void cv_open_ahead_init(CvOpenAhead *a, const CvFunction *fn);
CvStatus cv_open_ahead_next(CvOpenAhead *a, CvIterator *input, CvElement *out, bool *end);
CvStatus cv_open_ahead_save(CvOpenAhead *a, CvIterator *input, CvStateWriter *w);
CvStatus cv_open_ahead_restore(CvOpenAhead *a, CvIterator *input, CvStateReader *r);
/* Drops what was pulled ahead, closes the files nobody took, frees the
 * rings (the next pull starts afresh). */
void cv_open_ahead_clear(CvOpenAhead *a);

#endif
