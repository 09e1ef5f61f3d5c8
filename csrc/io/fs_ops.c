/* Whole operations over the file-system tables (see fs_ops.h). */
#include "io/fs_ops.h"

#include <stdlib.h>
#include <string.h>

#include "core/array.h"

void cv_name_list_free(CvNameList *n)
{
    for (size_t i = 0; i < n->len; i++)
        free(n->v[i]);
    free(n->v);
    *n = (CvNameList){0};
}

/* Gathers names; a failed allocation stops the listing and is remembered. */
typedef struct {
    CvNameList *list;
    bool nomem;
} Gather;

static int gather(void *ctx, const char *name, const CvFileInfo *info)
{
    (void)info;
    Gather *g = ctx;
    CvNameList *n = g->list;
    char *copy = strdup(name);
    if (!copy || (n->len == n->cap && !cv_array_reserve((void **)&n->v, &n->cap, n->len + 1,
                                                         sizeof(char *), 64))) {
        free(copy);
        g->nomem = true;
        return 1;
    }
    n->v[n->len++] = copy;
    return 0;
}

static CvStatus gathered(CvStatus s, Gather *g)
{
    if (!s && g->nomem)
        s = cv_error_nomem();
    if (s)
        cv_name_list_free(g->list);
    return s;
}

CvStatus cv_fs_list_names(const char *url, bool recursive, CvNameList *out)
{
    const CvFileSystem *fs;
    Gather g = {out, false};
    *out = (CvNameList){0};
    CvStatus s = cv_fs_find(url, &fs);
    if (!s)
        s = fs->list(url, recursive, gather, &g);
    return gathered(s, &g);
}

CvStatus cv_fs_glob_names(const char *pattern, CvNameList *out)
{
    Gather g = {out, false};
    *out = (CvNameList){0};
    return gathered(cv_fs_glob(pattern, gather, &g), &g);
}

CvStatus cv_fs_remove(const char *url)
{
    const CvFileSystem *fs;
    CvStatus s = cv_fs_find(url, &fs);
    return s ? s : fs->remove(url);
}

CvStatus cv_fs_make_dir(const char *url)
{
    const CvFileSystem *fs;
    CvStatus s = cv_fs_find(url, &fs);
    return s ? s : fs->make_dir(url);
}

CvStatus cv_fs_remove_dir(const char *url)
{
    const CvFileSystem *fs;
    CvStatus s = cv_fs_find(url, &fs);
    return s ? s : fs->remove_dir(url);
}

CvStatus cv_fs_open_read_sized(const char *url, CvReadFile **out)
{
    CvStatus s = cv_fs_open_read(url, out);
    if (!s && (s = cv_read_file_info(*out))) {
        (*out)->methods->close(*out);
        *out = NULL;
    }
    return s;
}

CvStatus cv_read_file_range(CvReadFile *f, uint64_t offset, int64_t size, char **data,
                            size_t *len)
{
    uint64_t known = f->waits || f->info.size == UINT64_MAX ? UINT64_MAX : f->info.size;
    uint64_t left = known == UINT64_MAX ? UINT64_MAX : known > offset ? known - offset : 0;
    if (size >= 0 && (uint64_t)size > left)
        size = (int64_t)left; /* no buffer bigger than what is there */
    size_t cap = size >= 0 ? (size_t)size
                 : known != UINT64_MAX ? (size_t)(known > offset ? known - offset : 0) + 1
                                       : (size_t)1 << 16;
    size_t got = 0;
    char *buf = NULL;
    CvStatus s = CV_STATUS_OK;
    *len = 0;
    for (;;) {
        if (*len == cap && size < 0)
            cap *= 2;
        char *bigger = realloc(buf, cap ? cap : 1);
        if (!bigger) {
            s = cv_error_nomem();
            break;
        }
        buf = bigger;
        s = f->methods->read(f, offset + *len, buf + *len, cap - *len, &got);
        *len += got;
        if (s || size >= 0 || *len < cap)
            break;
    }
    if (s) {
        free(buf);
        buf = NULL;
        *len = 0;
    }
    *data = buf;
    return s;
}

CvStatus cv_fs_file_open(const char *url, char mode, CvFsFile **out)
{
    CvFsFile *f = calloc(1, sizeof(*f));
    CvStatus s = !f                ? cv_error_nomem()
                 : mode == 'r'     ? cv_fs_open_read_sized(url, &f->reader)
                                   : cv_fs_open_write(url, mode == 'a', &f->writer);
    if (s)
        free(f);
    *out = s ? NULL : f;
    return s;
}

CvStatus cv_fs_file_finish(CvFsFile *f, bool commit)
{
    CvReadFile *r = f->reader;
    CvWriteFile *w = f->writer;
    f->reader = NULL;
    f->writer = NULL;
    if (r)
        r->methods->close(r);
    if (w && commit)
        return w->methods->commit(w);
    if (w)
        w->methods->abort(w);
    return CV_STATUS_OK;
}

void cv_fs_file_free(CvFsFile *f)
{
    if (f)
        cv_fs_file_finish(f, false); /* nothing to commit: never fails */
    free(f);
}
