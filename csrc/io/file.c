/* File errors and read/write loops (see file.h). */
#include "io/file.h"

#include "core/pool.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define MAX_TRANSFER ((size_t)1 << 30) /* bytes per read()/write() call */

static CvCode errno_code(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return CV_NOT_FOUND;
    case EACCES:
    case EPERM:
    case EROFS:
        return CV_PERMISSION_DENIED;
    case EISDIR:
        return CV_FAILED_PRECONDITION;
    case EEXIST:
        return CV_ALREADY_EXISTS;
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case ENOSPC:
        return CV_RESOURCE_EXHAUSTED;
    case ENAMETOOLONG:
    case EINVAL:
        return CV_INVALID_ARGUMENT;
    default:
        return CV_UNKNOWN;
    }
}

CvStatus cv_file_error(int e, const char *path, const char *what)
{
    return cv_error(errno_code(e), "%s; %s%s%s", path, strerror(e), what ? " " : "", what ? what : "");
}

CvStatus cv_file_read(int fd, const char *path, void *dst, size_t n, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        size_t want = n - done < MAX_TRANSFER ? n - done : MAX_TRANSFER;
        cv_blocking_begin(); /* on a pool thread, let another thread run meanwhile */
        ssize_t r = read(fd, (char *)dst + done, want);
        cv_blocking_end();
        if (r < 0) {
            if (errno == EINTR)
                continue;
            *got = done;
            return cv_file_error(errno, path, "(while reading)");
        }
        if (r == 0)
            break;
        done += (size_t)r;
    }
    *got = done;
    return CV_STATUS_OK;
}

CvStatus cv_file_write(int fd, const char *path, const void *src, size_t n)
{
    const char *p = src;
    while (n) {
        size_t want = n < MAX_TRANSFER ? n : MAX_TRANSFER;
        ssize_t r = write(fd, p, want);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return cv_file_error(errno, path, "(while writing)");
        }
        p += r;
        n -= (size_t)r;
    }
    return CV_STATUS_OK;
}
