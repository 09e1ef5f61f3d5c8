/* Plain file access the io layer and the ops share: errno -> status as
 * TensorFlow reports file errors, and read/write loops that retry EINTR and
 * short transfers. Every file the engine opens (record files, cache files,
 * read_file) reports through cv_file_error, so one errno gives one exception
 * type everywhere.
 */
#ifndef CV_FILE_H
#define CV_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* pread() until n bytes from `offset` are at dst or the file ends (the
 * descriptor's position is unchanged); otherwise as cv_file_read. */
CvStatus cv_file_read_at(int fd, const char *path, void *dst, size_t n, uint64_t offset,
                         size_t *got);
/* Open `path` for reading without blocking on a FIFO that has no writer
 * yet (O_NONBLOCK; reads then wait in cv_file_read_waiting). *waits: the
 * file is not a regular file (a pipe, a character device, a socket), whose
 * reads may wait indefinitely. A directory is refused. Errors name `name`
 * (the URL the caller was given: file://... for a file URL). Only the local
 * file system (io/fs_local.c) opens files: everything else goes through
 * io/fs.h. */
CvStatus cv_file_open_read(const char *path, const char *name, int *fd, bool *waits);
/* cv_file_read for files whose reads may wait (see cv_file_open_read): it
 * waits in slices of CV_WAIT_SLICE_MS and gives up when the pipeline is
 * cancelled (CV_CANCELLED, on a pool thread) or the consumer is interrupted
 * (CV_INTERRUPTED: Ctrl-C), keeping *got as far as it came. */
CvStatus cv_file_read_waiting(int fd, const char *path, void *dst, size_t n, size_t *got);
/* write() all n bytes; errors say "(while writing)" and name `path`. */
CvStatus cv_file_write(int fd, const char *path, const void *src, size_t n);

#endif
