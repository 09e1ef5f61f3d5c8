/* The fsspec fallback: a file-system table (io/fs.h) with scheme "*", for
 * every URL scheme the engine has no table of its own for (memory://,
 * hf://, abfs://, ...), registered at module init (fs.c).
 *
 * Each method takes the GIL (cv_python_begin, gil.c) and calls fsspec:
 * fsspec.core.url_to_fs(url) gives the file system object and its path.
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
#include "io/fs_ops.h"
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

/* Call fs.<method>(path) for `url`, or with a second string argument
 * `extra`: fs.<method>(path, extra), or fs.<method>(extra, path) when
 * `extra_first`. The GIL is taken here; *result gets the result (a new
 * reference) when `result` is not NULL. */
static CvStatus call(const char *url, const char *method, PyObject **result, const char *extra,
                     bool extra_first)
{
    CvPythonCall gil;
    PyObject *fs = NULL, *path = NULL, *r = NULL;
    if (cv_python_begin(&gil) < 0)
        return cv_error(CV_CANCELLED, "%s: Python is shutting down", url);
    CvStatus s = resolve(url, &fs, &path);
    if (!s) {
        r = !extra        ? PyObject_CallMethod(fs, method, "O", path)
            : extra_first ? PyObject_CallMethod(fs, method, "sO", extra, path)
                          : PyObject_CallMethod(fs, method, "Os", path, extra);
        if (!r)
            s = error_from_python(url, method);
    }
    if (!s && result)
        *result = Py_NewRef(r);
    Py_XDECREF(r);
    Py_XDECREF(fs);
    Py_XDECREF(path);
    cv_python_end(&gil);
    return s;
}

/* An info dict -> CvFileInfo. With the GIL held. */
static void info_from_dict(PyObject *d, CvFileInfo *out)
{
    memset(out, 0, sizeof(*out));
    out->size = UINT64_MAX;
    if (!PyDict_Check(d))
        return;
    PyObject *v = PyDict_GetItemString(d, "size");
    if (v && PyLong_Check(v))
        out->size = PyLong_AsUnsignedLongLong(v);
    v = PyDict_GetItemString(d, "type");
    out->is_dir = v && PyUnicode_Check(v) && strcmp(PyUnicode_AsUTF8(v), "directory") == 0;
    const char *times[] = {"mtime", "LastModified", "updated", "modified", "created"};
    for (size_t i = 0; i < sizeof(times) / sizeof(times[0]) && !out->mtime_ns; i++) {
        if (!(v = PyDict_GetItemString(d, times[i])))
            continue;
        PyObject *ts = PyNumber_Check(v) ? PyNumber_Float(v)
                       : PyObject_HasAttrString(v, "timestamp")
                           ? PyObject_CallMethod(v, "timestamp", NULL)
                           : NULL;
        if (ts && PyFloat_Check(ts))
            out->mtime_ns = (int64_t)(PyFloat_AS_DOUBLE(ts) * 1e9);
        Py_XDECREF(ts);
    }
    const char *versions[] = {"generation", "ETag", "etag", "VersionId", "version_id"};
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]) && !out->version[0]; i++)
        if ((v = PyDict_GetItemString(d, versions[i]))) {
            PyObject *text = PyObject_Str(v);
            const char *t = text ? PyUnicode_AsUTF8(text) : NULL;
            if (t)
                snprintf(out->version, sizeof(out->version), "%s", t);
            Py_XDECREF(text);
        }
    PyErr_Clear();
}

static CvStatus fsspec_stat(const char *url, CvFileInfo *out)
{
    PyObject *d = NULL;
    CvStatus s = call(url, "info", &d, NULL, false);
    if (s)
        return s;
    CvPythonCall gil;
    if (cv_python_begin(&gil) < 0) /* d is left: Python is going away */
        return cv_error(CV_CANCELLED, "%s: Python is shutting down", url);
    info_from_dict(d, out);
    Py_DECREF(d);
    cv_python_end(&gil);
    return CV_STATUS_OK;
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

typedef struct Listing {
    char **names;
    CvFileInfo *infos;
    size_t len;
} Listing;

/* fs.ls(path, detail=True) or fs.find(path, detail=True) (a dict), names
 * made relative to path; with the GIL held. */
static CvStatus collect(const char *url, PyObject *fs, PyObject *path, bool recursive, Listing *l)
{
    PyObject *kw = Py_BuildValue("{s:O}", "detail", Py_True);
    PyObject *fn = PyObject_GetAttrString(fs, recursive ? "find" : "ls");
    PyObject *args = Py_BuildValue("(O)", path);
    PyObject *r = kw && fn && args ? PyObject_Call(fn, args, kw) : NULL;
    PyObject *items = NULL;
    CvStatus s = CV_STATUS_OK;
    Py_XDECREF(kw);
    Py_XDECREF(fn);
    Py_XDECREF(args);
    if (r && PyDict_Check(r))
        items = PyDict_Values(r);
    else if (r)
        items = PySequence_List(r);
    if (!items) {
        s = error_from_python(url, recursive ? "find" : "ls");
        goto done;
    }
    const char *base = PyUnicode_AsUTF8(path);
    size_t base_len = base ? strlen(base) : 0;
    while (base_len && base[base_len - 1] == '/')
        base_len--;
    Py_ssize_t n = PyList_GET_SIZE(items);
    l->names = calloc((size_t)n + 1, sizeof(char *));
    l->infos = calloc((size_t)n + 1, sizeof(CvFileInfo));
    if (!l->names || !l->infos) {
        s = cv_error_nomem();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyList_GET_ITEM(items, i);
        PyObject *name = PyDict_Check(d) ? PyDict_GetItemString(d, "name") : NULL;
        const char *full = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
        if (!full)
            continue;
        if (strncmp(full, base, base_len) == 0 && full[base_len] == '/')
            full += base_len + 1;
        else if (strncmp(full, base, base_len) == 0 && full[base_len] == '\0')
            continue; /* the directory itself, or a file listed as itself */
        char *copy = strdup(full);
        if (!copy) {
            s = cv_error_nomem();
            goto done;
        }
        size_t k = strlen(copy);
        while (k && copy[k - 1] == '/')
            copy[--k] = '\0'; /* no trailing '/' (fs.h) */
        info_from_dict(d, &l->infos[l->len]);
        l->names[l->len++] = copy;
    }
done:
    PyErr_Clear();
    Py_XDECREF(items);
    Py_XDECREF(r);
    return s;
}

static CvStatus fsspec_list(const char *url, bool recursive, CvFsListFn each, void *ctx)
{
    CvPythonCall gil;
    PyObject *fs = NULL, *path = NULL;
    Listing l = {0};
    if (cv_python_begin(&gil) < 0)
        return cv_error(CV_CANCELLED, "%s: Python is shutting down", url);
    CvStatus s = resolve(url, &fs, &path);
    if (!s)
        s = collect(url, fs, path, recursive, &l);
    Py_XDECREF(fs);
    Py_XDECREF(path);
    cv_python_end(&gil);
    if (!s)
        s = cv_fs_each_sorted(l.names, l.infos, l.len, each, ctx);
    for (size_t i = 0; i < l.len; i++)
        free(l.names[i]);
    free(l.names);
    free(l.infos);
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
    CvPythonCall gil;
    PyObject *fs = NULL, *path = NULL, *r = NULL;
    if (cv_python_begin(&gil) < 0)
        return cv_error(CV_CANCELLED, "%s: Python is shutting down", url);
    if (!(s = resolve(url, &fs, &path))) {
        PyObject *kw = Py_BuildValue("{s:O}", "create_parents", Py_False);
        PyObject *fn = PyObject_GetAttrString(fs, "mkdir");
        PyObject *args = Py_BuildValue("(O)", path);
        r = kw && fn && args ? PyObject_Call(fn, args, kw) : NULL;
        if (!r)
            s = error_from_python(url, "mkdir");
        Py_XDECREF(kw);
        Py_XDECREF(fn);
        Py_XDECREF(args);
    }
    Py_XDECREF(r);
    Py_XDECREF(fs);
    Py_XDECREF(path);
    cv_python_end(&gil);
    return s;
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
