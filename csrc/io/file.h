/* Plain file access the io layer and the ops share: errno -> status as
 * TensorFlow reports file errors, and read/write loops that retry EINTR and
 * short transfers. Every file the engine opens (record files, cache files,
 * read_file) reports through cv_file_error, so one errno gives one exception
 * type everywhere.
 */
#ifndef CV_FILE_H
#define CV_FILE_H

#include <stddef.h>

#include "core/status.h"

/* The status for errno `e` on `path`, worded "<path>; No such file or
 * directory": NOT_FOUND (ENOENT, ENOTDIR), PERMISSION_DENIED,
 * FAILED_PRECONDITION (a directory), ALREADY_EXISTS, RESOURCE_EXHAUSTED (no
 * descriptors, memory or space), INVALID_ARGUMENT (bad name), UNKNOWN
 * otherwise. `what` (may be NULL) is appended, e.g. "(while reading)". */
CvStatus cv_file_error(int e, const char *path, const char *what);

/* read() until n bytes are at dst or the file ends: *got < n only at the
 * end. An error ("(while reading)", naming `path`) keeps *got as far as it
 * came. */
CvStatus cv_file_read(int fd, const char *path, void *dst, size_t n, size_t *got);
/* write() all n bytes; errors say "(while writing)" and name `path`. */
CvStatus cv_file_write(int fd, const char *path, const void *src, size_t n);

#endif
