/* errno -> status for file errors (see file_error.h). */
#include "io/file_error.h"

#include <errno.h>
#include <string.h>

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
