/* The fsspec fallback: a file-system table (io/fs.h) with scheme "*", for
 * every URL scheme the engine has no table of its own for (memory://,
 * hf://, abfs://, ...), registered at module init (fs.c).
 *
 * Each method takes the GIL (cv_python_begin, gil.c) and calls fsspec:
 * fsspec.core.url_to_fs(url) gives the file system object and its path;
 * what fsspec's answers mean (info dicts, listings) is read by the Python
 * half, conveyor/io/_fsspec.py, into plain tuples converted here.
 * Python exceptions become statuses naming the URL: FileNotFoundError ->
 * NOT_FOUND, PermissionError -> PERMISSION_DENIED, FileExistsError ->
 * ALREADY_EXISTS, IsADirectoryError -> FAILED_PRECONDITION, an unknown
 * protocol or a missing fsspec -> UNIMPLEMENTED, anything else UNKNOWN.
 *
 * Writes are staged in a local temporary file (io/fs_staged.h) that commit
 * uploads whole with fs.put_file. Reads keep the
 * fsspec file object open and seek only when the offset is not where the
 * last read stopped. Thread-safety: as fs.h (the GIL orders the Python).
 */
#include "python/binding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/fs.h"
#include "io/fs_staged.h"

/* ---- calling fsspec ---------------------------------------------------- */

/* The status for the Python exception set now (cleared), naming `url`. */
static CvStatus error_from_python(const char *url, const char *what)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    CvCode code = CV_UNKNOWN;
    if (PyErr_GivenExceptionMatches(type, PyExc_FileNotFoundError))
        code = CV_NOT_FOUND;
    else if (PyErr_GivenExceptionMatches(type, PyExc_PermissionError))
        code = CV_PERMISSION_DENIED;
    else if (PyErr_GivenExceptionMatches(type, PyExc_FileExistsError))
        code = CV_ALREADY_EXISTS;
    else if (PyErr_GivenExceptionMatches(type, PyExc_IsADirectoryError) ||
             PyErr_GivenExceptionMatches(type, PyExc_NotADirectoryError))
        code = CV_FAILED_PRECONDITION;
    else if (PyErr_GivenExceptionMatches(type, PyExc_NotImplementedError))
        code = CV_UNIMPLEMENTED;
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *message = text ? PyUnicode_AsUTF8(text) : NULL;
    PyErr_Clear();
    CvStatus s = cv_error(code, "%s; %s%s%s (fsspec, %s)", url,
                          type ? ((PyTypeObject *)type)->tp_name : "error", message ? ": " : "",
                          message ? message : "", what);
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return s;
}

/* fsspec's file system object and path for `url` (new references). With
 * the GIL held. */
static CvStatus resolve(const char *url, PyObject **fs, PyObject **path)
{
    PyObject *core = PyImport_ImportModule("fsspec.core");
    if (!core) {
        PyErr_Clear();
        const char *end = strstr(url, "://");
        return cv_error(CV_UNIMPLEMENTED,
                        "%s: no file system is registered for the scheme '%.*s://'; install "
                        "fsspec (pip install fsspec) and an implementation of the scheme",
                        url, end ? (int)(end - url) : 0, url);
    }
    PyObject *pair = PyObject_CallMethod(core, "url_to_fs", "s", url);
    Py_DECREF(core);
    if (!pair || !PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        CvStatus s = pair ? cv_error(CV_INTERNAL, "%s: fsspec.core.url_to_fs gave no pair", url)
                          : error_from_python(url, "url_to_fs");
        if (s->code == CV_UNKNOWN) /* ValueError("Protocol not known"), ImportError of a driver */
            s->code = CV_UNIMPLEMENTED;
        Py_XDECREF(pair);
        return s;
    }
    *fs = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
    *path = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
    Py_DECREF(pair);
    return CV_STATUS_OK;
}

/* Call, for `url`, fs.<method>(path), or with a second string argument
 * `extra`: fs.<method>(path, extra), or fs.<method>(extra, path) when
 * `extra_first`; or, when `method` is "@name", conveyor.io._fsspec.name(fs,
 * path[, flag]) (the Python half: fsspec's answers as plain values), its
 * errors naming `what`. The GIL is taken here; *result gets the result (a
 * new reference) when `result` is not NULL. */
static CvStatus call_as(const char *url, const char *method, const char *what, PyObject **result,
                        const char *extra, bool extra_first, PyObject *flag)
{
    CvPythonCall gil;
    PyObject *fs = NULL, *path = NULL, *r = NULL, *half = NULL;
    if (cv_python_begin(&gil) < 0)
        return cv_error(CV_CANCELLED, "%s: Python is shutting down", url);
    CvStatus s = resolve(url, &fs, &path);
    if (!s && method[0] == '@') {
        half = PyImport_ImportModule("conveyor.io._fsspec");
        r = !half ? NULL
            : flag ? PyObject_CallMethod(half, method + 1, "OOO", fs, path, flag)
                   : PyObject_CallMethod(half, method + 1, "OO", fs, path);
    } else if (!s) {
        r = !extra        ? PyObject_CallMethod(fs, method, "O", path)
            : extra_first ? PyObject_CallMethod(fs, method, "sO", extra, path)
                          : PyObject_CallMethod(fs, method, "Os", path, extra);
    }
    if (!s && !r)
        s = error_from_python(url, what);
    if (!s && result)
        *result = Py_NewRef(r);
    Py_XDECREF(r);
    Py_XDECREF(half);
    Py_XDECREF(fs);
    Py_XDECREF(path);
    cv_python_end(&gil);
    return s;
}

static CvStatus call(const char *url, const char *method, PyObject **result, const char *extra,
                     bool extra_first)
{
    return call_as(url, method, method, result, extra, extra_first, NULL);
}

/* An entry (size or -1, mtime_ns, is_dir, version) of the Python half ->
 * CvFileInfo. With the GIL held. */
static int info_from_entry(PyObject *e, Py_ssize_t first, CvFileInfo *out)
{
    long long size, mtime;
    int is_dir;
    const char *version;
    PyObject *rest = PyTuple_Check(e) ? PyTuple_GetSlice(e, first, first + 4) : NULL;
    int ok = rest && PyArg_ParseTuple(rest, "LLps", &size, &mtime, &is_dir, &version);
    Py_XDECREF(rest);
    if (!ok)
        return -1;
    memset(out, 0, sizeof(*out));
    out->size = size < 0 ? UINT64_MAX : (uint64_t)size;
    out->mtime_ns = mtime;
    out->is_dir = is_dir;
    snprintf(out->version, sizeof(out->version), "%s", version);
    return 0;
}

static CvStatus fsspec_stat(const char *url, CvFileInfo *out)
{
    PyObject *e = NULL;
    CvStatus s = call_as(url, "@info", "info", &e, NULL, false, NULL);
    if (s)
        return s;
    CvPythonCall gil;
    if (cv_python_begin(&gil) < 0) /* e is left: Python is going away */
        return cv_error(CV_CANCELLED, "%s: Python is shutting down", url);
    if (info_from_entry(e, 0, out) < 0)
        s = error_from_python(url, "info");
    Py_DECREF(e);
    cv_python_end(&gil);
    return s;
}

/* ---- reading ----------------------------------------------------------- */

typedef struct FsspecRead {
    CvReadFile base;
    PyObject *file; /* fsspec's file object (GIL to touch) */
    uint64_t position;
} FsspecRead;

static CvStatus fsspec_read(CvReadFile *base, uint64_t offset, void *dst, size_t n, size_t *got)
{
    FsspecRead *f = (FsspecRead *)base;
    CvPythonCall gil;
    CvStatus s = CV_STATUS_OK;
    *got = 0;
    if (cv_python_begin(&gil) < 0)
        return cv_error(CV_CANCELLED, "%s: Python is shutting down", base->url);
    if (offset != f->position) {
        PyObject *r = PyObject_CallMethod(f->file, "seek", "K", (unsigned long long)offset);
        if (!r)
            s = error_from_python(base->url, "seek");
        Py_XDECREF(r);
        f->position = offset;
    }
    while (!s && *got < n) { /* read(k) may give fewer bytes before the end */
        PyObject *data = PyObject_CallMethod(f->file, "read", "n", (Py_ssize_t)(n - *got));
        if (!data || !PyBytes_Check(data)) {
            s = data ? cv_error(CV_INTERNAL, "%s: fsspec's read() gave no bytes", base->url)
                     : error_from_python(base->url, "read");
            Py_XDECREF(data);
            break;
        }
        size_t k = (size_t)PyBytes_GET_SIZE(data);
        if (k > n - *got)
            k = n - *got;
        memcpy((char *)dst + *got, PyBytes_AS_STRING(data), k);
        Py_DECREF(data);
        *got += k;
        f->position += k;
        if (k == 0)
            break;
    }
    cv_python_end(&gil);
    return s;
}

static void fsspec_read_close(CvReadFile *base)
{
    FsspecRead *f = (FsspecRead *)base;
    CvPythonCall gil;
    if (f->file && cv_python_begin(&gil) == 0) {
        PyObject *r = PyObject_CallMethod(f->file, "close", NULL);
        if (!r)
            PyErr_Clear();
        Py_XDECREF(r);
        Py_DECREF(f->file);
        cv_python_end(&gil);
    }
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
        s = call(url, "open", &f->file, "rb", false);
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
    return call(url, "put_file", NULL, local, true); /* fs.put_file(local, path) */
}

static CvStatus fsspec_download(const char *url, const char *local)
{
    return call(url, "get_file", NULL, local, false); /* fs.get_file(path, local) */
}

static CvStatus fsspec_open_write(const char *url, bool append, CvWriteFile **out)
{
    return cv_staged_write_open(url, append, fsspec_download, fsspec_upload, out);
}

/* ---- the rest of the table --------------------------------------------- */

/* The Python half's sorted listing, copied out so that each() runs without
 * the GIL. */
static CvStatus fsspec_list(const char *url, bool recursive, CvFsListFn each, void *ctx)
{
    PyObject *entries = NULL;
    CvStatus s = call_as(url, "@listing", recursive ? "find" : "ls", &entries, NULL, false,
                         recursive ? Py_True : Py_False);
    if (s)
        return s;
    CvPythonCall gil;
    if (cv_python_begin(&gil) < 0)
        return cv_error(CV_CANCELLED, "%s: Python is shutting down", url);
    Py_ssize_t n = PyList_Check(entries) ? PyList_GET_SIZE(entries) : 0;
    char **names = calloc((size_t)n + 1, sizeof(char *));
    CvFileInfo *infos = calloc((size_t)n + 1, sizeof(CvFileInfo));
    if (!names || !infos)
        s = cv_error_nomem();
    for (Py_ssize_t i = 0; !s && i < n; i++) {
        PyObject *e = PyList_GET_ITEM(entries, i);
        const char *name = PyTuple_Check(e) && PyTuple_GET_SIZE(e) == 5
                               ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(e, 0)) : NULL;
        if (!name || info_from_entry(e, 1, &infos[i]) < 0)
            s = error_from_python(url, recursive ? "find" : "ls");
        else if (!(names[i] = strdup(name)))
            s = cv_error_nomem();
    }
    Py_DECREF(entries);
    cv_python_end(&gil);
    for (Py_ssize_t i = 0; !s && i < n; i++)
        if (each(ctx, names[i], &infos[i]))
            break;
    for (Py_ssize_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
    free(infos);
    return s;
}

static CvStatus fsspec_remove(const char *url)
{
    return call(url, "rm_file", NULL, NULL, false);
}

static CvStatus fsspec_make_dir(const char *url)
{
    CvFileInfo info;
    CvStatus s = fsspec_stat(url, &info);
    if (!s && info.is_dir)
        return CV_STATUS_OK;
    cv_status_free(s);
    return call_as(url, "@make_dir", "mkdir", NULL, NULL, false, NULL);
}

static CvStatus fsspec_remove_dir(const char *url)
{
    return call(url, "rmdir", NULL, NULL, false);
}

/* rename and copy: fs.mv / fs.copy(from, to) within one fsspec file system
 * object; across two (two schemes both taken by this table) UNIMPLEMENTED. */
static CvStatus two_paths(const char *from, const char *to, bool overwrite, const char *method)
{
    CvFileInfo info;
    CvStatus s = overwrite ? NULL : fsspec_stat(to, &info);
    if (!overwrite && !s)
        return cv_error(CV_ALREADY_EXISTS, "%s; the target exists", to);
    cv_status_free(s);
    s = CV_STATUS_OK;
    CvPythonCall gil;
    PyObject *fa = NULL, *pa = NULL, *fb = NULL, *pb = NULL, *r = NULL;
    if (cv_python_begin(&gil) < 0)
        return cv_error(CV_CANCELLED, "%s: Python is shutting down", from);
    if (!(s = resolve(from, &fa, &pa)) && !(s = resolve(to, &fb, &pb))) {
        if (fa != fb)
            s = cv_error(CV_UNIMPLEMENTED, "%s -> %s: %s across two fsspec file systems", from,
                         to, method);
        else if (!(r = PyObject_CallMethod(fa, method, "OO", pa, pb)))
            s = error_from_python(from, method);
    }
    Py_XDECREF(r);
    Py_XDECREF(fa);
    Py_XDECREF(pa);
    Py_XDECREF(fb);
    Py_XDECREF(pb);
    cv_python_end(&gil);
    return s;
}

static CvStatus fsspec_rename(const char *from, const char *to, bool overwrite)
{
    return two_paths(from, to, overwrite, "mv");
}

static CvStatus fsspec_copy(const char *from, const char *to, bool overwrite)
{
    return two_paths(from, to, overwrite, "copy");
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
