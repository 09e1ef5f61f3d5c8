/* File errors and read/write loops (see file.h). */
#include "io/file.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pool.h"
#include "core/thread.h"

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

CvStatus cv_file_open_read(const char *path, int *fd, bool *waits)
{
    cv_blocking_begin(); /* a slow file system, even without a FIFO */
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    cv_blocking_end();
    if (*fd < 0)
        return cv_file_error(errno, path, NULL);
    struct stat sb;
    if (fstat(*fd, &sb) < 0 || S_ISDIR(sb.st_mode)) {
        CvStatus s = cv_file_error(S_ISDIR(sb.st_mode) ? EISDIR : errno, path, NULL);
        close(*fd);
        *fd = -1;
        return s;
    }
    *waits = !S_ISREG(sb.st_mode) && !S_ISBLK(sb.st_mode);
    return CV_STATUS_OK;
}

CvStatus cv_file_read_waiting(int fd, const char *path, void *dst, size_t n, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        struct pollfd p = {fd, POLLIN, 0};
        cv_blocking_begin();
        void *outside = cv_wait_outside_begin(); /* the GIL, on a consumer that holds it */
        int ready = poll(&p, 1, CV_WAIT_SLICE_MS);
        cv_wait_outside_end(outside);
        cv_blocking_end();
        if (ready == 0 || (ready < 0 && errno == EINTR)) { /* a slice passed: still wanted? */
            if (cv_pool_cancelled()) {
                *got = done;
                return cv_error(CV_CANCELLED, "%s: the read was cancelled", path);
            }
            if (cv_interrupt_pending()) {
                *got = done;
                return cv_error(CV_INTERRUPTED, "interrupted");
            }
            continue;
        }
        ssize_t r = ready < 0 ? -1 : read(fd, (char *)dst + done, n - done);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
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
