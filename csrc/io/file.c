/* File errors and read/write loops (see file.h). */
#include "io/file.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#if defined(__linux__) && __has_include(<linux/openat2.h>) /* Linux 5.6 headers */
#include <linux/openat2.h>
#endif

#include "core/blocking.h"
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

/* Whether the kernel reads buffered files with RWF_NOWAIT (Linux 5.9 and
 * later). Some file systems refuse it where the kernel has it (procfs:
 * EOPNOTSUPP), so a refusal only counts against it until one read has
 * worked; after 32 refusals and no success it is not tried again. */
static atomic_bool nowait_works = true, nowait_worked;
static atomic_int nowait_refusals;

/* Read what the page cache holds without blocking (preadv2 with
 * RWF_NOWAIT, at the file position as read() would): such a read is CPU
 * work, and giving the thread's place to another worker for it would only
 * run more threads than the budget for a moment, at every file. -1 with
 * EAGAIN: the data needs I/O (or the kernel cannot tell). */
static ssize_t read_cached(int fd, void *dst, size_t n)
{
#ifdef RWF_NOWAIT
    if (atomic_load_explicit(&nowait_works, memory_order_relaxed)) {
        struct iovec v = {dst, n};
        ssize_t r = preadv2(fd, &v, 1, -1, RWF_NOWAIT);
        if (r >= 0 && !atomic_load_explicit(&nowait_worked, memory_order_relaxed))
            atomic_store_explicit(&nowait_worked, true, memory_order_relaxed);
        if (r >= 0 || errno == EAGAIN || errno == EINTR)
            return r;
        if (errno == ENOSYS || ((errno == EOPNOTSUPP || errno == EINVAL) &&
                                !atomic_load_explicit(&nowait_worked, memory_order_relaxed) &&
                                atomic_fetch_add_explicit(&nowait_refusals, 1, memory_order_relaxed) >= 32))
            atomic_store_explicit(&nowait_works, false, memory_order_relaxed);
    }
#else
    (void)fd, (void)dst, (void)n;
#endif
    errno = EAGAIN;
    return -1;
}

CvStatus cv_file_read(int fd, const char *path, void *dst, size_t n, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        size_t want = n - done < MAX_TRANSFER ? n - done : MAX_TRANSFER;
        ssize_t r = read_cached(fd, (char *)dst + done, want);
        if (r < 0 && errno == EAGAIN) {
            cv_blocking_begin(); /* I/O: on a pool thread, let another thread run meanwhile */
            r = read(fd, (char *)dst + done, want);
            cv_blocking_end();
        }
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

/* Whether openat2 takes RESOLVE_CACHED (Linux 5.12 and later); cleared at
 * its first refusal. */
static atomic_bool cached_open_works = true;

/* open() when the path resolves from the dentry cache alone (openat2 with
 * RESOLVE_CACHED), for the same reason as read_cached; -1 with EAGAIN
 * otherwise. */
static int open_cached(const char *path, int flags)
{
#if defined(SYS_openat2) && defined(RESOLVE_CACHED)
    if (atomic_load_explicit(&cached_open_works, memory_order_relaxed)) {
        struct open_how how = {.flags = (uint64_t)flags, .resolve = RESOLVE_CACHED};
        int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
        if (fd >= 0 || errno != EAGAIN) {
            if (fd >= 0 || (errno != ENOSYS && errno != EINVAL && errno != EPERM && errno != E2BIG))
                return fd; /* opened, or a real error: ENOENT, EACCES... */
            atomic_store_explicit(&cached_open_works, false, memory_order_relaxed);
        }
    }
#else
    (void)path, (void)flags;
#endif
    errno = EAGAIN;
    return -1;
}

CvStatus cv_file_read_at(int fd, const char *path, void *dst, size_t n, uint64_t offset,
                         size_t *got)
{
    size_t done = 0;
    while (done < n) {
        size_t want = n - done < MAX_TRANSFER ? n - done : MAX_TRANSFER;
        ssize_t r = -1;
#ifdef RWF_NOWAIT
        if (atomic_load_explicit(&nowait_works, memory_order_relaxed)) { /* as read_cached */
            struct iovec v = {(char *)dst + done, want};
            r = preadv2(fd, &v, 1, (off_t)(offset + done), RWF_NOWAIT);
        }
#endif
        if (r < 0) {
            cv_blocking_begin();
            r = pread(fd, (char *)dst + done, want, (off_t)(offset + done));
            cv_blocking_end();
        }
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

CvStatus cv_file_open_read(const char *path, const char *name, int *fd, bool *waits)
{
    int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
    *fd = open_cached(path, flags);
    if (*fd < 0 && errno == EAGAIN) {
        cv_blocking_begin(); /* a slow file system, even without a FIFO */
        *fd = open(path, flags);
        cv_blocking_end();
    }
    if (*fd < 0)
        return cv_file_error(errno, name, NULL);
    struct stat sb;
    if (fstat(*fd, &sb) < 0 || S_ISDIR(sb.st_mode)) {
        CvStatus s = cv_file_error(S_ISDIR(sb.st_mode) ? EISDIR : errno, name, NULL);
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
            if (cv_blocking_cancelled()) {
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
