/* The fsspec fallback: a file-system table (io/fs.h) with scheme "*", for
 * every URL scheme the engine has no table of its own for (memory://,
 * hf://, abfs://, ...), registered at module exec (module.c). Each method
 * takes the GIL (cv_python_begin, gil.c) and calls the Python half,
 * conveyor/io/_fsspec.py, which finds fsspec's file system for the URL,
 * calls it and gives fsspec's answers as plain tuples converted here; its
 * call() turns an exception into the status code and message naming the
 * URL. Writes are staged in a local temporary file (io/fs_staged.h) that
 * commit uploads whole. Thread-safety: as fs.h (the GIL orders the Python).
 */
#include "python/binding.h"

#include <stdarg.h>

#include "io/fs.h"
#include "io/fs_staged.h"

/* Reads a half's result with the GIL held (ctx: what to fill). */
typedef CvStatus (*TakeFn)(PyObject *result, const char *url, void *ctx);

/* conveyor.io._fsspec.call(fn, url, what, args), args built by
 * Py_BuildValue from fmt (a tuple), with the GIL: (0, fn's result), read by
 * take(result, url, ctx) when take is not NULL, or the (code, message
 * naming `url` and `what`) of what it raised. */
static CvStatus half_call(const char *url, const char *what, const char *fn, TakeFn take,
                          void *ctx, const char *fmt, ...)
{
    CvPythonCall gil;
    if (cv_python_begin(&gil) < 0)
        return cv_error(CV_CANCELLED, "%s: Python is shutting down", url);
    va_list ap;
    va_start(ap, fmt);
    PyObject *args = Py_VaBuildValue(fmt, ap), *value = NULL;
    va_end(ap);
    PyObject *half = PyImport_ImportModule("conveyor.io._fsspec");
    PyObject *r = half && args ? PyObject_CallMethod(half, "call", "sssO", fn, url, what, args)
                               : NULL;
    int code = CV_UNKNOWN;
    const char *message = NULL;
    CvStatus s;
    if (r && PyArg_ParseTuple(r, "iO", &code, &value) && code == CV_OK)
        s = take ? take(value, url, ctx) : CV_STATUS_OK;
    else if (value && (message = PyUnicode_AsUTF8(value)))
        s = cv_error((CvCode)code, "%s", message);
    else
        s = cv_error(CV_UNKNOWN, "%s: the fsspec fallback failed (%s)", url, what);
    PyErr_Clear(); /* the statuses say what went wrong */
    Py_XDECREF(r);
    Py_XDECREF(half);
    Py_XDECREF(args);
    cv_python_end(&gil);
    return s;
}

/* An entry (size or -1, mtime_ns, is_dir, version[, name]) of the Python
 * half -> CvFileInfo, and the name (borrowed) where the entry has one.
 * With the GIL held; -1 with an exception set. */
static int info_from_entry(PyObject *e, CvFileInfo *out, const char **name)
{
    long long size, mtime;
    int is_dir;
    const char *version;
    if (!PyTuple_Check(e) || !PyArg_ParseTuple(e, "LLps|s", &size, &mtime, &is_dir, &version, name))
        return -1;
    memset(out, 0, sizeof(*out));
    out->size = size < 0 ? UINT64_MAX : (uint64_t)size;
    out->mtime_ns = mtime;
    out->is_dir = is_dir;
    snprintf(out->version, sizeof(out->version), "%s", version);
    return 0;
}

static CvStatus take_info(PyObject *r, const char *url, void *out)
{
    const char *no_name = NULL;
    return info_from_entry(r, out, &no_name) < 0 ? cv_error(CV_INTERNAL, "%s: no file info", url)
                                                 : CV_STATUS_OK;
}

static CvStatus fsspec_stat(const char *url, CvFileInfo *out)
{
    return half_call(url, "info", "info", take_info, out, "(s)", url);
}

/* ---- reading ----------------------------------------------------------- */

typedef struct FsspecRead {
    CvReadFile base;
    PyObject *file; /* fsspec's file object (GIL to touch) */
} FsspecRead;

typedef struct Read {
    char *dst;
    size_t n, got;
} Read;

static CvStatus take_bytes(PyObject *r, const char *url, void *ctx)
{
    Read *read = ctx;
    if (!PyBytes_Check(r))
        return cv_error(CV_INTERNAL, "%s: fsspec's read() gave no bytes", url);
    read->got = (size_t)PyBytes_GET_SIZE(r) < read->n ? (size_t)PyBytes_GET_SIZE(r) : read->n;
    memcpy(read->dst, PyBytes_AS_STRING(r), read->got);
    return CV_STATUS_OK;
}

static CvStatus take_object(PyObject *r, const char *url, void *ctx)
{
    (void)url;
    *(PyObject **)ctx = Py_NewRef(r);
    return CV_STATUS_OK;
}

static CvStatus fsspec_read(CvReadFile *base, uint64_t offset, void *dst, size_t n, size_t *got)
{
    Read read = {dst, n, 0};
    CvStatus s = half_call(base->url, "read", "read", take_bytes, &read, "(OKns)",
                           ((FsspecRead *)base)->file, (unsigned long long)offset, (Py_ssize_t)n,
                           base->url);
    *got = read.got;
    return s;
}

static void fsspec_read_close(CvReadFile *base)
{
    FsspecRead *f = (FsspecRead *)base;
    if (f->file) /* the call takes the reference; an error closing is ignored */
        cv_status_free(half_call(base->url, "close", "close", NULL, NULL, "(N)", f->file));
    free(base->url);
    free(f);
}

static const CvReadFileMethods fsspec_read_methods = {fsspec_read, fsspec_read_close};

static CvStatus fsspec_open_read(const char *url, CvReadFile **out)
{
    FsspecRead *f = calloc(1, sizeof(*f));
    if (!f || !(f->base.url = strdup(url))) {
        free(f);
        return cv_error_nomem();
    }
    f->base.methods = &fsspec_read_methods;
    CvStatus s = fsspec_stat(url, &f->base.info);
    if (!s && f->base.info.is_dir)
        s = cv_error(CV_FAILED_PRECONDITION, "%s; Is a directory", url);
    if (!s)
        s = half_call(url, "open", "open_read", take_object, &f->file, "(s)", url);
    if (s) {
        fsspec_read_close(&f->base);
        return s;
    }
    *out = &f->base;
    return CV_STATUS_OK;
}

/* ---- writing: staged in a local file (io/fs_staged.h) ---------------- */

static CvStatus fsspec_upload(const char *url, const char *local)
{
    return half_call(url, "put_file", "put", NULL, NULL, "(ss)", url, local);
}

static CvStatus fsspec_download(const char *url, const char *local)
{
    return half_call(url, "get_file", "get", NULL, NULL, "(ss)", url, local);
}

static CvStatus fsspec_open_write(const char *url, bool append, CvWriteFile **out)
{
    return cv_staged_write_open(url, append, fsspec_download, fsspec_upload, out);
}

/* ---- the rest of the table --------------------------------------------- */

typedef struct Listing {
    Py_ssize_t n;
    char **names;
    CvFileInfo *infos;
} Listing;

/* The half's sorted listing copied out, so that each() runs without the GIL. */
static CvStatus take_listing(PyObject *entries, const char *url, void *ctx)
{
    Listing *l = ctx;
    CvStatus s = CV_STATUS_OK;
    l->n = PyList_Check(entries) ? PyList_GET_SIZE(entries) : 0;
    l->names = calloc((size_t)l->n + 1, sizeof(char *));
    l->infos = calloc((size_t)l->n + 1, sizeof(CvFileInfo));
    if (!l->names || !l->infos)
        s = cv_error_nomem();
    for (Py_ssize_t i = 0; !s && i < l->n; i++) {
        const char *name = NULL;
        if (info_from_entry(PyList_GET_ITEM(entries, i), &l->infos[i], &name) < 0 || !name)
            s = cv_error(CV_INTERNAL, "%s: a listing entry is not (size, mtime, dir, version, "
                         "name)", url);
        else if (!(l->names[i] = strdup(name)))
            s = cv_error_nomem();
    }
    return s;
}

static CvStatus fsspec_list(const char *url, bool recursive, CvFsListFn each, void *ctx)
{
    Listing l = {0};
    CvStatus s = half_call(url, recursive ? "find" : "ls", "listing", take_listing, &l, "(sO)", url,
                           recursive ? Py_True : Py_False);
    for (Py_ssize_t i = 0; !s && i < l.n; i++)
        if (each(ctx, l.names[i], &l.infos[i]))
            break;
    for (Py_ssize_t i = 0; l.names && i < l.n; i++)
        free(l.names[i]);
    free(l.names);
    free(l.infos);
    return s;
}

static CvStatus fsspec_remove(const char *url)
{
    return half_call(url, "rm_file", "remove", NULL, NULL, "(s)", url);
}

static CvStatus fsspec_make_dir(const char *url)
{
    return half_call(url, "mkdir", "make_dir", NULL, NULL, "(s)", url);
}

static CvStatus fsspec_remove_dir(const char *url)
{
    return half_call(url, "rmdir", "remove_dir", NULL, NULL, "(s)", url);
}

/* rename and copy: within one fsspec file system object (the half says
 * UNIMPLEMENTED across two). */
static CvStatus fsspec_rename(const char *from, const char *to, bool overwrite)
{
    return half_call(from, "mv", "two_urls", NULL, NULL, "(sssO)", "mv", from, to,
                     overwrite ? Py_True : Py_False);
}

static CvStatus fsspec_copy(const char *from, const char *to, bool overwrite)
{
    return half_call(from, "copy", "two_urls", NULL, NULL, "(sssO)", "copy", from, to,
                     overwrite ? Py_True : Py_False);
}

const CvFileSystem cv_fs_fsspec = {
    .scheme = "*",
    .open_read = fsspec_open_read,
    .open_write = fsspec_open_write,
    .stat = fsspec_stat,
    .list = fsspec_list,
    .remove = fsspec_remove,
    .make_dir = fsspec_make_dir,
    .remove_dir = fsspec_remove_dir,
    .rename = fsspec_rename,
    .copy = fsspec_copy,
};
