/* File errors as TensorFlow reports them: "<path>; No such file or
 * directory", with the status code that matches the errno. Every file the
 * engine opens (record files, cache files, read_file) reports through here,
 * so one errno gives one exception type everywhere.
 */
#ifndef CV_FILE_ERROR_H
#define CV_FILE_ERROR_H

#include "core/status.h"

/* The status for errno `e` on `path`: NOT_FOUND (ENOENT, ENOTDIR),
 * PERMISSION_DENIED, FAILED_PRECONDITION (a directory), ALREADY_EXISTS,
 * RESOURCE_EXHAUSTED (no descriptors, memory or space), INVALID_ARGUMENT
 * (bad name), UNKNOWN otherwise. `what` (may be NULL) is appended, e.g.
 * "(while reading)". */
CvStatus cv_file_error(int e, const char *path, const char *what);

#endif
