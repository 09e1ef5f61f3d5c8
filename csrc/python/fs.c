/* The file-system layer for Python (io/fs.h): _engine.fs_* functions and the
 * FsReader/FsWriter pair that conveyor.io.gfile is built on.
 *
 * Every engine call runs without the GIL (it may wait on the network); its
 * results are copied into Python objects after the GIL is back. Paths are
 * str, bytes or os.PathLike (PyUnicode_FSConverter). Errors go through the
 * one status -> exception path (errors.c). A reader or writer belongs to one
 * thread at a time: a second thread using it while a call is in flight gets
 * RuntimeError rather than a data race.
 */
#include "python/binding.h"

#include "io/fs.h"
#include "io/fs_ops.h"
#include "io/http.h"

#define UNLOCKED(stmt)                                                                           \
    do {                                                                                         \
        Py_BEGIN_ALLOW_THREADS stmt;                                                             \
        Py_END_ALLOW_THREADS                                                                     \
    } while (0)

static PyObject *raise(PyObject *module, CvStatus s)
{
    return cv_raise_status(cv_get_state(module), s);
}

/* ---- module functions -------------------------------------------------- */

static PyObject *fs_stat(PyObject *module, PyObject *arg)
{
    PyObject *path = NULL;
    CvFileInfo info;
    CvStatus s;
    if (!PyUnicode_FSConverter(arg, &path))
        return NULL;
    UNLOCKED(s = cv_fs_stat(PyBytes_AS_STRING(path), &info));
    Py_DECREF(path);
    if (s)
        return raise(module, s);
    return Py_BuildValue("(LLOs)", info.size == UINT64_MAX ? -1LL : (long long)info.size,
                         (long long)info.mtime_ns, info.is_dir ? Py_True : Py_False, info.version);
}

/* A list of str from names gathered without the GIL (freed here). */
static PyObject *names_to_list(PyObject *module, CvNameList *n, CvStatus s)
{
    PyObject *list = NULL;
    if (s)
        return raise(module, s);
    if ((list = PyList_New((Py_ssize_t)n->len)))
        for (size_t i = 0; i < n->len; i++) {
            PyObject *item = PyUnicode_DecodeFSDefault(n->v[i]);
            if (!item) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
        }
    cv_name_list_free(n);
    return list;
}

static PyObject *fs_list(PyObject *module, PyObject *args)
{
    PyObject *path = NULL;
    int recursive = 0;
    CvNameList names;
    CvStatus s;
    if (!PyArg_ParseTuple(args, "O&|p:fs_list", PyUnicode_FSConverter, &path, &recursive))
        return NULL;
    UNLOCKED(s = cv_fs_list_names(PyBytes_AS_STRING(path), recursive, &names));
    Py_DECREF(path);
    return names_to_list(module, &names, s);
}

static PyObject *fs_glob(PyObject *module, PyObject *arg)
{
    PyObject *path = NULL;
    CvNameList names;
    CvStatus s;
    if (!PyUnicode_FSConverter(arg, &path))
        return NULL;
    UNLOCKED(s = cv_fs_glob_names(PyBytes_AS_STRING(path), &names));
    Py_DECREF(path);
    return names_to_list(module, &names, s);
}

/* fs_remove, fs_make_dir, fs_remove_dir: one URL, one call of fs_ops.h. */
static PyObject *one_url(PyObject *module, PyObject *arg, CvStatus (*op)(const char *url))
{
    PyObject *path = NULL;
    CvStatus s;
    if (!PyUnicode_FSConverter(arg, &path))
        return NULL;
    UNLOCKED(s = op(PyBytes_AS_STRING(path)));
    Py_DECREF(path);
    if (s)
        return raise(module, s);
    Py_RETURN_NONE;
}

static PyObject *fs_remove(PyObject *module, PyObject *arg)
{
    return one_url(module, arg, cv_fs_remove);
}

static PyObject *fs_make_dir(PyObject *module, PyObject *arg)
{
    return one_url(module, arg, cv_fs_make_dir);
}

static PyObject *fs_remove_dir(PyObject *module, PyObject *arg)
{
    return one_url(module, arg, cv_fs_remove_dir);
}

static PyObject *two_urls(PyObject *module, PyObject *args, bool rename)
{
    PyObject *a = NULL, *b = NULL;
    int overwrite = 0;
    CvStatus s;
    if (!PyArg_ParseTuple(args, "O&O&|p", PyUnicode_FSConverter, &a, PyUnicode_FSConverter, &b,
                          &overwrite)) {
        Py_XDECREF(a);
        return NULL;
    }
    const char *from = PyBytes_AS_STRING(a), *to = PyBytes_AS_STRING(b);
    UNLOCKED(s = rename ? cv_fs_rename(from, to, overwrite) : cv_fs_copy(from, to, overwrite));
    Py_DECREF(a);
    Py_DECREF(b);
    if (s)
        return raise(module, s);
    Py_RETURN_NONE;
}

static PyObject *fs_rename(PyObject *module, PyObject *args)
{
    return two_urls(module, args, true);
}

static PyObject *fs_copy(PyObject *module, PyObject *args)
{
    return two_urls(module, args, false);
}

/* Up to `size` bytes (-1: to the end) at `offset` of an open file, as a new
 * bytes object; read without the GIL. */
static PyObject *read_bytes(PyObject *module, CvReadFile *f, uint64_t offset, Py_ssize_t size)
{
    char *buf = NULL;
    size_t len = 0;
    CvStatus s;
    UNLOCKED(s = cv_read_file_range(f, offset, size, &buf, &len));
    PyObject *out = s ? raise(module, s) : PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
    free(buf);
    return out;
}

static PyObject *fs_read(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"url", "offset", "size", NULL};
    PyObject *path = NULL, *out = NULL;
    unsigned long long offset = 0;
    Py_ssize_t size = -1;
    CvReadFile *f = NULL;
    CvStatus s;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|Kn:fs_read", keywords,
                                     PyUnicode_FSConverter, &path, &offset, &size))
        return NULL;
    UNLOCKED(s = cv_fs_open_read_sized(PyBytes_AS_STRING(path), &f));
    Py_DECREF(path);
    if (s)
        return raise(module, s);
    out = read_bytes(module, f, offset, size);
    UNLOCKED(f->methods->close(f));
    return out;
}

/* ---- FsReader and FsWriter --------------------------------------------- */

/* One layout for both types; each uses its own file. */
typedef struct {
    PyObject_HEAD
    CvReadFile *reader;  /* FsReader's; NULL once closed */
    CvWriteFile *writer; /* FsWriter's; NULL once committed or aborted */
    uint64_t position;   /* FsReader's read position */
    bool busy;           /* a call without the GIL is in flight */
} FsFile;

static int check_usable(void *file, bool busy)
{
    if (!file)
        PyErr_SetString(PyExc_ValueError, "I/O operation on a closed file");
    else if (busy)
        PyErr_SetString(PyExc_RuntimeError, "the file is in use by another thread");
    return file && !busy;
}

/* Close a reader; commit (the file appears, complete) or abort (nothing
 * appears; an aborted upload is a request) a writer. Without the GIL: a
 * close may wait for reads in flight. */
static CvStatus finish(CvReadFile *r, CvWriteFile *w, bool commit)
{
    if (r)
        r->methods->close(r);
    if (w && commit)
        return w->methods->commit(w);
    if (w)
        w->methods->abort(w);
    return CV_STATUS_OK;
}

static PyObject *file_new(PyTypeObject *type, PyObject *args, bool writing)
{
    PyObject *path = NULL;
    int append = 0;
    CvReadFile *r = NULL;
    CvWriteFile *w = NULL;
    CvStatus s;
    if (!PyArg_ParseTuple(args, writing ? "O&|p:FsWriter" : "O&:FsReader", PyUnicode_FSConverter,
                          &path, &append))
        return NULL;
    const char *url = PyBytes_AS_STRING(path);
    UNLOCKED(s = writing ? cv_fs_open_write(url, append, &w) : cv_fs_open_read_sized(url, &r));
    Py_DECREF(path);
    FsFile *self = s ? NULL : (FsFile *)type->tp_alloc(type, 0);
    if (self) {
        self->reader = r;
        self->writer = w;
    } else if (!s) {
        finish(r, w, false);
    }
    return s ? raise(PyType_GetModule(type), s) : (PyObject *)self;
}

static PyObject *reader_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    (void)kwargs;
    return file_new(type, args, false);
}

static PyObject *writer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    (void)kwargs;
    return file_new(type, args, true);
}

/* close() of both, abort() of FsWriter. */
static PyObject *file_finish(FsFile *self, bool commit)
{
    CvStatus s;
    if (self->busy) {
        check_usable(self, true);
        return NULL;
    }
    CvReadFile *r = self->reader;
    CvWriteFile *w = self->writer;
    self->reader = NULL;
    self->writer = NULL;
    UNLOCKED(s = finish(r, w, commit));
    if (s)
        return raise(PyType_GetModule(Py_TYPE(self)), s);
    Py_RETURN_NONE;
}

static PyObject *file_close(FsFile *self, PyObject *unused)
{
    (void)unused;
    return file_finish(self, true);
}

static PyObject *writer_abort(FsFile *self, PyObject *unused)
{
    (void)unused;
    return file_finish(self, false);
}

static void file_dealloc(FsFile *self)
{
    PyTypeObject *type = Py_TYPE(self);
    if (self->reader || self->writer) /* never closed: a writer's file does not appear */
        UNLOCKED(finish(self->reader, self->writer, false));
    type->tp_free(self);
    Py_DECREF(type);
}

static PyObject *reader_read(FsFile *self, PyObject *args)
{
    Py_ssize_t n = -1;
    if (!PyArg_ParseTuple(args, "|n:read", &n) || !check_usable(self->reader, self->busy))
        return NULL;
    self->busy = true;
    PyObject *out = read_bytes(PyType_GetModule(Py_TYPE(self)), self->reader, self->position, n);
    self->busy = false;
    if (out)
        self->position += (uint64_t)PyBytes_GET_SIZE(out);
    return out;
}

/* seek(position): gfile resolves whence (conveyor/io/gfile.py). */
static PyObject *reader_seek(FsFile *self, PyObject *arg)
{
    long long position = PyLong_AsLongLong(arg);
    if ((position == -1 && PyErr_Occurred()) || !check_usable(self->reader, self->busy))
        return NULL;
    if (position < 0)
        return PyErr_Format(PyExc_ValueError, "seek to %lld is not possible in %s", position,
                            self->reader->url);
    self->position = (uint64_t)position;
    return PyLong_FromUnsignedLongLong(self->position);
}

static PyObject *reader_tell(FsFile *self, PyObject *unused)
{
    (void)unused;
    return check_usable(self->reader, false) ? PyLong_FromUnsignedLongLong(self->position) : NULL;
}

static PyObject *reader_size(FsFile *self, PyObject *unused)
{
    (void)unused;
    if (!check_usable(self->reader, false))
        return NULL;
    if (self->reader->info.size == UINT64_MAX)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(self->reader->info.size);
}

static PyObject *writer_write(FsFile *self, PyObject *arg)
{
    Py_buffer view;
    CvStatus s;
    if (!check_usable(self->writer, self->busy) || PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    self->busy = true;
    UNLOCKED(s = self->writer->methods->append(self->writer, view.buf, (size_t)view.len));
    self->busy = false;
    PyBuffer_Release(&view);
    if (s)
        return raise(PyType_GetModule(Py_TYPE(self)), s);
    Py_RETURN_NONE;
}

static PyMethodDef reader_methods[] = {
    {"read", (PyCFunction)reader_read, METH_VARARGS, "read(n=-1) -> bytes"},
    {"seek", (PyCFunction)reader_seek, METH_O, "seek(position) -> position"},
    {"tell", (PyCFunction)reader_tell, METH_NOARGS, "tell() -> position"},
    {"size", (PyCFunction)reader_size, METH_NOARGS, "size() -> bytes, or None when unknown"},
    {"close", (PyCFunction)file_close, METH_NOARGS, "close()"},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef writer_methods[] = {
    {"write", (PyCFunction)writer_write, METH_O, "write(bytes-like)"},
    {"close", (PyCFunction)file_close, METH_NOARGS, "close(): commit; the file appears"},
    {"abort", (PyCFunction)writer_abort, METH_NOARGS, "abort(): nothing appears"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot reader_slots[] = {
    {Py_tp_new, reader_new},
    {Py_tp_dealloc, file_dealloc},
    {Py_tp_methods, reader_methods},
    {Py_tp_doc, "FsReader(url): a file read through the engine's file-system layer"},
    {0, NULL},
};

static PyType_Slot writer_slots[] = {
    {Py_tp_new, writer_new},
    {Py_tp_dealloc, file_dealloc},
    {Py_tp_methods, writer_methods},
    {Py_tp_doc, "FsWriter(url, append=False): a file written through the file-system layer"},
    {0, NULL},
};

static PyType_Spec file_specs[] = {
    {"conveyor._engine.FsReader", sizeof(FsFile), 0, Py_TPFLAGS_DEFAULT, reader_slots},
    {"conveyor._engine.FsWriter", sizeof(FsFile), 0, Py_TPFLAGS_DEFAULT, writer_slots},
};

extern const CvFileSystem cv_fs_fsspec; /* fs_fsspec.c */

/* The process's I/O budget and what the HTTP client measured (io/http.h). */
static PyObject *io_stats(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    CvIoStats s;
    cv_io_stats(&s);
    return Py_BuildValue("{s:K,s:K,s:K,s:L,s:L,s:L,s:L,s:d,s:d}", "requests",
                         (unsigned long long)s.requests, "retries", (unsigned long long)s.retries,
                         "bytes_received", (unsigned long long)s.bytes_received,
                         "requests_in_flight", (long long)s.requests_in_flight, "bytes_in_flight",
                         (long long)s.bytes_in_flight, "budget_bytes", (long long)s.budget_bytes,
                         "budget_requests", (long long)s.budget_requests, "first_byte_ms",
                         s.first_byte_ms, "mb_per_s", s.mb_per_s);
}

static PyObject *set_io_budget(PyObject *module, PyObject *args)
{
    (void)module;
    long long bytes = 0, requests = 0;
    if (!PyArg_ParseTuple(args, "LL", &bytes, &requests))
        return NULL;
    cv_io_set_budget(bytes, requests);
    Py_RETURN_NONE;
}

int cv_fs_init(PyObject *module)
{
    cv_fs_register(&cv_fs_fsspec); /* every scheme without a table of its own */
    for (int i = 0; i < 2; i++) {
        PyObject *type = PyType_FromModuleAndSpec(module, &file_specs[i], NULL);
        int rc = type ? PyModule_AddType(module, (PyTypeObject *)type) : -1;
        Py_XDECREF(type);
        if (rc < 0)
            return -1;
    }
    return 0;
}

PyMethodDef cv_fs_functions[] = {
    {"fs_stat", fs_stat, METH_O, "fs_stat(url) -> (size or -1, mtime_ns, is_dir, version)"},
    {"fs_list", fs_list, METH_VARARGS, "fs_list(url, recursive=False) -> [names], sorted"},
    {"fs_glob", fs_glob, METH_O, "fs_glob(pattern) -> [urls], sorted"},
    {"fs_read", (PyCFunction)(void (*)(void))fs_read, METH_VARARGS | METH_KEYWORDS,
     "fs_read(url, offset=0, size=-1) -> bytes"},
    {"fs_remove", fs_remove, METH_O, "fs_remove(url)"},
    {"fs_make_dir", fs_make_dir, METH_O, "fs_make_dir(url): one level"},
    {"fs_remove_dir", fs_remove_dir, METH_O, "fs_remove_dir(url): an empty directory"},
    {"fs_rename", fs_rename, METH_VARARGS, "fs_rename(from, to, overwrite=False)"},
    {"fs_copy", fs_copy, METH_VARARGS, "fs_copy(from, to, overwrite=False)"},
    {"io_stats", io_stats, METH_NOARGS, "io_stats() -> dict: the process's remote I/O"},
    {"set_io_budget", set_io_budget, METH_VARARGS,
     "set_io_budget(bytes, requests): 0 keeps a value"},
    {NULL, NULL, 0, NULL},
};
