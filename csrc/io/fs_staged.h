/* A write file staged in a local temporary file, for file-system tables
 * whose store takes whole objects only (the binding's fsspec fallback):
 * appends go to the temporary file (no store call, no GIL), commit hands
 * the finished file to `upload`, so the object appears only complete as
 * fs.h promises, and abort just removes it. Opening for append first
 * fetches what is there with `download` (NOT_FOUND: start empty).
 *
 * Ownership: the file is the caller's until commit or abort (fs.h); the
 * temporary file is removed by either. Thread-safety: one thread at a time
 * per file, as every CvWriteFile; the hooks may take whatever locks (the
 * GIL) they need.
 */
#ifndef CV_IO_FS_STAGED_H
#define CV_IO_FS_STAGED_H

#include <stdbool.h>

#include "core/status.h"
#include "io/fs.h"

/* Move the object `url` to or from the local file `local`. */
typedef CvStatus (*CvStagedTransfer)(const char *url, const char *local);

/* A temporary file under $TMPDIR (else /tmp). */
CvStatus cv_staged_write_open(const char *url, bool append, CvStagedTransfer download,
                              CvStagedTransfer upload, CvWriteFile **out);

#endif
