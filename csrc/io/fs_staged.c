/* A write file staged in a local temporary file (see fs_staged.h). */
#include "io/fs_staged.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/file.h"

typedef struct StagedWrite {
    CvWriteFile base;
    int fd;        /* the local temporary file */
    char temp[64]; /* its name */
    CvStagedTransfer upload;
} StagedWrite;

static CvStatus staged_append(CvWriteFile *base, const void *src, size_t n)
{
    StagedWrite *f = (StagedWrite *)base;
    return cv_file_write(f->fd, f->temp, src, n);
}

static void staged_abort(CvWriteFile *base)
{
    StagedWrite *f = (StagedWrite *)base;
    if (f->fd >= 0) {
        close(f->fd);
        unlink(f->temp);
    }
    free(base->url);
    free(f);
}

static CvStatus staged_commit(CvWriteFile *base)
{
    StagedWrite *f = (StagedWrite *)base;
    CvStatus s = CV_STATUS_OK;
    if (close(f->fd) != 0)
        s = cv_file_error(errno, f->temp, "(while closing the upload's temporary file)");
    f->fd = -1;
    if (!s) /* the object appears whole */
        s = f->upload(base->url, f->temp);
    unlink(f->temp);
    staged_abort(base);
    return s;
}

static const CvWriteFileMethods staged_methods = {staged_append, staged_commit, staged_abort};

CvStatus cv_staged_write_open(const char *url, bool append, CvStagedTransfer download,
                              CvStagedTransfer upload, CvWriteFile **out)
{
    StagedWrite *f = calloc(1, sizeof(*f));
    if (!f || !(f->base.url = strdup(url))) {
        free(f);
        return cv_error_nomem();
    }
    f->base.methods = &staged_methods;
    f->upload = upload;
    const char *dir = getenv("TMPDIR");
    snprintf(f->temp, sizeof(f->temp), "%.40s/conveyor-up-XXXXXX", dir && *dir ? dir : "/tmp");
    f->fd = mkstemp(f->temp);
    CvStatus s = f->fd < 0 ? cv_file_error(errno, f->temp, "(an upload's temporary file)")
                           : CV_STATUS_OK;
    if (!s && append) { /* what is there, then the appends */
        s = download(url, f->temp);
        if (s && s->code == CV_NOT_FOUND) {
            cv_status_free(s);
            s = CV_STATUS_OK;
        } else if (!s && lseek(f->fd, 0, SEEK_END) < 0) {
            s = cv_file_error(errno, f->temp, NULL);
        }
    }
    if (s) {
        staged_abort(&f->base);
        return s;
    }
    *out = &f->base;
    return CV_STATUS_OK;
}
