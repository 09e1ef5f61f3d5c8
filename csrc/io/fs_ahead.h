/* Opening ahead: files opened before anyone asks for them, kept in a
 * process-wide list until the op that reads one takes it by its URL (see
 * fs_ahead.c for why). */
#ifndef CV_FS_AHEAD_H
#define CV_FS_AHEAD_H

#include <stdbool.h>

#include "io/fs.h"

/* A kernel that knows a remote file will be read soon opens it now, so its
 * GET runs while the element waits for a worker; the op that reads it
 * (read_file, on a worker) takes that open file with cv_fs_take_ahead
 * instead of making a new request. NULL when the URL is local (nothing to
 * gain) or the open failed (the later open says why, in its turn). The handle is the caller's,
 * one thread at a time; cv_fs_ahead_drop frees it and closes the file if
 * nobody took it. Requests in flight stay bounded by the I/O budget (the
 * cv-io thread queues the rest). Any thread. */
typedef struct CvFsAhead CvFsAhead;
CvFsAhead *cv_fs_open_ahead(const char *url);
void cv_fs_ahead_drop(CvFsAhead *a); /* NULL-safe */
/* Takes (owns) a file opened ahead for exactly `url`, if one is waiting. */
bool cv_fs_take_ahead(const char *url, CvReadFile **out);

#endif
