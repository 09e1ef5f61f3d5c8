/* The file-system layer for Python (io/fs.h): _engine.fs_* functions, and
 * the file handles of conveyor.io.gfile's FsReader and FsWriter (Python:
 * positions, argument checks). Every engine call runs without the GIL (it
 * may wait on the network); its results become Python objects after. Paths
 * are str, bytes or os.PathLike (PyUnicode_FSConverter). A handle belongs
 * to one thread at a time: a second thread using it while a call is in
 * flight gets RuntimeError rather than a data race. */
#include "python/binding.h"

#include "io/fs.h"
#include "io/fs_ops.h"
#include "io/http.h"

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
    CV_UNLOCKED(s = cv_fs_stat(PyBytes_AS_STRING(path), &info));
    Py_DECREF(path);
    if (s)
        return raise(module, s);
    return Py_BuildValue("(LLOs)", info.size == UINT64_MAX ? -1LL : (long long)info.size,
                         (long long)info.mtime_ns, info.is_dir ? Py_True : Py_False, info.version);
}

static PyObject *fs_list(PyObject *module, PyObject *args)
{
    PyObject *path = NULL, *list = NULL;
    int recursive = 0, glob = 0;
    CvNameList n;
    CvStatus s;
    if (!PyArg_ParseTuple(args, "O&|pp:fs_list", PyUnicode_FSConverter, &path, &recursive, &glob))
        return NULL;
    CV_UNLOCKED(s = glob ? cv_fs_glob_names(PyBytes_AS_STRING(path), &n)
                         : cv_fs_list_names(PyBytes_AS_STRING(path), recursive, &n));
    Py_DECREF(path);
    if (s)
        return raise(module, s);
    if ((list = PyList_New((Py_ssize_t)n.len)))
        for (size_t i = 0; i < n.len; i++) {
            PyObject *item = PyUnicode_DecodeFSDefault(n.v[i]);
            if (!item) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
        }
    cv_name_list_free(&n);
    return list;
}

/* The path operations of io/fs_ops.h by name: one URL (remove, make_dir,
 * remove_dir) or two (rename, copy: from, to, overwrite). */
static const struct PathOp {
    const char *name;
    CvStatus (*one)(const char *url);
    CvStatus (*two)(const char *from, const char *to, bool overwrite);
} path_ops[] = {
    {"remove", cv_fs_remove, NULL},         {"make_dir", cv_fs_make_dir, NULL},
    {"remove_dir", cv_fs_remove_dir, NULL}, {"rename", NULL, cv_fs_rename},
    {"copy", NULL, cv_fs_copy},
};

static PyObject *fs_path_op(PyObject *module, PyObject *args)
{
    const char *name;
    PyObject *a = NULL, *b = NULL;
    int overwrite = 0;
    CvStatus s = CV_STATUS_OK;
    const struct PathOp *op = NULL;
    if (!PyArg_ParseTuple(args, "sO&|O&p:fs_path_op", &name, PyUnicode_FSConverter, &a,
                          PyUnicode_FSConverter, &b, &overwrite))
        return NULL; /* the converter drops what it made */
    for (size_t i = 0; i < sizeof(path_ops) / sizeof(path_ops[0]); i++)
        op = strcmp(name, path_ops[i].name) ? op : &path_ops[i];
    if (!op || !op->two != !b)
        PyErr_Format(PyExc_ValueError, "fs_path_op: no operation %s of %d URLs", name, 1 + !!b);
    else if (op->one)
        CV_UNLOCKED(s = op->one(PyBytes_AS_STRING(a)));
    else
        CV_UNLOCKED(s = op->two(PyBytes_AS_STRING(a), PyBytes_AS_STRING(b), overwrite));
    Py_DECREF(a);
    Py_XDECREF(b);
    if (s)
        return raise(module, s);
    return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
}

/* ---- files: the handles of conveyor.io.gfile's FsReader and FsWriter ---- */

/* The handle owns a CvFsFile (io/fs_ops.h). */
static PyObject *fs_open(PyObject *module, PyObject *args)
{
    PyObject *path = NULL;
    const char *mode;
    CvFsFile *f = NULL;
    CvStatus s;
    if (!PyArg_ParseTuple(args, "O&s:fs_open", PyUnicode_FSConverter, &path, &mode))
        return NULL;
    CV_UNLOCKED(s = cv_fs_file_open(PyBytes_AS_STRING(path), *mode, &f));
    Py_DECREF(path);
    if (s)
        return raise(module, s);
    uint64_t size = f->reader ? f->reader->info.size : UINT64_MAX;
    return Py_BuildValue("(NL)", cv_handle_new(CV_HANDLE_FS_FILE, f),
                         size == UINT64_MAX ? -1LL : (long long)size);
}

/* The file of a handle, open (unless `closed_ok`) and not in use, or NULL
 * with an exception set. */
static CvFsFile *file_arg(PyObject *handle, bool closed_ok)
{
    CvFsFile *f = cv_handle_arg(handle, CV_HANDLE_FS_FILE);
    if (f && !closed_ok && !f->reader && !f->writer)
        PyErr_SetString(PyExc_ValueError, "I/O operation on a closed file");
    else if (f && f->busy)
        PyErr_SetString(PyExc_RuntimeError, "the file is in use by another thread");
    return PyErr_Occurred() ? NULL : f;
}

static PyObject *fs_read_at(PyObject *module, PyObject *args)
{
    PyObject *handle;
    unsigned long long offset;
    Py_ssize_t n;
    char *buf = NULL;
    size_t len = 0;
    CvStatus s;
    if (!PyArg_ParseTuple(args, "OKn:fs_read_at", &handle, &offset, &n))
        return NULL;
    CvFsFile *f = file_arg(handle, false);
    if (f && !f->reader)
        PyErr_SetString(PyExc_ValueError, "fs_read_at: a file open for writing");
    if (!f || !f->reader)
        return NULL;
    f->busy = true;
    CV_UNLOCKED(s = cv_read_file_range(f->reader, offset, n, &buf, &len));
    f->busy = false;
    PyObject *out = s ? raise(module, s) : PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
    free(buf);
    return out;
}

static PyObject *fs_write(PyObject *module, PyObject *args)
{
    PyObject *handle;
    Py_buffer view;
    CvStatus s = CV_STATUS_OK;
    if (!PyArg_ParseTuple(args, "Oy*:fs_write", &handle, &view))
        return NULL;
    CvFsFile *f = file_arg(handle, false);
    if (f && !f->writer)
        PyErr_SetString(PyExc_ValueError, "fs_write: a file open for reading");
    if (f && f->writer) {
        f->busy = true;
        CV_UNLOCKED(s = f->writer->methods->append(f->writer, view.buf, (size_t)view.len));
        f->busy = false;
    }
    PyBuffer_Release(&view);
    if (!f || !f->writer)
        return NULL;
    return s ? raise(module, s) : Py_NewRef(Py_None);
}

static PyObject *fs_close(PyObject *module, PyObject *args)
{
    PyObject *handle;
    int commit;
    CvStatus s;
    if (!PyArg_ParseTuple(args, "Op:fs_close", &handle, &commit))
        return NULL;
    CvFsFile *f = file_arg(handle, true);
    if (!f)
        return NULL;
    CV_UNLOCKED(s = cv_fs_file_finish(f, commit)); /* the fields are cleared before the GIL goes */
    return s ? raise(module, s) : Py_NewRef(Py_None);
}

/* The process's I/O budget (io/http.h; what it measured: memory.c's io_stats). */
static PyObject *set_io_budget(PyObject *module, PyObject *args)
{
    (void)module;
    long long bytes = 0, requests = 0;
    if (!PyArg_ParseTuple(args, "LL", &bytes, &requests))
        return NULL;
    cv_io_set_budget(bytes, requests);
    Py_RETURN_NONE;
}

PyMethodDef cv_fs_functions[] = {
    {"fs_stat", fs_stat, METH_O, "fs_stat(url) -> (size or -1, mtime_ns, is_dir, version)"},
    {"fs_list", fs_list, METH_VARARGS,
     "fs_list(url, recursive=False, glob=False) -> [names], sorted; glob: [urls] matching url"},
    {"fs_path_op", fs_path_op, METH_VARARGS,
     "fs_path_op(op, url[, to, overwrite]): remove, make_dir (one level), remove_dir (an empty "
     "directory), rename or copy"},
    {"fs_open", fs_open, METH_VARARGS, "fs_open(url, mode 'r', 'w' or 'a') -> (handle, size or -1)"},
    {"fs_read_at", fs_read_at, METH_VARARGS, "fs_read_at(handle, offset, n) -> bytes (n -1: to the end)"},
    {"fs_write", fs_write, METH_VARARGS, "fs_write(handle, bytes-like)"},
    {"fs_close", fs_close, METH_VARARGS,
     "fs_close(handle, commit): close a reader; commit (the file appears) or abort a writer; a "
     "closed handle stays as it is"},
    {"set_io_budget", set_io_budget, METH_VARARGS,
     "set_io_budget(bytes, requests): 0 keeps a value"},
    {NULL, NULL, 0, NULL},
};
